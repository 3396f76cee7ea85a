"""gpu/bench/fused_timeline.py, the phases of the fused forward's timeline, on a small file in the
form gpu/chunk_delta.cpp appends (a header line of event names, then a line a chunk)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "gpu", "bench", "fused_timeline.py")
sys.path.insert(0, os.path.dirname(TOOL))
import fused_timeline  # noqa: E402

EVENTS = ("wy_start wy_kk wy_a0 wy_solve wy_factors wy_w wy_u wy_step_end state_wy_done "
          "state_v_new state_update state_copy state_end output_scores output_v_new "
          "output_stored wy_arrived state_issued state_wh output_issued output_qh wy_waited "
          "wy_waited_u").split()


def chunk_row(c, step=1000):
    """Chunk c's events: its WY phases in the step before (from (c - 1) step), the state's and
    the output's in its own (from c step), each phase a known number of cycles."""
    wy, own = (c - 1) * step, c * step
    at = {"wy_start": wy + 10, "wy_kk": wy + 110, "wy_a0": wy + 160, "wy_solve": wy + 460,
          "wy_factors": wy + 500, "wy_w": wy + 700, "wy_u": wy + 600, "wy_step_end": wy + 1000,
          "state_wy_done": own + 20, "state_v_new": own + 220, "state_update": own + 420,
          "state_copy": own + 450, "state_end": own + 1000, "output_scores": own + 300,
          "output_v_new": own + 310, "output_stored": own + 400, "wy_arrived": wy + 720,
          "state_issued": own + 50, "state_wh": own + 120, "output_issued": own + 40,
          "output_qh": own + 140, "wy_waited": wy + 900, "wy_waited_u": wy + 950}
    return "%d %s" % (c, " ".join(str(float(at[e])) for e in EVENTS))


def timeline(chunks):
    return ["chunk " + " ".join(EVENTS)] + [chunk_row(c) for c in range(chunks)]


def test_each_phase_is_the_cycles_between_its_events():
    got = {(role, phase): values for role, phase, values in
           fused_timeline.phases(fused_timeline.last_call(timeline(6)))}
    assert got[("step", "a step (the state's barrier to barrier)")] == [1000.0] * 4
    assert got[("WY", "the solve")] == [300.0] * 4
    assert got[("WY", "w (first warpgroup)")] == [200.0] * 4
    assert got[("WY", "the step's end to the next chunk's start")] == [10.0] * 4
    assert got[("state", "waits for w and u")] == [20.0] * 4
    assert got[("output", "q h and Aqk")] == [300.0] * 4
    assert got[("WY", "w to its arrival at wy_done")] == [20.0] * 4
    assert got[("state", "  of it, w h issued")] == [30.0] * 4
    assert got[("state", "  of it, w h done and v_new")] == [170.0] * 4
    assert got[("state", "    of that, w h done")] == [70.0] * 4
    assert got[("state", "    of that, v_new and v_end stored")] == [100.0] * 4
    assert got[("output", "  of it, q h and q k^T issued")] == [40.0] * 4
    assert got[("output", "  of it, q h done")] == [100.0] * 4
    assert got[("output", "  of it, q k^T done and Aqk")] == [160.0] * 4
    assert got[("WY", "w to its copies waited for (first)")] == [200.0] * 4
    assert got[("WY", "u to its copies waited for (second)")] == [350.0] * 4


def test_a_timeline_without_the_later_events_leaves_their_phases_empty():
    old = [e for e in EVENTS if e not in ("wy_arrived", "state_issued", "state_wh",
                                          "output_issued", "output_qh", "wy_waited",
                                          "wy_waited_u")]
    lines = ["chunk " + " ".join(old)]
    for line in timeline(5)[1:]:
        fields = line.split()
        lines.append(" ".join(fields[:1 + len(old)]))
    got = {(role, phase): values for role, phase, values in
           fused_timeline.phases(fused_timeline.last_call(lines))}
    assert got[("state", "  of it, w h issued")] == []
    assert got[("state", "    of that, w h done")] == []
    assert got[("WY", "w to its copies waited for (first)")] == []
    assert got[("WY", "the solve")] == [300.0] * 3


def test_the_last_call_of_several_is_read():
    lines = timeline(3) + ["chunk " + " ".join(EVENTS), chunk_row(0, step=5), chunk_row(1, step=5)]
    rows = fused_timeline.last_call(lines)
    assert sorted(rows) == [0, 1]
    assert rows[1]["state_end"] == 1005.0  # the first call's chunk 1 ends at 2000


def test_a_row_that_does_not_match_its_header_is_an_error():
    with pytest.raises(ValueError):
        fused_timeline.last_call(["chunk a b", "0 1"])
    with pytest.raises(ValueError):
        fused_timeline.last_call([])


def test_the_table_prints(tmp_path, capsys):
    f = tmp_path / "timeline.txt"
    f.write_text("\n".join(timeline(5)) + "\n")
    assert fused_timeline.main([str(f), "--mhz", "1000"]) == 0
    out = capsys.readouterr().out
    assert "| WY | the solve | 300 | 300 | 0.30 | 3 |" in out


def held_row(c, step=1000):
    """The held forward's chunk c: its chunks warpgroup's phases a step before the state's."""
    ahead, own = (c - 1) * step, c * step
    at = {e: float("nan") for e in EVENTS}
    at.update({"wy_start": ahead + 0, "wy_waited": ahead + 30, "wy_kk": ahead + 40,
               "wy_a0": ahead + 140, "wy_w": ahead + 240, "wy_solve": ahead + 300,
               "wy_factors": ahead + 310,
               "wy_arrived": ahead + 510, "wy_step_end": ahead + 900,
               "state_wy_done": own + 100, "state_wh": own + 250, "state_v_new": own + 330,
               "output_stored": own + 600, "state_update": own + 640})
    return "%d %s" % (c, " ".join(str(at[e]) for e in EVENTS))


def test_the_held_forms_phases():
    lines = ["chunk " + " ".join(EVENTS)] + [held_row(c) for c in range(6)]
    got = {(role, phase): values for role, phase, values in
           fused_timeline.phases(fused_timeline.last_call(lines), fused_timeline.HELD_PHASES)}
    assert got[("step", "a step (the state takes chunk c - 1, then chunk c)")] == [1000.0] * 4
    assert got[("state", "h^T k^T and h^T q^T issued, (k h)^T done")] == [150.0] * 4
    assert got[("state", "x, then v_new^T done")] == [80.0] * 4
    assert got[("state", "h's update done")] == [40.0] * 4
    assert got[("state", "waits for the next chunk's Aqk")] == [460.0] * 4
    assert got[("chunks", "an iteration")] == [1000.0] * 4
    assert got[("chunks", "q k^T issued")] == [100.0] * 4
    assert got[("chunks", "the gates (first warp), while q k^T runs")] == [100.0] * 4
    assert got[("chunks", "Aqk stored and handed over")] == [200.0] * 4
    assert got[("lead", "Aqk handed over to the state taking the chunk")] == [590.0] * 4


def test_the_held_table_prints(tmp_path, capsys):
    f = tmp_path / "timeline.txt"
    f.write_text("\n".join(["chunk " + " ".join(EVENTS)] + [held_row(c) for c in range(5)]))
    assert fused_timeline.main([str(f), "--form", "held"]) == 0
    out = capsys.readouterr().out
    assert "| chunks | q k^T done | 60 | 60 | 0.03 | 3 |" in out
