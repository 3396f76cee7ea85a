#!/usr/bin/env python3
"""ruleproof.check on flash-linear-attention's six chunk kernels, forward and backward, on a GPU.

Runs where flash-linear-attention's package folder is on PYTHONPATH (fetched there; none of its
code is part of this repository) and the `ruleproof` command is found (RULEPROOF=PATH). For one
rule and dtype it checks the kernel on every case of ruleproof.cases(rule, recipes=RECIPES)
(three shapes: whole chunks at B = 2, T = 300 at H = 4, a varlen batch with an empty sequence at
K = V = 128; the recipes fla, masked, strong, head_gates), and writes each verdict to
OUT/<rule>_<dtype>.json as it goes; a failing case's dump and report stay in OUT/artifacts.

    PYTHONPATH=FLA:python python3 tools/fla_check.py --rule gla --dtype bf16 --out OUT

--no-hopper-guard runs the backward passes flash-linear-attention refuses on Hopper (its issue
640: simple_gla and gated_delta_rule with Triton 3.4 to 3.7.0) by disabling that check
(fla/ops/common/chunk_o.py, IS_NVIDIA_HOPPER). --configs N autotunes each kernel over its first N
configurations only, to fit a GPU machine's time; the report says so. --summarise OUT writes
OUT/fla_check.md from every OUT/*.json.
"""
import argparse
import glob
import json
import math
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import ruleproof  # noqa: E402 (the package beside this script)
from fla_dumps import first_configs, kernel_of  # noqa: E402 (its kernels, their autotuning)

RECIPES = ("fla", "masked", "strong", "head_gates")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
#: The chunk size each kernel runs at: dplr's default is 16, the others' 64.
CHUNK = {"dplr_fla": 16}


def verdict_json(v):
    return {"holds": v.holds, "policy": v.policy, "call": v.call, "artifacts": v.artifacts,
            "replay": v.replay,
            "tensors": {n: {"holds": t.holds, "worst_error": t.worst_error,
                            "allowed": t.allowed, "ratio": t.ratio, "nan": t.nan, "inf": t.inf,
                            "rms_ratio": t.rms_ratio, "where": str(t.where or t.note)}
                        for n, t in v.tensors.items()}}


def run(args):
    if args.configs:
        first_configs(args.configs)
    if args.no_hopper_guard:
        import fla.ops.common.chunk_o as chunk_o
        chunk_o.IS_NVIDIA_HOPPER = False
    fn = kernel_of(args.rule)
    name = f"{args.rule}_{args.dtype}" + ("_no_guard" if args.no_hopper_guard else "") + \
        "".join(f"_{s}" for s in args.shape or []) + \
        ("_" + "_".join(args.recipes) if args.recipes else "") + \
        ("_no_guard_bands" if args.no_guard_bands else "") + \
        (f"_configs{args.configs}" if args.configs else "_autotuned")
    path = os.path.join(args.out, name + ".json")
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    on_gpu = args.device == "cuda"
    report = {"rule": args.rule, "dtype": args.dtype, "kernel": fn.__name__,
              "producer": args.producer, "hopper_guard": not args.no_hopper_guard,
              "configs": args.configs or "all", "guard_bands": not args.no_guard_bands,
              "torch": torch.__version__,
              "triton": triton_version,
              "device": torch.cuda.get_device_name() if on_gpu else "cpu",
              "cases": {}}
    chunk = CHUNK.get(args.rule, 64)
    for case in ruleproof.cases(args.rule, shapes=args.shape, recipes=args.recipes or RECIPES,
                                dtypes=[DTYPES[args.dtype]], chunk_size=chunk):
        start = time.time()
        entry = {}
        options = dict(case.options(), artifacts=os.path.join(args.out, "artifacts"),
                       device=args.device, guard=not args.no_guard_bands)
        options["name"] = name + "-" + case.id
        try:
            entry = verdict_json(ruleproof.check(fn, **options))
        except ruleproof.KernelRaised as e:
            entry["raised"] = str(e)
            if "backward" in str(e):  # judge the forward pass the kernel did compute
                try:
                    entry["forward_only"] = verdict_json(
                        ruleproof.check(fn, backward=False, **options))
                except Exception as f:
                    entry["forward_only"] = {"raised": f"{type(f).__name__}: {f}"}
        except Exception as e:
            entry["raised"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        entry["seconds"] = round(time.time() - start, 2)
        report["cases"][case.id] = entry
        worst = max(entry.get("tensors", {}).items(), key=lambda kv: kv[1]["ratio"],
                    default=(None, None))
        print(f"{case.id}: " + (f"{'holds' if entry['holds'] else 'FAILS'} (worst {worst[0]} at "
                                f"{worst[1]['ratio']:.3g} of its allowance)" if "holds" in entry
                                else entry["raised"][:200]) + f" ({entry['seconds']} s)",
              flush=True)
        with open(path + ".tmp", "w") as f:
            json.dump(report, f, indent=1)
        os.replace(path + ".tmp", path)


def fmt(x):
    return "inf" if x == math.inf else "nan" if isinstance(x, float) and math.isnan(x) else \
        f"{x:.3g}"


def summarise(out):
    """OUT/fla_check.md: a line per rule, dtype and case, from every OUT/*.json."""
    lines, totals = [], {"holds": 0, "fails": 0, "raised": 0}
    head = None
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        r = json.load(open(path))
        head = head or r
        guard = ("" if r["hopper_guard"] else ", Hopper guard off") + \
            ("" if r.get("guard_bands", True) else ", no NaN guard bands") + \
            f", autotuned over {r['configs']} configuration(s)"
        lines += ["", f"### {r['kernel']}, {r['dtype']}{guard}", "",
                  "| case | verdict | worst tensor: error / allowed | worst RMS ratio | failing |",
                  "|---|---|---|---|---|"]
        for case, e in r["cases"].items():
            v = e if "tensors" in e else e.get("forward_only", {})
            if "tensors" not in v:
                totals["raised"] += 1
                lines.append(f"| {case} | raised | {e.get('raised', '')[:160]} | | |")
                continue
            t = v["tensors"]
            worst = max(t, key=lambda n: t[n]["ratio"])
            rms = max(t, key=lambda n: t[n]["rms_ratio"])
            what = "holds" if v["holds"] else "FAILS"
            totals["holds" if v["holds"] else "fails"] += 1
            if v is not e:
                what += " (forward only: backward raised)"
            lines.append(f"| {case} | {what} | {worst} {fmt(t[worst]['ratio'])} | {rms} "
                         f"{fmt(t[rms]['rms_ratio'])} | "
                         f"{', '.join(n for n in t if not t[n]['holds'])} |")
    top = ["# ruleproof.check on flash-linear-attention's chunk kernels", "",
           f"{head['producer']}; {head['device']}, PyTorch {head['torch']}, Triton "
           f"{head['triton']}." if head else "no results",
           "", f"{totals['holds']} cases hold, {totals['fails']} fail, {totals['raised']} "
           "raised before a verdict."]
    with open(os.path.join(out, "fla_check.md"), "w") as f:
        f.write("\n".join(top + lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rule", choices=list(ruleproof.rules()))
    p.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    p.add_argument("--out", required=True)
    p.add_argument("--producer", default="flash-linear-attention bc3b101")
    p.add_argument("--configs", type=int, default=0)
    p.add_argument("--no-hopper-guard", action="store_true")
    p.add_argument("--device", default="cuda", help="where the kernel runs (cuda)")
    p.add_argument("--shape", action="append", choices=list(ruleproof.SHAPES),
                   help="only this shape of ruleproof.cases (repeatable; default all)")
    p.add_argument("--recipes", nargs="+", choices=ruleproof.RECIPES,
                   help=f"only these recipes (default {' '.join(RECIPES)})")
    p.add_argument("--no-guard-bands", action="store_true",
                   help="no NaN after the input buffers (to tell a read past the end from an "
                        "overflow)")
    p.add_argument("--summarise", action="store_true", help="write OUT/fla_check.md and stop")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.summarise:
        return summarise(args.out)
    if not args.rule:
        p.error("--rule is required")
    run(args)


if __name__ == "__main__":
    sys.exit(main())
