#!/bin/bash
# ruleproof: copies the GPU programs of a CUDA build (default build-gpu) and the shared
# libraries they need beyond glibc and the C++ runtime into CARRY (default build-gpu-carry,
# ignored by git), stripped, for gpu/tests/run_on_device.sh on the device machine. gpu_bench
# comes too where it was built; cuBLAS, which only it needs, is left to the device's CUDA
# (too large to carry: put its folder on LD_LIBRARY_PATH there).
set -eu
BUILD=${1:-build-gpu}
CARRY=${2:-build-gpu-carry}
# The kernels on (bootstrap.sh leaves them out of a new folder on a machine with no GPU);
# gpu_check_planted and gpu_bench are built only when asked for.
cmake -S "$(dirname "$0")/../.." -B "$BUILD" -DRULEPROOF_CUDA=ON >/dev/null
cmake --build "$BUILD" --target ruleproof gpu_kernel_tests gpu_check_planted gpu_wgmma_tests
cmake --build "$BUILD" --target gpu_bench 2>/dev/null || true # CUDA builds only
rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib"
# the tree the programs were built from: their device code's source lines name its files
(cd "$(dirname "$0")/../.." && pwd) >"$CARRY/source_root"
cp "$BUILD/cli/ruleproof" "$BUILD/gpu/tests/gpu_kernel_tests" "$BUILD/gpu/tests/gpu_check_planted" \
  "$BUILD/gpu/tests/gpu_wgmma_tests" "$CARRY/bin/"
[ -x "$BUILD/gpu/gpu_bench" ] && cp "$BUILD/gpu/gpu_bench" "$CARRY/bin/"
strip "$CARRY"/bin/*
for b in "$CARRY"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcublas|libcublasLt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$CARRY/lib/"; done
du -sh "$CARRY"/bin "$CARRY"/lib
ls "$CARRY/lib"
