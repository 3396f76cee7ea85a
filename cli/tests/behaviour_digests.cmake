# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as
# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.
set(VERIFY_DIGEST 0fe8851194dfcb5d2be951cb797abd7e07da41b1118b3cdb84b129d9fe1aa710) # 1368837 bytes
set(CLAIMS_CLAIMS_DIGEST 320af6059a28725cdc23467c7b8c9b062f5ccef98dbba7f3de8d1a5ebe932da5) # 319004 bytes
