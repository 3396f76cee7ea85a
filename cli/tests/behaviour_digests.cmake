# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 0fe8851194dfcb5d2be951cb797abd7e07da41b1118b3cdb84b129d9fe1aa710) # 1368837 bytes
set(CLAIMS_CLAIMS_DIGEST 31e25bd7e806a845eb8e789b7a7436cbe7576cad745ddd5a805f16ed0223d673) # 324069 bytes
