# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST c2e4f8710bb97f446b9722d7af243a092cd580de6f9c2d63a8d990c2fc2ce0b7) # 2193726 bytes
set(CLAIMS_CLAIMS_DIGEST 316ea1cf8523f1ca0085397fe8383c825e8ff364c70d5fe2dbd22a2448b0bbc9) # 457141 bytes
