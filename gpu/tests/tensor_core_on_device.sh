#!/bin/bash
# ruleproof: the tensor-core path's round on the device machine: gpu-check and the planted-bug
# check on the tensor-core kernels (gpu/tests/run_on_device.sh with KERNELS=tensor-cores), the
# Catch tests tagged [tensor_cores], gpu_bench, an Nsight Compute summary of each tensor-core
# kernel, compute-sanitizer's memcheck and racecheck on the tensor-core fixed cases, and
# flash-linear-attention's times (tools/fla_bench.py) with gpu_bench again beside them on the
# same GPU. Run from the repository root:
#
#   OUT=DIR STEPS="check bench ncu" bash gpu/tests/tensor_core_on_device.sh CARRY [FLA]
#
# STEPS, in the order given: check (gpu-check, planted bug, Catch [tensor_cores], gpu_wgmma_tests), wy
# (gated_delta_rule's two WY kernels timed in turn), output (the sequential kernel with output
# warps, the default, timed beside the one without; RULEPROOF_STATE_OUTPUT=own STEPS="check
# sanitize" judges the one without), dh (gated_delta_rule's backward with dh stored and with dh's
# uses, RULEPROOF_DELTA_DH=uses, timed in turn), bench
# (gpu_bench), kernels (each kernel's time, gpu/bench/profile_kernels.sh; with an fla step after it,
# flash-linear-attention's kernels' times too), ncu, source (each kernel's stall samples by source line, gpu/bench/stall_lines.py;
# SOURCE_ROOT overrides the tree the carry was built from), sanitize, fla (FLA: a folder holding flash-linear-attention's package `fla`,
# none of whose code is in this repository; its kernels compile and autotune for minutes, then
# gpu_bench runs again with --fla). CARRY as run_on_device.sh's (gpu/tests/make_carry.sh).
# RULES (default every rule: "gla simple_gla gated_delta_rule kda dplr_fla gated_oja"), CASES (default 6), SANITIZE_SECTIONS (Catch sections after
# the rule's, e.g. "-c bf16 -c K64_V64"), NCU_LAUNCHES (default 13: the forward twice, then the
# forward and the backward). After every step everything so far is
# packed into $OUT/tensor_core.tar.gz, so a call cut short still brings back what it did.
set -u -o pipefail
CARRY=${1:?usage: tensor_core_on_device.sh CARRY [FLA]}
FLA=${2:-}
OUT=${OUT:-reports/out}
rules=${RULES:-gla simple_gla gated_delta_rule kda dplr_fla gated_oja}
work=$(mktemp -d)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cublas=$(find /usr/local -name 'libcublas.so.*' 2>/dev/null | head -1)
bench_path=$LD_LIBRARY_PATH${cublas:+:$(dirname "$cublas")}
rule_args=()
for r in $rules; do rule_args+=(--rule "$r"); done
pack() { tar czf "$OUT/tensor_core.tar.gz" -C "$work" --exclude triton .; }
# in_turn VARIABLE "FORM..." NAME GPU_BENCH_ARGS...: gpu_bench on the tensor-core kernels with
# VARIABLE set to each form in turn, twice, into $work/NAME_bench_FORM_RUN.json and .log
in_turn() {
  local variable=$1 forms=$2 name=$3
  shift 3
  for i in 1 2; do
    for form in $forms; do
      env "$variable=$form" LD_LIBRARY_PATH="$bench_path" timeout 120 "$CARRY/bin/gpu_bench" \
        "$@" --kernels tensor-cores --out "$work/${name}_bench_${form}_$i.json" \
        >"$work/${name}_bench_${form}_$i.log" 2>&1
      echo "gpu_bench ($name $form, run $i) exit $?"
      grep -E "ms" "$work/${name}_bench_${form}_$i.log"
    done
  done
}

for step in ${STEPS:-check bench ncu}; do
  echo "== $step ($(date +%T))"
  case $step in
  check)
    OUT=$work CASES=${CASES:-6} KERNELS=tensor-cores RULES="$rules" NO_CATCH=1 NO_BENCH=1 \
      bash "$(dirname "$0")/run_on_device.sh" "$CARRY" >"$work/run.log" 2>&1
    grep -E "exit|every GPU|caught|MISSED" "$work/run.log" | tail -6
    timeout "${TEST_TIMEOUT:-150}" "$CARRY/bin/gpu_kernel_tests" "[tensor_cores]" \
      >"$work/tc_tests.log" 2>&1
    echo "gpu_kernel_tests [tensor_cores] exit $?" | tee -a "$work/tc_tests.log"
    tail -3 "$work/tc_tests.log"
    timeout 60 "$CARRY/bin/gpu_wgmma_tests" >"$work/wgmma_tests.log" 2>&1
    echo "gpu_wgmma_tests exit $?" | tee -a "$work/wgmma_tests.log"
    grep -E "^wgmma|passed|failed" "$work/wgmma_tests.log"
    ;;
  bench)
    LD_LIBRARY_PATH=$bench_path timeout 120 "$CARRY/bin/gpu_bench" "${rule_args[@]}" \
      --out "$work/gpu_bench.json" >"$work/gpu_bench.log" 2>&1
    echo "gpu_bench exit $?" | tee -a "$work/gpu_bench.log"
    grep -E "ms" "$work/gpu_bench.log"
    ;;
  kernels)
    # each tensor-core kernel's time by ncu (gpu/bench/profile_kernels.sh); flash-linear-attention's
    # kernels' times, by PyTorch's profiler, come with a later fla step (fla_bench.py --kernels)
    OUT=$work KERNELS=tensor-cores bash gpu/bench/profile_kernels.sh "$CARRY" $rules \
      >"$work/kernels.log" 2>&1
    echo "profile_kernels exit $?"
    cat "$work/profile.md"
    fla_args=--kernels
    ;;
  ncu)
    for r in $rules; do
      LD_LIBRARY_PATH=$bench_path timeout 120 ncu --clock-control none \
        --kernel-name regex:'_tc_kernel|chunk_dg_' --launch-count ${NCU_LAUNCHES:-13} \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
        --metrics gpu__time_duration.sum,dram__bytes.sum,dram__bytes.sum.per_second,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
        "$CARRY/bin/gpu_bench" --rule "$r" --kernels tensor-cores --warmup 0 --repeat 1 \
        --out "$work/ncu_bench_$r.json" >"$work/ncu_$r.txt" 2>&1
      echo "ncu $r exit $?"
      grep -E "_tc_kernel<|chunk_dg_|Duration|Compute \(SM\) Throughput|DRAM Throughput|Achieved Occupancy|dram__bytes|hmma" \
        "$work/ncu_$r.txt"
    done
    ;;
  source)
    # where each kernel's time goes by source line (gpu/bench/stall_lines.py); the source text is
    # read from the paths the build recorded: the tree the carry was built from (SOURCE_ROOT, by
    # default the one make_carry.sh wrote down) is linked to this tree when it is not here
    root=${SOURCE_ROOT:-$(cat "$CARRY/source_root" 2>/dev/null)}
    if [ -n "$root" ] && [ ! -e "$root" ]; then
      mkdir -p "$(dirname "$root")" && ln -s "$PWD" "$root"
    fi
    for r in $rules; do
      LD_LIBRARY_PATH=$bench_path timeout 300 ncu --clock-control none --set full \
        --import-source yes --kernel-name regex:'_tc_kernel' --launch-count ${NCU_LAUNCHES:-13} \
        -o "$work/source_$r" "$CARRY/bin/gpu_bench" --rule "$r" --kernels tensor-cores \
        --warmup 0 --repeat 1 --out "$work/source_bench_$r.json" >"$work/source_$r.log" 2>&1
      echo "ncu --set full $r exit $?"
      ncu --import "$work/source_$r.ncu-rep" --page source --print-source cuda,sass --csv \
        >"$work/source_$r.csv" 2>>"$work/source_$r.log"
      python3 gpu/bench/stall_lines.py "$work/source_$r.csv" --out "$work/stall_lines_$r.md"
      echo "stall_lines $r exit $?"
      rm -f "$work/source_$r.ncu-rep" "$work/source_$r.csv"
    done
    ;;
  sanitize)
    # one process a tool and rule, all at once (racecheck takes minutes a process)
    for tool in memcheck racecheck; do
      for r in $rules; do
        (RC_PARAMS=max_success=1 timeout "${SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool "$tool" \
          --error-exitcode 9 "$CARRY/bin/gpu_kernel_tests" \
          tensor_core_every_k_v_ragged_t_and_empty_sequence -c "$r" ${SANITIZE_SECTIONS:-} \
          >"$work/sanitizer_${tool}_$r.log" 2>&1
         echo $? >"$work/sanitizer_${tool}_$r.exit") &
      done
    done
    wait
    for tool in memcheck racecheck; do
      for r in $rules; do
        echo "$tool $r: exit $(cat "$work/sanitizer_${tool}_$r.exit"), $(grep -E \
          "ERROR SUMMARY|RACECHECK SUMMARY" "$work/sanitizer_${tool}_$r.log" | tail -1), $(grep -E \
          "^(All tests passed|test cases:)" "$work/sanitizer_${tool}_$r.log" | tail -1)"
      done
    done | tee "$work/sanitizer.txt"
    ;;
  fla)
    PYTHONPATH=$(realpath "$FLA") TRITON_CACHE_DIR=$work/triton timeout "${FLA_TIMEOUT:-420}" \
      python3 tools/fla_bench.py "${rule_args[@]}" --no-guard ${fla_args:-} --out "$work/fla_bench.json" \
      >"$work/fla_bench.log" 2>&1
    echo "fla_bench exit $?" | tee -a "$work/fla_bench.log"
    cat "$work/fla_bench.log"
    if [ -s "$work/fla_bench.json" ]; then
      LD_LIBRARY_PATH=$bench_path timeout 120 "$CARRY/bin/gpu_bench" "${rule_args[@]}" \
        --fla "$work/fla_bench.json" --out "$work/gpu_bench_fla.json" >"$work/gpu_bench_fla.log" 2>&1
      echo "gpu_bench --fla exit $?" | tee -a "$work/gpu_bench_fla.log"
      grep -E "ms" "$work/gpu_bench_fla.log"
    fi
    ;;
  output)
    # the sequential kernel with output warps (the default: eight more warps take the output off
    # the state's chain) timed beside the kernel without them (RULEPROOF_STATE_OUTPUT=own), twice;
    # to judge and sanitize the one without, run the check and sanitize steps with
    # RULEPROOF_STATE_OUTPUT=own exported
    in_turn RULEPROOF_STATE_OUTPUT "own warps" output "${rule_args[@]}"
    ;;
  wy)
    # gated_delta_rule's WY kernels timed in turn, twice: the lean one (the default, three blocks
    # an SM) and the one of two blocks an SM (RULEPROOF_WY_KERNEL=two)
    in_turn RULEPROOF_WY_KERNEL "lean two" wy --rule gated_delta_rule
    ;;
  dh)
    # gated_delta_rule's backward with dh stored (the default) and with dh's uses made by the
    # sequential kernel backwards, dh never stored (RULEPROOF_DELTA_DH=uses), timed in turn,
    # twice; to judge and sanitize the second, run the check and sanitize steps with
    # RULEPROOF_DELTA_DH=uses exported
    in_turn RULEPROOF_DELTA_DH "stored uses" dh --rule gated_delta_rule
    ;;
  *) echo "unknown step $step" ;;
  esac
  pack
done
