#!/bin/bash
# ruleproof: the GPU checks on the device machine, from a build made elsewhere and carried
# there (the GPU machine lacks Eigen, CLI11, fmt, Catch2, RapidCheck). Run from the repository
# root: gpu/tests/run_on_device.sh CARRY, with CARRY holding bin/ (ruleproof,
# gpu_kernel_tests, gpu_check_planted, and gpu_bench where it was built) and lib/ (the shared
# libraries they need beyond the C and C++ runtimes; cuBLAS comes from the device's CUDA);
# make one with gpu/tests/make_carry.sh. Logs and reports go to $OUT. SANITIZE=1 also runs
# each Catch GPU test case alone under compute-sanitizer's memcheck and racecheck (RC_PARAMS
# defaults to max_success=1 there; SANITIZE_TIMEOUT seconds per case and tool, default 120).
set -u -o pipefail
CARRY=${1:?usage: run_on_device.sh CARRY}
OUT=${OUT:-reports/out}
mkdir -p "$OUT" reports/out
export LD_LIBRARY_PATH=$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  for b in ruleproof gpu_kernel_tests gpu_check_planted; do
    ldd "$CARRY/bin/$b" | grep -i "not found" && echo "$b: a library is missing"
  done
} 2>&1 | tee "$OUT/machine.txt"
echo "== ruleproof gpu-check"
time timeout "${CHECK_TIMEOUT:-300}" "$CARRY/bin/ruleproof" gpu-check --cases "${CASES:-6}" --threads "$(nproc)" \
  --out reports/out/gpu_check.json 2>&1 | tee "$OUT/gpu_check.log"
echo "gpu-check exit $?" | tee -a "$OUT/gpu_check.log"
[ "$OUT" != reports/out ] && cp reports/out/gpu_check.json reports/out/gpu_check.md "$OUT/"
echo "== planted bug (must be caught)"
timeout 120 "$CARRY/bin/gpu_check_planted" > "$OUT/planted.log" 2>&1
echo "gpu_check_planted exit $?" | tee -a "$OUT/planted.log"
tail -3 "$OUT/planted.log"
echo "== Catch GPU tests (RC_PARAMS=${RC_PARAMS:-default})"
time timeout "${TEST_TIMEOUT:-240}" "$CARRY/bin/gpu_kernel_tests" 2>&1 | tee "$OUT/kernel_tests.log" | tail -20
echo "gpu_kernel_tests exit $?" | tee -a "$OUT/kernel_tests.log"
if [ -x "$CARRY/bin/gpu_bench" ]; then
  echo "== gpu_bench"
  cublas=$(find /usr/local -name 'libcublas.so.*' 2>/dev/null | head -1)
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH${cublas:+:$(dirname "$cublas")} timeout "${BENCH_TIMEOUT:-300}" \
    "$CARRY/bin/gpu_bench" --out "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.log"
  echo "gpu_bench exit $?" | tee -a "$OUT/gpu_bench.log"
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  echo "== compute-sanitizer, one test case at a time"
  "$CARRY/bin/gpu_kernel_tests" --list-test-names-only | grep -v '^\s*$' | while read -r test_case; do
    for tool in memcheck racecheck; do
      log="$OUT/sanitizer_${tool}_${test_case}.log"
      RC_PARAMS=${RC_PARAMS:-max_success=1} timeout "${SANITIZE_TIMEOUT:-120}" compute-sanitizer \
        --tool "$tool" --error-exitcode 9 "$CARRY/bin/gpu_kernel_tests" "$test_case" > "$log" 2>&1
      status=$?
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
      echo "$tool $test_case: exit $status${summary:+, $summary}$([ $status = 124 ] && echo ', stopped by the timeout')"
    done
  done | tee "$OUT/sanitizer_summary.txt"
fi
