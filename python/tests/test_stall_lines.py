"""gpu/bench/stall_lines.py, the per-line summary of Nsight Compute's stall samples, on a small CSV
in the form `ncu --page source --print-source cuda,sass --csv` writes (every field quoted, quotes
inside the source text left as they are)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "gpu", "bench", "stall_lines.py")
sys.path.insert(0, os.path.dirname(TOOL))
import stall_lines  # noqa: E402

HEADER = ('"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)",'
          '"Warp Stall Sampling (Not-issued Samples)","# Samples","Instructions Executed",'
          '"stall_barrier","stall_wait","stall_barrier (Not Issued)","stall_wait (Not Issued)"')


def row(line, text, samples, instructions, barrier, wait):
    return '"%s","%s","-","-","%d","0","%d","%d","%d","%d","0","0"' % (
        line, text, samples, samples, instructions, barrier, wait)


def sass(samples):
    return '"","","0x10","  MMA R0, R1","%d","0","%d","5","0","0","0","0"' % (samples, samples)


SIGNATURE = ('void ruleproof::gpu::detail::<unnamed>::wy_kernel<__nv_bfloat16, (int)128>'
             '(const T1 *, ruleproof::gpu::detail::ChunkDims)')
CSV = "\n".join([
    '"File Path","/src/gpu/detail/mma.cuh"',
    '"Function Name","%s"' % SIGNATURE,
    HEADER,
    row(107, ': "r"(a.x[0]), "r"(b.x[1]));', 30, 100, 0, 30),
    sass(30),
    row(89, 'f(a, "x","y");', 5, 40, 5, 0),
    '"File Path","/src/gpu/chunk_delta_tc.cu"',
    '"Function Name","%s"' % SIGNATURE,
    HEADER,
    row(150, '__syncthreads(); // a | b', 60, 10, 55, 5),
    row(151, "int x = 0;", 5, 50, 0, 5),
    '"File Path","/src/gpu/chunk_gla_tc.cu"',
    '"Function Name","void state_kernel<float>(int)"',
    HEADER,
    row(7, "y += 1;", 10, 10, 0, 10),
]) + "\n"


def test_samples_are_summed_by_line_and_kernel_and_ranked():
    kernels = stall_lines.read(stall_lines.rows_of(CSV))
    assert list(kernels) == ["wy_kernel<__nv_bfloat16, (int)128>", "state_kernel<float>"]
    wy = kernels["wy_kernel<__nv_bfloat16, (int)128>"]
    assert set(wy) == {("mma.cuh", 107), ("mma.cuh", 89), ("chunk_delta_tc.cu", 150),
                       ("chunk_delta_tc.cu", 151)}
    assert wy[("mma.cuh", 107)].samples == 30  # the SASS row under it is not counted again
    assert wy[("mma.cuh", 107)].text == ': "r"(a.x[0]), "r"(b.x[1]));'
    assert wy[("mma.cuh", 89)].text == 'f(a, "x","y");'  # a "," in the text, put back together
    assert wy[("chunk_delta_tc.cu", 150)].stalls == {"barrier": 55, "wait": 5}
    text = stall_lines.report(kernels, top=2)
    wy_part = text.split("### `state_kernel<float>`")[0]
    assert "100 stall samples, 200 warp instructions executed" in wy_part
    assert "barrier 60.0%, wait 40.0%" in wy_part
    rows = [r for r in wy_part.splitlines() if r.startswith("| ") and ".c" in r]
    assert len(rows) == 2  # --top
    assert rows[0].startswith("| 60.0% | 5.0% | barrier 55, wait 5 | chunk_delta_tc.cu:150 |")
    assert rows[0].endswith("`__syncthreads(); // a \\| b` |")
    assert rows[1].startswith("| 30.0% | 50.0% | wait 30 | mma.cuh:107 |")


def test_the_command_writes_its_file_and_refuses_a_csv_without_samples(tmp_path):
    src = tmp_path / "source.csv"
    src.write_text(CSV)
    out = tmp_path / "lines.md"
    done = subprocess.run([sys.executable, TOOL, str(src), "--top", "3", "--out", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "| 60.0% | 5.0% |" in out.read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV.replace("Warp Stall Sampling (All Samples)", "Something Else"))
    done = subprocess.run([sys.executable, TOOL, str(bad), "--out", str(tmp_path / "x.md")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "--set full" in done.stderr
    assert not (tmp_path / "x.md").exists()
    done = subprocess.run([sys.executable, TOOL, str(tmp_path / "missing.csv")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "missing.csv" in done.stderr
