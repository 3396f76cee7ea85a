# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 1769c9a3a34894cf096a37d6795cc82a1e10e67239437d3ef69e51f6a7a22ffd) # 1272010 bytes
set(CLAIMS_CLAIMS_DIGEST c6448d85f1e159250c43d76f5cbd06ef487f46bbda716a42a6dfd2de8e23b42e) # 311992 bytes
