"""gpu/bench/profile_kernels.sh's tables, rendered again from kept rows (FROM_RAW) on the CPU: each
kernel's time, DRAM bytes and TFLOP/s against the run's ceilings, the TFLOP/s from the tensor
pipe's operation counter at the FLOPs an operation stands for as the mma.sync launches give it,
which counts a warpgroup-MMA kernel right where its mma.sync instruction count does not."""
import csv
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "gpu", "bench", "profile_kernels.sh")
HEAD = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
        "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
        "Metric Value"]


def launch(writer, launch_id, name, ns, hmma, ops):
    for metric, value in [("gpu__time_duration.sum", ns), ("dram__bytes.sum", 2e8),
                          ("sm__inst_executed_pipe_tensor_op_hmma.sum", hmma),
                          ("sm__ops_path_tensor_src_bf16_dst_fp32.sum", ops),
                          ("sm__ops_path_tensor_src_fp16_dst_fp32.sum", 0),
                          ("launch__registers_per_thread", 128),
                          ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 30),
                          ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40)]:
        writer.writerow([launch_id, 1, "gpu_bench", "host", name, 1, 7, "(256, 1, 1)",
                         "(4, 16, 2)", 0, "9.0", "s", metric, "", value])


def render(tmp_path, launches):
    raw = tmp_path / "raw"
    raw.mkdir()
    with open(raw / "profile_gated_delta_rule.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEAD)
        for i, (name, ns, hmma, ops) in enumerate(launches):
            launch(w, i, "void chunk_%s<__nv_bfloat16>(int)" % name, ns, hmma, ops)
    (raw / "profile_gated_delta_rule.json").write_text(json.dumps(
        {"copy_bandwidth_bytes_per_s": 4e12, "matrix_rate_flops_per_s": 700e12}))
    out = tmp_path / "out"
    env = dict(os.environ, FROM_RAW=str(raw), OUT=str(out))
    subprocess.run(["bash", SCRIPT, "unused", "gated_delta_rule"], env=env, check=True,
                   capture_output=True, text=True)
    rows = {}
    text = (out / "profile.md").read_text()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| chunk_"):
            rows[cells[0]] = cells
    return text, rows


def test_wgmma_is_counted_by_the_operation_counter(tmp_path):
    # two mma.sync launches: 4096 FLOP an instruction, one FLOP an operation; one wgmma kernel,
    # whose warps' wgmma instructions ncu counts as tensor instructions at 32768 FLOP each
    text, rows = render(tmp_path, [("a_kernel", 100000, 1e6, 4.096e9),
                                   ("b_kernel", 100000, 3e6, 12.288e9),
                                   ("fused_kernel", 200000, 1e6, 32.768e9)])
    assert "at 1.000 FLOP each" in text and "2 agree with it to 1%, 1 give an eighth" in text
    assert rows["chunk_a_kernel<bf16>"][6] == "41.0 (6%)"  # 4.096 GFLOP in 100 us
    fused = rows["chunk_fused_kernel<bf16>"]
    assert fused[6] == "163.8 (23%)"  # 32.768 GFLOP in 200 us (its instructions: 20.5)
    assert fused[5] == "1.00 (25%)"  # 2e8 bytes in 200 us against 4 TB/s


def test_without_agreement_the_instructions_are_counted_and_said(tmp_path):
    # operations at 1, 2 and 0.5 FLOP each: no figure most launches agree on
    text, rows = render(tmp_path, [("a_kernel", 100000, 1e6, 4.096e9),
                                   ("b_kernel", 100000, 1e6, 2.048e9),
                                   ("c_kernel", 100000, 1e6, 8.192e9)])
    assert "mma.sync instructions alone" in text
    assert rows["chunk_c_kernel<bf16>"][6] == "41.0 (6%)"


def test_a_run_of_mostly_wgmma_launches_takes_mma_sync_ratio(tmp_path):
    # two mma.sync launches and four of a wgmma kernel: the ratios' median (an eighth) would give
    # every kernel an eighth of its rate; the largest, mma.sync's, gives each its own
    text, rows = render(tmp_path, [("a_kernel", 100000, 1e6, 4.096e9),
                                   ("b_kernel", 100000, 3e6, 12.288e9)] +
                        [("fused_kernel", 200000, 1e6, 32.768e9)] * 4)
    assert "at 1.000 FLOP each" in text and "2 agree with it to 1%, 4 give an eighth" in text
    assert rows["chunk_a_kernel<bf16>"][6] == "41.0 (6%)"
    assert rows["chunk_fused_kernel<bf16>"][6] == "163.8 (23%)"


def test_a_ratio_above_mma_sync_given_by_one_launch_is_not_taken(tmp_path):
    # one launch at twice the others' ratio: no two launches agree on the largest, so the
    # instructions are counted and the table says so
    text, rows = render(tmp_path, [("a_kernel", 100000, 1e6, 4.096e9),
                                   ("b_kernel", 100000, 1e6, 4.096e9),
                                   ("c_kernel", 100000, 1e6, 2.048e9)])
    assert "mma.sync instructions alone" in text
    assert rows["chunk_c_kernel<bf16>"][6] == "41.0 (6%)"
