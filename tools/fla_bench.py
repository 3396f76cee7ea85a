#!/usr/bin/env python3
"""flash-linear-attention's chunk kernels timed at one shape, for `gpu_bench --fla`.

Runs on a machine with a GPU and flash-linear-attention importable (its package folder on
PYTHONPATH; this script carries and copies none of its code). For each rule it draws the inputs
by flash-linear-attention's own test recipe (ruleproof.recipes.fla_inputs, with no initial
state), then times, with triton.testing.do_bench (the median of its runs, warm-up and autotuning
first), the forward alone and the forward followed by the backward of <do, o>, and writes
{rule: {"fwd_ms", "fwd_bwd_ms", "non_finite"}} to OUT, the format gpu_bench --fla reads. Where
flash-linear-attention refuses a backward (its Hopper guard, issue 640), "fwd_bwd_error" says
so; --no-guard turns that guard off first, as tools/fla_dumps.py --set no_guard does.

Every rule's forward and backward are called once (compiling and autotuning them: minutes)
before anything is timed.

With --kernels, each rule's forward and forward + backward are also run under PyTorch's profiler
(10 calls each, after the timing) and the GPU time of each kernel, per call, goes into the entry
as "fwd_kernels" and "fwd_bwd_kernels" ({kernel name: microseconds a call}). The inputs' gradients
are cleared before each profiled forward + backward, as do_bench's grad_to_none clears them before
each timed one, so that no call adds its gradients to the last call's.

OUT is written again after each rule is timed (to a temporary file, then renamed), so a run cut
short keeps the rules it finished. With --merge, the rules of an existing OUT are kept and this
run's are added (a rule timed again replaces its entry), provided OUT was written on the same
device, PyTorch, Triton, shape, type, guard and timer; otherwise nothing is written and the exit
status is 2.

    python3 tools/fla_bench.py --out fla_bench.json [--rule gla ...] [--B 4 --T 4096 --H 16 --K 128
        --V 128 --dtype bf16] [--no-guard] [--kernels] [--merge]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ruleproof.recipes import fla_inputs  # noqa: E402 (the package of this repository)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fla_dumps import kernel_of  # noqa: E402

RULES = ["simple_gla", "gla", "gated_delta_rule", "kda", "dplr_fla", "gated_oja"]


def kernel_times(call, calls=10, leaves=()):
    """{kernel name: GPU microseconds per call} of `call`, run `calls` times under the profiler,
    the gradients of `leaves` cleared before each call."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            for t in leaves:
                t.grad = None
            call()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times[e.name] = times.get(e.name, 0.0) + e.time_range.elapsed_us() / calls
    return dict(sorted(times.items(), key=lambda kv: -kv[1]))


# the entries that say where and how a report's times were taken: a merge needs them all equal
SETTING = ("device", "torch", "triton", "shape", "dtype", "guard", "timer")


def start_report(setting, out, merge):
    """The report this run writes: `setting` (SETTING's entries) with no rules, or with --merge
    and an existing `out`, that file's report. ValueError naming the first entry of SETTING that
    differs between the two, or saying why `out` cannot be read."""
    report = dict(setting, rules={})
    if not merge or not os.path.exists(out):
        return report
    try:
        with open(out) as f:
            old = json.load(f)
        rules = old["rules"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{out} is not a report of this tool ({e!r})") from e
    for key in SETTING:
        if old.get(key) != setting[key]:
            raise ValueError(f"{out} was written with {key} {old.get(key)!r}, this run has "
                             f"{setting[key]!r}")
    report["rules"] = dict(rules)
    return report


def write_report(report, out):
    """`report` to `out` as JSON, through a temporary file renamed into place, so that `out` is
    either the last complete report or the one before."""
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--rule", action="append", choices=RULES)
    for name, default in (("B", 4), ("T", 4096), ("H", 16), ("K", 128), ("V", 128)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--no-guard", action="store_true",
                   help="turn off flash-linear-attention's Hopper guard (issue 640) first")
    p.add_argument("--kernels", action="store_true",
                   help="also write each kernel's GPU time per call (PyTorch's profiler)")
    p.add_argument("--merge", action="store_true",
                   help="keep the rules of an existing OUT of the same setting, adding this run's")
    args = p.parse_args()
    import triton
    import triton.testing
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    B, T, H, K, V = args.B, args.T, args.H, args.K, args.V
    setting = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "triton": triton.__version__, "shape": dict(B=B, T=T, H=H, K=K, V=V),
               "dtype": args.dtype, "guard": not args.no_guard,
               "timer": "triton.testing.do_bench median"}
    try:
        report = start_report(setting, args.out, args.merge)
    except ValueError as e:
        print(f"fla_bench: {e}; nothing written", file=sys.stderr)
        return 2
    if args.no_guard:
        import fla.ops.common.chunk_o as chunk_o
        chunk_o.IS_NVIDIA_HOPPER = False
    calls = {}
    for rule in args.rule or RULES:
        gen = torch.Generator(device="cpu").manual_seed(0)
        x, _ = fla_inputs(rule, gen, B, T, H, K, V, B, dt)
        x = {n: t.cuda().requires_grad_(t.is_floating_point()) for n, t in x.items()}
        do = torch.randn(B, T, H, V, generator=gen).to(dt).cuda()
        f = kernel_of(rule)
        kwargs = {"scale": K ** -0.5, "output_final_state": False}

        def forward(f=f, x=x, kwargs=kwargs):
            return f(**x, **kwargs)[0]

        def forward_backward(forward=forward, do=do):
            forward().backward(do)

        calls[rule] = (forward, forward_backward, list(x.values()))
        forward_backward_error = None
        try:  # compiles and autotunes
            forward_backward()
        except RuntimeError as e:  # a refused backward is a result too
            forward_backward_error = str(e).split("\n")[0]
        calls[rule] += (forward_backward_error,)
        print(rule, "compiled", flush=True)
    for rule, (forward, forward_backward, leaves, error) in calls.items():
        entry = {}
        with torch.no_grad():
            o = forward()
            entry["non_finite"] = int((~torch.isfinite(o)).sum())
            entry["fwd_ms"] = triton.testing.do_bench(forward, return_mode="median")
        if error is None:
            entry["fwd_bwd_ms"] = triton.testing.do_bench(forward_backward, grad_to_none=leaves,
                                                          return_mode="median")
        else:
            entry["fwd_bwd_error"] = error
        if args.kernels:
            with torch.no_grad():
                entry["fwd_kernels"] = kernel_times(forward)
            if error is None:
                entry["fwd_bwd_kernels"] = kernel_times(forward_backward, leaves=leaves)
        report["rules"][rule] = entry
        write_report(report, args.out)
        print(rule, entry, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
