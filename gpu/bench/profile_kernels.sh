#!/bin/bash
# ruleproof: where each kernel rule's time goes, kernel by kernel, read by Nsight Compute on a
# Hopper GPU. For each rule, `gpu_bench --warmup 0 --repeat 1` (the forward twice: once for its
# count of non-finite outputs, once timed; then one forward + backward, at gpu_bench's default
# shape) runs under ncu, every launch of the project's kernels
# profiled: its duration, its compute (SM) and memory throughput as a share of the GPU's peak,
# and what it achieved against the ceilings gpu_bench measures in the same run: DRAM bytes a
# second (read and written) against its copy bandwidth, and TFLOP/s against cuBLAS's bf16 matrix
# rate. TFLOP/s counts the tensor pipe's operations with 16-bit sources and fp32 sums
# (sm__ops_path_tensor_src_{bf16,fp16}_dst_fp32), which warpgroup MMA (wgmma) and mma.sync both add
# to, at the FLOPs an operation stands for as the run itself gives it: a launch of mma.sync alone,
# whose m16n8k16 instruction is 4096 FLOP, gives that ratio, a launch of wgmma alone an eighth of
# it, so the largest ratio is taken where two launches or more give it and every launch's lies
# between it and its eighth (on an H200, 1.000; the median taken before gave 0.125 to a run whose
# launches were mostly wgmma). The mma.sync
# instruction count alone would be wrong for wgmma: ncu counts each of a warpgroup's four warps'
# wgmma instructions among them (sm__inst_executed_pipe_tensor_op_hmma), at 32768 FLOP each for
# m64n64k16. Where the GPU's ncu has no such operation counter, mma.sync instructions alone are
# counted and the table says so. The clocks are left alone (--clock-control none). Durations under
# ncu are those of each kernel alone, without the host API's synchronisation between launches.
#
# usage: gpu/bench/profile_kernels.sh CARRY [RULE...]   (CARRY as gpu/tests/run_on_device.sh's)
# KERNELS=tensor-cores (or cuda-cores) times one path alone (gpu_bench --kernels); the environment
# passes on to gpu_bench (RULEPROOF_DELTA_FORWARD=two profiles gated_delta_rule's two-kernel forward).
# FROM_RAW=DIR renders the tables again from the rows of an earlier run (its profile_csv.tar.gz
# unpacked into DIR), without running anything: the ceilings only where DIR holds gpu_bench's JSON.
# writes $OUT/profile.md (one table per rule: each kernel's launches, summed time, share of the
# rule's time, mean throughputs, achieved bytes and FLOPs a second) and $OUT/profile_csv.tar.gz (ncu's rows and messages, a file
# per rule).
set -u -o pipefail
CARRY=${1:?usage: profile_kernels.sh CARRY [RULE...]}
shift
rules=("$@")
[ ${#rules[@]} -gt 0 ] || rules=(simple_gla gla gated_delta_rule kda dplr_fla gated_oja)
OUT=${OUT:-reports/out}
mkdir -p "$OUT"
raw=${FROM_RAW:-$(mktemp -d)}
if [ -z "${FROM_RAW:-}" ]; then
cublas=$(find /usr/local -name 'libcublas.so.*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/$CARRY/lib${cublas:+:$(dirname "$cublas")}
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,launch__registers_per_thread,dram__bytes.sum,sm__inst_executed_pipe_tensor_op_hmma.sum
# the tensor pipe's operations, where this ncu knows them (GH100: H100 and H200)
known=$(ncu --query-metrics --chip gh100 2>/dev/null)
for m in sm__ops_path_tensor_src_bf16_dst_fp32 sm__ops_path_tensor_src_fp16_dst_fp32; do
  grep -q "^$m " <<<"$known" && metrics+=,$m.sum
done
echo "metrics: $metrics"
for rule in "${rules[@]}"; do
  echo "== $rule"
  ncu --clock-control none --csv --print-units base --kernel-name-base function \
    --kernel-name 'regex:chunk|transpose' --metrics "$metrics" \
    "$CARRY/bin/gpu_bench" --warmup 0 --repeat 1 --rule "$rule" ${KERNELS:+--kernels "$KERNELS"} --out "$raw/profile_$rule.json" \
    >"$raw/profile_$rule.csv" 2>"$raw/profile_$rule.err"
  echo "ncu exit $?"
done
fi
python3 - "$raw" "${rules[@]}" <<'EOF' | tee "$OUT/profile.md"
import csv, json, re, sys
from collections import defaultdict
raw, rules = sys.argv[1], sys.argv[2:]
def short(name):  # "void <unnamed>::chunk_x_kernel<__nv_bfloat16>(const T1 *, ...)" -> "chunk_x_kernel<bf16>"
    name = re.sub(r"\(.*$", "", re.sub(r"^void ", "", name))
    name = re.sub(r"^.*::", "", name)
    return name.replace("__nv_bfloat16", "bf16").replace("__half", "fp16")
for rule in rules:
    rows = [r for r in csv.reader(open(f"{raw}/profile_{rule}.csv")) if len(r) > 10]
    if not rows or "Metric Name" not in rows[0]:
        print(f"\n{rule}: no profile (see profile_{rule}.err)\n")
        continue
    head = rows[0]
    col = {name: head.index(name) for name in ("ID", "Kernel Name", "Grid Size", "Block Size",
                                               "Metric Name", "Metric Value")}
    launches = defaultdict(dict)  # (kernel, launch id) -> metric -> value
    shape = {}
    for r in rows[1:]:
        if r[col["ID"]] == "ID" or not r[col["ID"]].isdigit():
            continue
        name = short(r[col["Kernel Name"]])
        launches[(name, r[col["ID"]])][r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", ""))
        shape[name] = (r[col["Grid Size"]], r[col["Block Size"]])
    per = defaultdict(list)
    for (name, _), m in launches.items():
        per[name].append(m)
    # FLOPs a tensor operation: from the launches that ran mma.sync (4096 FLOP an instruction)
    ops = lambda m: (m.get("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 0)
                     + m.get("sm__ops_path_tensor_src_fp16_dst_fp32.sum", 0))
    counted = [m for ms in per.values() for m in ms if ops(m) > 0 and m.get("sm__inst_executed_pipe_tensor_op_hmma.sum", 0) > 0]
    # an mma.sync launch gives the FLOPs of an operation (4096 an instruction); a wgmma launch an
    # eighth of it (each of a warpgroup's four warps counted an instruction of 32768 FLOP), and a
    # launch of both, between: the largest ratio is mma.sync's, where two launches or more give it
    # and every ratio lies in [r / 8, r]
    per_op = sorted(4096 * m["sm__inst_executed_pipe_tensor_op_hmma.sum"] / ops(m) for m in counted)
    largest = per_op[-1] if per_op else None
    agree = [x for x in per_op if abs(x - largest) <= 0.01 * largest] if per_op else []
    eighth = [x for x in per_op if abs(x - largest / 8) <= 0.01 * largest / 8] if per_op else []
    by_ops = len(agree) >= 2 and all(x >= 0.99 * largest / 8 for x in per_op)
    flop_per_op = largest
    flops = lambda m: flop_per_op * ops(m) if by_ops else 4096 * m.get("sm__inst_executed_pipe_tensor_op_hmma.sum", 0)
    total = sum(m["gpu__time_duration.sum"] for ms in per.values() for m in ms)
    try:  # the ceilings gpu_bench measured in this run
        bench = json.load(open(f"{raw}/profile_{rule}.json"))
        copy_bw, matrix_rate = bench["copy_bandwidth_bytes_per_s"], bench["matrix_rate_flops_per_s"]
    except (OSError, KeyError, ValueError):
        copy_bw = matrix_rate = None
    print(f"\n### {rule}: {total / 1e6:.3f} ms in {sum(map(len, per.values()))} launches "
          "(the forward twice, then one forward + backward)\n")
    if copy_bw:
        print(f"Ceilings measured in the same run: copy bandwidth {copy_bw / 1e12:.2f} TB/s, "
              f"bf16 matrix rate {matrix_rate / 1e12:.0f} TFLOP/s.\n")
    if by_ops:
        print(f"TFLOP/s: the tensor pipe's 16-bit operations at {flop_per_op:.3f} FLOP each, the "
              f"largest ratio of mma.sync's FLOPs to operations over the {len(per_op)} launches "
              f"with tensor instructions: {len(agree)} agree with it to 1%, {len(eighth)} give an "
              f"eighth of it (wgmma alone), the rest lie between (both).\n")
    else:
        print("TFLOP/s: mma.sync instructions alone (4096 FLOP each), which miscount warpgroup MMA.\n")
    print("| kernel | launches | ms | share | us a launch | DRAM TB/s | TFLOP/s | SM % of peak "
          "| memory % of peak | registers | grid | block |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, ms in sorted(per.items(), key=lambda kv: -sum(m["gpu__time_duration.sum"] for m in kv[1])):
        t = sum(m["gpu__time_duration.sum"] for m in ms)
        mean = lambda key: sum(m.get(key, 0) for m in ms) / len(ms)
        bytes_per_s = sum(m.get("dram__bytes.sum", 0) for m in ms) / (t * 1e-9)
        flops_per_s = sum(flops(m) for m in ms) / (t * 1e-9)
        share = lambda x, ceiling: f" ({100 * x / ceiling:.0f}%)" if ceiling else ""
        print(f"| {name} | {len(ms)} | {t / 1e6:.3f} | {100 * t / total:.1f}% | {t / 1e3 / len(ms):.1f} "
              f"| {bytes_per_s / 1e12:.2f}{share(bytes_per_s, copy_bw)} "
              f"| {flops_per_s / 1e12:.1f}{share(flops_per_s, matrix_rate)} "
              f"| {mean('sm__throughput.avg.pct_of_peak_sustained_elapsed'):.1f} "
              f"| {mean('gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed'):.1f} "
              f"| {mean('launch__registers_per_thread'):.0f} | {shape[name][0]} | {shape[name][1]} |")
EOF
[ -n "${FROM_RAW:-}" ] || tar -czf "$OUT/profile_csv.tar.gz" -C "$raw" .
