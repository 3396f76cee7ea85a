#!/usr/bin/env python3
"""ruleproof: the phases of gated_delta_rule's fused forward (gpu/chunk_delta_fused_tc.cu; and of
simple_gla's, its plain form, whose WY phases are absent), or with --form held of the held forward
(gpu/chunk_delta_held_tc.cu, which records its own phases in FusedEvent's places), read from the
timeline
RULEPROOF_FUSED_TIMELINE=FILE makes it append (gpu/chunk_delta.cpp): block
(0, 0, 0)'s SM cycles at the end of each phase (FusedEvent, gpu/detail/delta_launch.hpp) of each
chunk. Takes the last call in FILE and prints each role's phases, a chunk's median and mean over
the chunks of the sequence but its first and last (the pipeline's start and end), in cycles and in
microseconds at --mhz (the SM clock, nvidia-smi's clocks.sm while it ran; 1980 by default).

usage: gpu/bench/fused_timeline.py FILE [--mhz 1980] [--form fused|held]
"""
import argparse
import math
import statistics
import sys

# (role, phase, event where the phase starts, its event, the start's chunk offset)
PHASES = [
    ("step", "a step (the state's barrier to barrier)", "state_end", "state_end", -1),
    ("WY", "the gates, the queries' copy issued, beta v (second)", "wy_start", "wy_kk", 0),
    ("WY", "to k k^T and A0 in (first)", "wy_kk", "wy_a0", 0),
    ("WY", "the solve", "wy_a0", "wy_solve", 0),
    ("WY", "A and beta k e^g in the input type", "wy_solve", "wy_factors", 0),
    ("WY", "w (first warpgroup)", "wy_factors", "wy_w", 0),
    ("WY", "u (second warpgroup)", "wy_factors", "wy_u", 0),
    ("WY", "w to the step's end", "wy_w", "wy_step_end", 0),
    ("WY", "the step's end to the next chunk's start", "wy_step_end", "wy_start", -1),
    ("WY", "w to its arrival at wy_done", "wy_w", "wy_arrived", 0),
    ("WY", "w to its copies waited for (first)", "wy_w", "wy_waited", 0),
    ("WY", "u to its copies waited for (second)", "wy_u", "wy_waited_u", 0),
    ("state", "waits for w and u", "state_end", "state_wy_done", -1),
    ("state", "v_new = u - w h", "state_wy_done", "state_v_new", 0),
    ("state", "  of it, w h issued", "state_wy_done", "state_issued", 0),
    ("state", "  of it, w h done and v_new", "state_issued", "state_v_new", 0),
    ("state", "    of that, w h done", "state_issued", "state_wh", 0),
    ("state", "    of that, v_new and v_end stored", "state_wh", "state_v_new", 0),
    ("state", "h's update", "state_v_new", "state_update", 0),
    ("state", "waits for the output's q h, h's copy", "state_update", "state_copy", 0),
    ("state", "h's copy to the step's end", "state_copy", "state_end", 0),
    ("output", "q h and Aqk", "state_end", "output_scores", -1),
    ("output", "  of it, q h and q k^T issued", "state_end", "output_issued", -1),
    ("output", "  of it, q h done", "output_issued", "output_qh", 0),
    ("output", "  of it, q k^T done and Aqk", "output_qh", "output_scores", 0),
    ("output", "waits for v_new", "output_scores", "output_v_new", 0),
    ("output", "Aqk v_new and the store", "output_v_new", "output_stored", 0),
]

# the held forward's: its state warpgroup's marks in the state_* places and output_stored, its
# chunks warpgroup's (a chunk ahead) in the wy_* places, each for the chunk it works on
HELD_PHASES = [
    ("step", "a step (the state takes chunk c - 1, then chunk c)", "state_wy_done",
     "state_wy_done", -1),
    ("state", "h^T k^T and h^T q^T issued, (k h)^T done", "state_wy_done", "state_wh", 0),
    ("state", "x, then v_new^T done", "state_wh", "state_v_new", 0),
    ("state", "o's last product and h's update issued, o stored", "state_v_new", "output_stored",
     0),
    ("state", "h's update done", "output_stored", "state_update", 0),
    ("state", "waits for the next chunk's Aqk", "state_update", "state_wy_done", -1),
    ("chunks", "an iteration", "wy_start", "wy_start", -1),
    ("chunks", "waits for the chunk's copies", "wy_start", "wy_waited", 0),
    ("chunks", "rows past the sequence's end zeroed", "wy_waited", "wy_kk", 0),
    ("chunks", "q k^T issued", "wy_kk", "wy_a0", 0),
    ("chunks", "the gates (first warp), while q k^T runs", "wy_a0", "wy_w", 0),
    ("chunks", "q k^T done", "wy_w", "wy_solve", 0),
    ("chunks", "g_cum in", "wy_solve", "wy_factors", 0),
    ("chunks", "Aqk stored and handed over", "wy_factors", "wy_arrived", 0),
    ("chunks", "waits for the state's chunk before, issues the copies", "wy_arrived",
     "wy_step_end", 0),
    ("lead", "Aqk handed over to the state taking the chunk", "wy_arrived", "state_wy_done", 0),
]
FORMS = {"fused": PHASES, "held": HELD_PHASES}


def last_call(lines):
    """The rows of the last call in the file: chunk -> {event: cycles}."""
    names, rows = None, {}
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "chunk":
            names, rows = fields[1:], {}
            continue
        if names is None or len(fields) != len(names) + 1:
            raise ValueError("not a timeline row: %r" % line)
        rows[int(fields[0])] = {n: float(x) for n, x in zip(names, fields[1:])}
    if not rows:
        raise ValueError("no timeline rows")
    return rows


def phases(rows, table=PHASES):
    """Each phase's cycles over the chunks but the first and last: (role, phase, [cycles])."""
    chunks = sorted(rows)
    inner = chunks[1:-1] or chunks
    out = []
    for role, phase, start, end, offset in table:
        values = []
        for c in inner:
            if c + offset not in rows:
                continue
            a, b = rows[c + offset].get(start, math.nan), rows[c].get(end, math.nan)
            if not (math.isnan(a) or math.isnan(b)):
                values.append(b - a)
        out.append((role, phase, values))
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--mhz", type=float, default=1980.0)
    p.add_argument("--form", choices=sorted(FORMS), default="fused",
                   help="the kernel that recorded the timeline (default: fused)")
    a = p.parse_args(argv)
    with open(a.file) as f:
        rows = last_call(f.read().splitlines())
    print("| role | phase | median cycles | mean cycles | median us | chunks |")
    print("|---|---|---|---|---|---|")
    for role, phase, values in phases(rows, FORMS[a.form]):
        if not values:
            print("| %s | %s | | | | 0 |" % (role, phase))
            continue
        median = statistics.median(values)
        print("| %s | %s | %.0f | %.0f | %.2f | %d |" % (role, phase, median,
                                                       statistics.mean(values),
                                                       median / a.mhz, len(values)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
