# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 854ae4b58eccc154530c038ddd7a485a6996a5f6ea24a4e95960413a1d688185) # 1964498 bytes
set(CLAIMS_CLAIMS_DIGEST fb0e8de103e47ea73ca04e81f90050e22e7f19963abafca3de1036e63ef4801f) # 461967 bytes
