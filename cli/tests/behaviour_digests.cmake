# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 0fe8851194dfcb5d2be951cb797abd7e07da41b1118b3cdb84b129d9fe1aa710) # 1368837 bytes
set(CLAIMS_CLAIMS_DIGEST c6448d85f1e159250c43d76f5cbd06ef487f46bbda716a42a6dfd2de8e23b42e) # 311992 bytes
