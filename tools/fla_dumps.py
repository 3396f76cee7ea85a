#!/usr/bin/env python3
"""Dumps of flash-linear-attention's chunk kernels, for `ruleproof check-dump` and its tests.

Runs on a machine with a GPU and flash-linear-attention importable (its package folder on
PYTHONPATH; this script does not carry or copy any of its code). For each case of the set asked
for, it draws inputs by flash-linear-attention's own test recipes, calls the chunk kernel forward
and backward through <do, o> + <dht, final_state>, and writes DIR/<case>.safetensors under the
names check-dump reads (q, k, v, the gate, beta, a, b, initial_state, o, final_state, do, dht and
every gradient; cu_seqlens as an I64 tensor; scale and chunk_size as metadata). It also judges
each call on its own, independently of ruleproof: the same recurrence written out step by step
in float64 PyTorch, differentiated by autograd on the stored inputs, and writes for every output
its relative RMS error (flash-linear-attention's ratio) and its worst error over the largest
entry to DIR/<set>.json.

    python3 tools/fla_dumps.py --set main --out DIR [--only RULE] [--device cuda]

Sets: `main` (the six rules, bf16 and fp16), `no_guard` (simple_gla and gated_delta_rule with
flash-linear-attention's guard against its issue 640 disabled, see below), `dplr_offsets` (the
dplr safe-gate cases, for a tree with commit 40334f1c reverted) and `gdn_mask` (the
gated_delta_rule cases with partial chunks, for an older tree named by --tag: 2e90142c, the
commit before 91d870f8, by default).
"""
import argparse
import json
import math
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ruleproof.recipes import fla_inputs  # noqa: E402 (the package beside this script)
from ruleproof.recurrence import recurrence  # noqa: E402
from ruleproof.safetensors import read_safetensors, write_safetensors  # noqa: E402

RULES = ("simple_gla", "gla", "gated_delta_rule", "kda", "dplr_fla", "gated_oja")
GATE_NAME = {"dplr_fla": "gk", "gated_oja": "gv"}  # flash-linear-attention's argument names
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def judge_dump(path):
    """The float64 judgment of one dump on its own inputs: what run_case records."""
    t, meta = read_safetensors(path)
    name = os.path.basename(path)
    rule = meta.get("rule") or \
        next(r for r in sorted(RULES, key=len, reverse=True) if name.startswith(r + "_"))
    gate = GATE_NAME.get(rule, "g")
    x = {n: t[n].double().requires_grad_(True)
         for n in ("q", "k", "v", gate, "beta", "a", "b") if n in t}
    h0 = t["initial_state"].double().requires_grad_(True) if "initial_state" in t else None
    cu = t["cu_seqlens"].tolist() if "cu_seqlens" in t else None
    o, ht = recurrence(rule, x, float(meta["scale"]), h0, cu)
    ref = {"o": o, "final_state": ht}
    if "do" in t:
        dht = t["dht"].double() if "dht" in t else torch.zeros_like(ht)
        ((o * t["do"].double()).sum() + (ht * dht).sum()).backward()
        ref.update({"d" + n: v.grad for n, v in x.items()})
        if h0 is not None:
            ref["dh0"] = h0.grad
    return {n: errors(t[n], r) for n, r in ref.items() if n in t}


def errors(kernel, truth):
    k, t = kernel.double(), truth.double()
    finite = bool(torch.isfinite(k).all())
    rms = lambda x: x.pow(2).mean().sqrt().item() if x.numel() else 0.0
    diff = (k - t) if finite else torch.zeros_like(t)
    return {"finite": finite, "nonfinite": int((~torch.isfinite(k)).sum()),
            "rms_ratio": rms(diff) / max(rms(t), 1e-300) if finite else math.inf,
            "max_error_over_max": (diff.abs().max().item() / max(t.abs().max().item(), 1e-300))
            if finite and t.numel() else (0.0 if finite else math.inf)}


# --- inputs by flash-linear-attention's test recipes -------------------------------------------

def draw(case, device):
    """Inputs as tests/ops/test_<rule>.py draws them (test_gla, test_simple_gla, test_gdn,
    test_kda, test_dplr_delta, test_oja at bc3b101), with h0 and dht always drawn."""
    g = torch.Generator(device="cpu").manual_seed(case["seed"])
    randn = lambda *s, dtype=torch.float32: torch.randn(*s, generator=g).to(dtype)
    rule, dt = case["rule"], DTYPES[case["dtype"]]
    B, T, H, K, V = case["B"], case["T"], case["H"], case["K"], case["V"]
    N = B if case.get("cu_seqlens") is None else len(case["cu_seqlens"]) - 1
    x, h0 = fla_inputs(rule, g, B, T, H, K, V, N, dt, case["normalizer"], case.get("mask_p", 0.0))
    if rule == "dplr_fla" and case.get("safe_gate"):
        x["gk"] = x["gk"].clamp(case.get("lower_bound", -5.0), 0)
    if rule == "dplr_fla" and case.get("head_gates"):  # each head its own strength, the first
        x["gk"] = x["gk"] * torch.tensor(case["head_gates"]).view(1, 1, H, 1)  # rows of head 0 -5
        x["gk"][:, : min(8, T), 0, :] = -5.0
    do = randn(B, T, H, V, dtype=dt)
    dht = randn(N, H, K, V)
    if not case.get("states", True):  # no initial state, no gradient of the final state
        h0, dht = None, torch.zeros(N, H, K, V)
    move = lambda t: None if t is None else t.to(device)
    return {n: move(t) for n, t in x.items()}, move(h0), move(do), move(dht)


def first_configs(n):
    """Makes triton.autotune keep the first n configurations of each kernel's list (called
    before flash-linear-attention's kernels are defined)."""
    import triton
    autotune = triton.autotune

    def limited(*a, **kw):
        if "configs" in kw:
            kw["configs"] = list(kw["configs"])[:n]
        else:
            a = (list(a[0])[:n],) + a[1:]
        return autotune(*a, **kw)
    triton.autotune = limited


def kernel_of(rule):
    if rule == "simple_gla":
        from fla.ops.simple_gla import chunk_simple_gla as f
    elif rule == "gla":
        from fla.ops.gla import chunk_gla as f
    elif rule == "gated_delta_rule":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as f
    elif rule == "kda":
        from fla.ops.kda import chunk_kda as f
    elif rule == "dplr_fla":
        from fla.ops.generalized_delta_rule.dplr import chunk_dplr_delta_rule as f
    else:
        from fla.ops.gated_oja_rule import chunk_gated_oja_rule as f
    return f


def run_case(case, out_dir, device):
    rule = case["rule"]
    x, h0, do, dht = draw(case, device)
    scale = case["K"] ** -0.5
    cu = case.get("cu_seqlens")
    cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int64, device=device)
    kwargs = {"scale": scale, "output_final_state": True}
    if cu is not None:
        kwargs["cu_seqlens"] = cu_t
    if rule == "dplr_fla":
        kwargs["chunk_size"] = case["chunk_size"]
        kwargs["safe_gate"] = bool(case.get("safe_gate"))
    leaves = {n: t.detach().clone().requires_grad_(True) for n, t in x.items()}
    h0_leaf = None if h0 is None else h0.detach().clone().requires_grad_(True)
    o, ht = kernel_of(rule)(**leaves, initial_state=h0_leaf, **kwargs)
    grads, refused = {}, None
    try:
        ((o.float() * do.float()).sum() + (ht.float() * dht).sum()).backward()
        grads = {"d" + n: t.grad for n, t in leaves.items()}
        grads["dh0"] = None if h0 is None else h0_leaf.grad
    except RuntimeError as e:  # flash-linear-attention refuses some backward passes: keep o
        refused = f"backward refused: {e}"
    if device == "cuda":
        torch.cuda.synchronize()
    # The independent judge: float64 on the very inputs the kernel received.
    ref_leaves = {n: t.detach().double().requires_grad_(True) for n, t in x.items()}
    ref_h0 = None if h0 is None else h0.detach().double().requires_grad_(True)
    ref_o, ref_ht = recurrence(rule, ref_leaves, scale, ref_h0, cu)
    ((ref_o * do.double()).sum() + (ref_ht * dht.double()).sum()).backward()
    ref = {"o": ref_o, "final_state": ref_ht, "dh0": None if h0 is None else ref_h0.grad}
    ref.update({"d" + n: t.grad for n, t in ref_leaves.items()})
    tensors = dict(x, o=o, final_state=ht)
    if h0 is not None:
        tensors["initial_state"] = h0
    if grads:
        tensors["do"] = do
        if case.get("states", True):
            tensors["dht"] = dht
        tensors.update({n: t for n, t in grads.items() if t is not None})
    if cu is not None:
        tensors["cu_seqlens"] = cu_t
    metadata = {"scale": repr(scale), "chunk_size": case.get("chunk_size", 64),
                "producer": case["producer"], "case": case["name"]}
    write_safetensors(os.path.join(out_dir, case["name"] + ".safetensors"), tensors, metadata)
    judged = {}
    for name in ["o", "final_state"] + sorted(n for n in grads if grads[n] is not None):
        judged[name] = errors(tensors[name], ref[name])
    if refused:
        judged["refused"] = refused
    return judged


# --- the sets ----------------------------------------------------------------------------------

def main_cases(rules):
    """Per rule and dtype: T = 128 (two whole chunks), T = 72 at K = V = 128 with strong gates,
    and a varlen batch with an empty sequence and weak gates; dplr_fla also with safe_gate at
    chunk size 16 and (fp16, its tests' dtype) at chunk size 64. Every case but the one at
    K = V = 128 (which takes no initial state and no dht) has h0 and dht."""
    cases = []
    for rule in rules:
        for dtype in ("bf16", "fp16"):
            base = {"rule": rule, "dtype": dtype, "mask_p": 0.0}
            if rule == "dplr_fla":
                base["chunk_size"] = 16  # its default at bc3b101
            shapes = [
                dict(name="T128_K64", B=1, T=128, H=1, K=64, V=64, normalizer=1.0),
                dict(name="T72_K128_strong", B=1, T=72, H=1, K=128, V=128, normalizer=0.1,
                     states=False),
                dict(name="varlen_empty", B=1, T=100, H=1, K=64, V=64, normalizer=10.0,
                     cu_seqlens=[0, 40, 40, 100]),
            ]
            if rule in ("gated_delta_rule", "kda", "gated_oja"):
                shapes[0]["mask_p"] = 0.5  # their recipes' masked gates
            if rule == "dplr_fla" and dtype == "fp16":  # its tests' dtype
                shapes.append(dict(name="T100_K64_chunk64", B=1, T=100, H=1, K=64, V=64,
                                   normalizer=1.0, chunk_size=64))
            if rule == "dplr_fla":
                shapes.append(dict(name="T100_K64_safe_gate", B=1, T=100, H=2, K=64, V=64,
                                   normalizer=1.0, safe_gate=True, lower_bound=-5.0))
            for i, s in enumerate(shapes):
                c = dict(base, **s)
                c["name"] = f"{rule}_{dtype}_{s['name']}"
                c["seed"] = 1000 * RULES.index(rule) + 10 * i + (dtype == "fp16")
                cases.append(c)
    return cases


def select(args):
    rules = [args.only] if args.only else list(RULES)
    if args.set == "main":
        return main_cases(rules)
    if args.set == "no_guard":  # the backward flash-linear-attention refuses on Hopper
        return [dict(c, name=c["name"] + "_no_guard")
                for c in main_cases(["simple_gla", "gated_delta_rule"])]
    if args.set == "dplr_offsets":
        cases = [dict(c, name=c["name"] + "_revert_40334f1c")
                 for c in main_cases(["dplr_fla"]) if c.get("safe_gate")]
        for dtype in ("bf16", "fp16"):  # the shape of that fix's own test: heads of other gates
            cases.append(dict(rule="dplr_fla", dtype=dtype, B=1, T=32, H=3, K=32, V=32,
                              normalizer=1.0, chunk_size=16, safe_gate=True, lower_bound=-5.0,
                              head_gates=[1.0, 2.0, 3.0], seed=77 + (dtype == "fp16"),
                              name=f"dplr_fla_{dtype}_heads_revert_40334f1c"))
        return cases
    if args.set == "gdn_mask":
        return [dict(c, name=c["name"] + "_" + args.tag)
                for c in main_cases(["gated_delta_rule"]) if c["T"] % 64]
    raise SystemExit(f"unknown set {args.set}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", default="main")
    p.add_argument("--out", required=True)
    p.add_argument("--only", choices=RULES)
    p.add_argument("--device", default="cuda")
    p.add_argument("--producer", default="flash-linear-attention bc3b101")
    p.add_argument("--cases", help="a comma-separated list of case names: only these")
    p.add_argument("--tag", default="at_2e90142c",
                   help="the suffix of the set gdn_mask's case names (the tree it runs)")
    p.add_argument("--configs", type=int, default=0,
                   help="autotune each kernel over only its first N configurations (0: all)")
    p.add_argument("--judge", nargs="+", metavar="DUMP",
                   help="judge these dumps in float64 (no kernel is run) into OUT/judged.json")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.configs:  # before flash-linear-attention's kernels are defined
        first_configs(args.configs)
        args.producer += f" (autotuned over the first {args.configs} configuration(s) only)"
    if args.set == "no_guard":  # the guard of fla/ops/common/chunk_o.py (its issue 640)
        import fla.ops.common.chunk_o as chunk_o
        chunk_o.IS_NVIDIA_HOPPER = False
    report = {"set": args.set, "producer": args.producer, "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if args.device == "cuda" and
              torch.cuda.is_available() else "cpu",
              "cases": {}}
    try:
        import triton
        report["triton"] = triton.__version__
    except ImportError:
        pass
    name = os.path.join(args.out, f"{args.set}{'_' + args.only if args.only else ''}.json")
    if args.judge:
        report = {"judge": "tools/fla_dumps.py --judge: the recurrence step by step in float64, "
                  "autograd", "torch": torch.__version__, "cases": {}}
        for path in args.judge:
            name = os.path.basename(path)
            if name == "dump.safetensors":  # ruleproof.check's: named by its folder
                name = os.path.basename(os.path.dirname(os.path.abspath(path)))
            report["cases"][name] = {"errors": judge_dump(path)}
            print(path, flush=True)
        with open(os.path.join(args.out, "judged.json"), "w") as f:
            json.dump(report, f, indent=1)
        return 0
    wanted = set(args.cases.split(",")) if args.cases else None
    for case in select(args):
        if wanted is not None and case["name"] not in wanted:
            continue
        case["producer"] = args.producer
        start = time.time()
        entry = {"case": {k: v for k, v in case.items() if k != "producer"}}
        try:
            entry["errors"] = run_case(case, args.out, args.device)
        except Exception as e:  # a refusal or a crash is a result too
            entry["exception"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        entry["seconds"] = round(time.time() - start, 2)
        report["cases"][case["name"]] = entry
        worst = max((v["rms_ratio"] for v in entry.get("errors", {}).values()
                     if isinstance(v, dict)), default=math.nan)
        print(f"{case['name']}: {entry.get('exception', f'worst rms ratio {worst:.3g}')}"
              f" ({entry['seconds']} s)", flush=True)
        with open(name, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
