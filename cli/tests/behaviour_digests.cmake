# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 2e967c847bf6df749f21457890f1ed3cff8eb1087c66bbdb276d885da9ac7b48) # 1830262 bytes
set(CLAIMS_CLAIMS_DIGEST fb0e8de103e47ea73ca04e81f90050e22e7f19963abafca3de1036e63ef4801f) # 461967 bytes
