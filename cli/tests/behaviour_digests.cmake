# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST c2e4f8710bb97f446b9722d7af243a092cd580de6f9c2d63a8d990c2fc2ce0b7) # 2193726 bytes
set(CLAIMS_CLAIMS_DIGEST fb0e8de103e47ea73ca04e81f90050e22e7f19963abafca3de1036e63ef4801f) # 461967 bytes
