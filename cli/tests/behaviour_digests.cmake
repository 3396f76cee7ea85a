# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 0fe8851194dfcb5d2be951cb797abd7e07da41b1118b3cdb84b129d9fe1aa710) # 1368837 bytes
set(CLAIMS_CLAIMS_DIGEST 01128e884b683493952ee9e72f2ea9e0b4b6afbae27f8f227935e03d72f97b9a) # 329030 bytes
