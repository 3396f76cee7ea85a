#!/bin/bash
# ruleproof: the GPU checks on the device machine, from a build made elsewhere and carried
# there (the GPU machine lacks Eigen, CLI11, fmt, Catch2, RapidCheck). Run from the repository
# root: gpu/tests/run_on_device.sh CARRY, with CARRY holding bin/ (ruleproof,
# gpu_kernel_tests, gpu_check_planted, and gpu_bench where it was built) and lib/ (the shared
# libraries they need beyond the C and C++ runtimes; cuBLAS comes from the device's CUDA);
# make one with gpu/tests/make_carry.sh. Logs and reports go to $OUT. SANITIZE=1 also runs
# each Catch GPU test case alone under compute-sanitizer's memcheck and racecheck, or the tools
# in SANITIZE_TOOLS (RC_PARAMS defaults to max_success=1 there; SANITIZE_TIMEOUT seconds per
# case and tool, default 120; SANITIZE_JOBS processes at once, default one a CPU core;
# SANITIZE_TESTS a Catch test spec, default every test case); a test
# case tagged [per_rule] runs one process per rule and (K, V) of the fixed cases (its sections,
# `-c RULE -c K64_V128`), or, with SANITIZE_CHECKS (names of fixed checks, as
# "batch_forward batch_varlen"), one per rule, (K, V) and named check. The logs come back in
# one archive, sanitizer_logs.tar.gz.
# SANITIZE=only runs compute-sanitizer alone.
# KERNELS=tensor-cores runs gpu-check and the planted-bug check on the tensor-core kernels
# (gpu/kernel_rule.hpp, KernelPath); RULES="gla simple_gla" limits gpu-check and gpu_bench to
# those rules; FLA_JSON=FILE (tools/fla_bench.py's output, timed on this machine) puts
# flash-linear-attention's times beside gpu_bench's; NO_CATCH=1 leaves the Catch GPU tests out, NO_BENCH=1 gpu_bench.
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
if [ "${SANITIZE:-0}" != only ]; then
  rule_args=()
  for r in ${RULES:-}; do rule_args+=(--rule "$r"); done
  echo "== ruleproof gpu-check (${KERNELS:-cuda-cores})"
  time timeout "${CHECK_TIMEOUT:-300}" "$CARRY/bin/ruleproof" gpu-check --cases "${CASES:-6}" --threads "$(nproc)" \
    --kernels "${KERNELS:-cuda-cores}" "${rule_args[@]}" \
    --out reports/out/gpu_check.json 2>&1 | tee "$OUT/gpu_check.log"
  echo "gpu-check exit $?" | tee -a "$OUT/gpu_check.log"
  [ "$OUT" != reports/out ] && cp reports/out/gpu_check.json reports/out/gpu_check.md "$OUT/"
  echo "== planted bug (must be caught)"
  planted_args=()
  [ "${KERNELS:-cuda-cores}" = tensor-cores ] && planted_args=(--kernels tensor-cores)
  timeout 120 "$CARRY/bin/gpu_check_planted" "${planted_args[@]}" > "$OUT/planted.log" 2>&1
  echo "gpu_check_planted exit $?" | tee -a "$OUT/planted.log"
  tail -3 "$OUT/planted.log"
  if [ "${NO_CATCH:-0}" = 0 ]; then
    echo "== Catch GPU tests (RC_PARAMS=${RC_PARAMS:-default})"
    time timeout "${TEST_TIMEOUT:-240}" "$CARRY/bin/gpu_kernel_tests" 2>&1 | tee "$OUT/kernel_tests.log" | tail -20
    echo "gpu_kernel_tests exit $?" | tee -a "$OUT/kernel_tests.log"
  fi
  if [ -x "$CARRY/bin/gpu_bench" ] && [ "${NO_BENCH:-0}" = 0 ]; then
    echo "== gpu_bench"
    cublas=$(find /usr/local -name 'libcublas.so.*' 2>/dev/null | head -1)
    LD_LIBRARY_PATH=$LD_LIBRARY_PATH${cublas:+:$(dirname "$cublas")} timeout "${BENCH_TIMEOUT:-300}" \
      "$CARRY/bin/gpu_bench" "${rule_args[@]}" ${FLA_JSON:+--fla "$FLA_JSON"} --out "$OUT/gpu_bench.json" 2>&1 |
      tee "$OUT/gpu_bench.log"
    echo "gpu_bench exit $?" | tee -a "$OUT/gpu_bench.log"
  fi
fi
if [ "${SANITIZE:-0}" != 0 ]; then
  # Every (test case, tool) pair runs at once, each its own process on the one GPU, as
  # racecheck spends minutes of host time per case. One log per pair would pass the device's
  # limit on files brought back: they are kept in one archive, and one summary line each is
  # printed.
  logs=$(mktemp -d)
  tools=${SANITIZE_TOOLS:-memcheck racecheck}
  echo "== compute-sanitizer ($tools), every test case alone, ${SANITIZE_TIMEOUT:-120} s each"
  # A job is a test case, or a test case and one of its sections and subsections:
  # "NAME", "NAME|RULE|K64_V128" (the (K, V) of gpu/check.hpp, fixed_key_value_sizes) or
  # "NAME|RULE|K64_V128|CHECK".
  mapfile -t test_cases < <("$CARRY/bin/gpu_kernel_tests" --list-test-names-only ${SANITIZE_TESTS:+"$SANITIZE_TESTS"} |
    grep -v '^\s*$')
  mapfile -t per_rule < <("$CARRY/bin/gpu_kernel_tests" --list-test-names-only "[per_rule]" |
    grep -v '^\s*$')
  read -r -a rules < <("$CARRY/bin/ruleproof" gpu-check --help |
    sed -n 's/.*rule (repeatable): //p' | tr -d ',')
  jobs=()
  for test_case in "${test_cases[@]}"; do
    if printf '%s\n' "${per_rule[@]}" | grep -qxF "$test_case"; then
      for rule in "${rules[@]}"; do
        for kv in K64_V64 K64_V128 K128_V64 K128_V128; do
          if [ -n "${SANITIZE_CHECKS:-}" ]; then
            for check in $SANITIZE_CHECKS; do jobs+=("$test_case|$rule|$kv|$check"); done
          else
            jobs+=("$test_case|$rule|$kv")
          fi
        done
      done
    else
      jobs+=("$test_case")
    fi
  done
  for job in "${jobs[@]}"; do
    IFS='|' read -r test_case rule kv check <<< "$job"
    section=()
    [ -n "$rule" ] && section=(-c "$rule" -c "$kv")
    [ -n "$check" ] && section+=(-c "$check")
    for tool in $tools; do
      while [ "$(jobs -rp | wc -l)" -ge "${SANITIZE_JOBS:-$(nproc)}" ]; do wait -n; done
      (RC_PARAMS=${RC_PARAMS:-max_success=1} timeout "${SANITIZE_TIMEOUT:-120}" compute-sanitizer \
        --tool "$tool" --error-exitcode 9 "$CARRY/bin/gpu_kernel_tests" "$test_case" \
        "${section[@]}" > "$logs/${tool}_${job//|/_}.log" 2>&1
       echo $? > "$logs/${tool}_${job//|/_}.exit") &
    done
  done
  wait
  for job in "${jobs[@]}"; do
    for tool in $tools; do
      log="$logs/${tool}_${job//|/_}.log" status=$(cat "$logs/${tool}_${job//|/_}.exit" 2>/dev/null || echo "none (not finished)")
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
      cases=$(grep -E "^(All tests passed|test cases:)" "$log" | tail -1)
      echo "$tool ${job//|/ -c }: exit $status${summary:+, $summary}${cases:+, $cases}$([ "$status" = 124 ] && echo ', stopped by the timeout')"
    done
  done | tee "$OUT/sanitizer_summary.txt"
  tar -czf "$OUT/sanitizer_logs.tar.gz" -C "$logs" .
fi
