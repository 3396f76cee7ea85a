"""ruleproof.check and ruleproof.dump: a kernel's call on drawn inputs, judged by check-dump.

The kernel `fn` is called as flash-linear-attention's chunk kernels are, by keyword:

    fn(q=q, k=k, v=v, g=g, [beta=beta,] [a=a, b=b,] scale=scale, initial_state=h0,
       output_final_state=True, [cu_seqlens=cu_seqlens,] [chunk_size=C,] **kernel_kwargs)

(the gate is `gk` for dplr_fla, `gv` for gated_oja; chunk_size is passed only when fn's signature
names it) and returns (o [B, T, H, V], final_state [N, H, K, V]). The backward pass is that of
<do, o> + <dht, final_state>: torch.autograd.backward((o, final_state), (do, dht)) hands the
kernel's backward do and dht themselves, guard bands and all.
"""
import inspect
import math
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch

from . import engine, recipes
from .errors import KernelInputError, KernelRaised
from .safetensors import write_safetensors

#: The precision policy that judges a kernel of each input dtype (check-dump --policy): 16-bit
#: inputs on tensor cores; fp32 inputs in tf32 on a GPU (Triton's default for fp32 dots), in
#: fp32 on the CPU.
_JUDGED_DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


#: The order the verdicts are listed in: outputs, then gradients as the inputs come.
_ORDER = ("o", "final_state", "dq", "dk", "dv", "dg", "dgk", "dgv", "dbeta", "da", "db", "dh0")


def default_policy(dtype, device):
    """The precision policy check-dump judges a kernel of this input dtype on this device by."""
    if dtype in (torch.bfloat16, torch.float16):
        return "tensor-core"
    return "tf32" if torch.device(device).type == "cuda" else "fp32"


@dataclass
class Where:
    """The worst element of a tensor: its index, and for [B, T, H, ...] tensors its batch, time
    step, head and chunk (t // chunk_size); for states [N, H, K, V] the sequence (as batch) and
    the head."""
    index: Tuple[int, ...]
    batch: Optional[int] = None
    t: Optional[int] = None
    head: Optional[int] = None
    chunk: Optional[int] = None

    def __str__(self):
        if self.t is not None:
            return f"b={self.batch} t={self.t} head={self.head} chunk={self.chunk}"
        if self.batch is not None:
            return f"seq={self.batch} head={self.head} [{', '.join(map(str, self.index[2:]))}]"
        return str(list(self.index))


@dataclass
class TensorVerdict:
    """check-dump's verdict on one output or gradient of the kernel."""
    name: str
    holds: bool
    worst_error: float  #: the largest |kernel - truth| over error allowed there (nan if not finite)
    allowed: float  #: the error allowed at that element: 4 times the emulated twin's, or its floor
    ratio: float  #: worst_error / allowed (> 1 fails; inf where not finite)
    where: Optional[Where]
    nan: int  #: how many elements are NaN
    inf: int  #: how many are infinite
    #: flash-linear-attention's assert_close ratio: RMS(kernel - truth) / RMS(truth)
    rms_ratio: float
    twin_error: float  #: the emulated twin's error at its worst element
    dtype: str  #: the type the kernel stored it in
    note: str = ""  #: why it fails where check-dump could not judge it (a missing gradient)


@dataclass
class Verdict:
    """Every tensor's verdict on one call, and how to see it again."""
    rule: str
    dtype: str
    policy: str
    call: str  #: the call in words: sizes, recipe, seed
    tensors: Dict[str, TensorVerdict]
    replay: str  #: the command that judges the kept dump again (after a failure or keep=True)
    redraw: str  #: the Python call that draws the same inputs again
    artifacts: Optional[str] = None  #: the folder the dump and the report were kept in
    files: Dict[str, str] = field(default_factory=dict)  #: dump, report, html, summary

    @property
    def holds(self):
        return all(t.holds for t in self.tensors.values())

    @property
    def failing(self) -> List[str]:
        return [n for n, t in self.tensors.items() if not t.holds]

    def summary(self):
        """The verdict table, one line per tensor, as a person reads it."""
        lines = [f"ruleproof.check {self.rule}, {self.call}, policy {self.policy}: "
                 f"{'holds' if self.holds else 'FAILS on ' + ', '.join(self.failing)}",
                 f"{'tensor':<12} {'holds':<5} {'error':>10} {'allowed':>10} {'ratio':>9} "
                 f"{'nan':>5} {'inf':>5} {'rms ratio':>10}  where (worst)"]
        for t in self.tensors.values():
            lines.append(f"{t.name:<12} {'yes' if t.holds else 'NO':<5} {t.worst_error:>10.3e} "
                         f"{t.allowed:>10.3e} {t.ratio:>9.3g} {t.nan:>5} {t.inf:>5} "
                         f"{t.rms_ratio:>10.3e}  {t.note or t.where or ''}")
        if self.artifacts:
            lines.append(f"dump and report: {self.artifacts} ({', '.join(sorted(self.files))})")
            lines.append(f"replay: {self.replay}")
        lines.append(f"redraw: {self.redraw}")
        return "\n".join(lines)

    def assert_holds(self):
        """Raises AssertionError with the summary table and the replay command unless every
        tensor holds."""
        if not self.holds:
            raise AssertionError("\n" + self.summary())
        return self

    def __repr__(self):
        return f"<ruleproof.Verdict {self.rule} {'holds' if self.holds else 'FAILS'}>"


# --- the call ----------------------------------------------------------------------------------

@dataclass
class _Call:
    tensors: Dict[str, torch.Tensor]  # what the dump holds, by check-dump's names
    metadata: Dict[str, str]
    missing_grads: List[str]  # gradients the rule's inputs should have and the kernel gave none
    words: str
    redraw: str


def _rule_info(rule, binary):
    known = engine.rules(binary)
    if rule not in known:
        raise KernelInputError(f"rule: '{rule}' is not a rule check-dump judges; known: "
                               f"{', '.join(known)}")
    return known[rule]


def _expect_dtype(dtype):
    if dtype not in _JUDGED_DTYPES:
        raise KernelInputError(f"dtype: {dtype} cannot be judged: the precision policies model "
                               "kernels of bf16, fp16 and fp32 inputs")


def _expect_shape(what, t, shape):
    if not isinstance(t, torch.Tensor):
        raise KernelInputError(f"fn: returned {what} as {type(t).__name__}, not a tensor")
    if tuple(t.shape) != tuple(shape):
        raise KernelInputError(f"fn: returned {what} of shape {list(t.shape)}, expected "
                               f"{list(shape)}")
    if t.dtype not in _JUDGED_DTYPES:
        raise KernelInputError(f"fn: returned {what} in {t.dtype}; a dump holds bf16, fp16 "
                               "or fp32")


def _expect_offsets(cu_seqlens, B, T):
    if cu_seqlens is None:
        return None
    cu = [int(x) for x in (cu_seqlens.tolist() if isinstance(cu_seqlens, torch.Tensor)
                           else cu_seqlens)]
    if B != 1:
        raise KernelInputError(f"B: {B}; with cu_seqlens the sequences lie in one batch row, B=1")
    if len(cu) < 2 or cu[0] != 0 or cu[-1] != T or any(b < a for a, b in zip(cu, cu[1:])):
        raise KernelInputError(f"cu_seqlens: {cu} must rise from 0 to T={T}")
    return cu


def _expect_sizes(**sizes):
    for name, n in sizes.items():
        if not isinstance(n, int) or n < 1:
            raise KernelInputError(f"{name}: {n!r} is not a whole number of at least 1")


def _given_inputs(inputs, info, dtype):
    """A user's own inputs, checked: q, k, v, the gate (and beta, a, b) present, finite, gates
    not positive; sizes read from them."""
    names = ["q", "k", "v", info["gate"]] + (["beta"] if info["beta"] else []) + \
        (["a", "b"] if info["a_b"] else [])
    for n in names:
        if n not in inputs:
            raise KernelInputError(f"inputs: {n} missing ({info['name']} takes it)")
    for n, t in inputs.items():
        if t is None:
            continue
        if not torch.isfinite(t).all():
            raise KernelInputError(f"inputs: {n} holds NaN or infinite values")
    if (inputs[info["gate"]] > 0).any():
        raise KernelInputError(f"inputs: {info['gate']} has positive log-gates (a decay above 1)")
    B, T, H, K = inputs["q"].shape
    V = inputs["v"].shape[-1]
    if inputs["q"].dtype != dtype:
        raise KernelInputError(f"dtype: {dtype}, but inputs' q is {inputs['q'].dtype}")
    return B, T, H, K, V


def _call(fn, rule, *, B=1, T=256, H=2, K=64, V=64, dtype=torch.bfloat16, device=None,
          recipe="fla", seed=0, cu_seqlens=None, chunk_size=64, scale=None, initial_state=True,
          output_final_state=True, backward=True, guard=True, inputs=None, binary=None,
          **kernel_kwargs):
    """Draws the inputs, calls fn forward (and backward) and gathers what the dump holds."""
    if not callable(fn):
        raise KernelInputError(f"fn: {fn!r} is not callable")
    info = _rule_info(rule, binary)
    _expect_dtype(dtype)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if inputs is not None:
        h0_given = inputs.get("initial_state")
        inputs = {n: t for n, t in inputs.items() if n != "initial_state"}
        B, T, H, K, V = _given_inputs(inputs, info, dtype)
        initial_state = h0_given is not None
    _expect_sizes(B=B, T=T, H=H, K=K, V=V, chunk_size=chunk_size)
    cu = _expect_offsets(cu_seqlens, B, T)
    N = B if cu is None else len(cu) - 1
    drawn = recipes.draw(rule, recipe, seed, B, T, H, K, V, dtype, cu, initial_state,
                         output_final_state)
    if inputs is not None:  # the user's tensors; do and dht still drawn from the seed
        drawn.inputs = {n: t.detach().cpu() for n, t in inputs.items()}
        drawn.initial_state = None if h0_given is None else h0_given.detach().cpu()
    if drawn.initial_state is not None and tuple(drawn.initial_state.shape) != (N, H, K, V):
        raise KernelInputError(f"inputs: initial_state of shape {list(drawn.initial_state.shape)}"
                               f", expected {[N, H, K, V]}")
    x = recipes.guarded(drawn, chunk_size, device, guard)
    scale = K ** -0.5 if scale is None else float(scale)
    leaves = {n: t.requires_grad_(backward and t.is_floating_point())
              for n, t in x.inputs.items()}
    h0 = None if x.initial_state is None else x.initial_state.requires_grad_(backward)
    kwargs = dict(leaves, scale=scale, initial_state=h0, output_final_state=output_final_state)
    if cu is not None:
        kwargs["cu_seqlens"] = torch.tensor(cu, dtype=torch.long, device=device)
    try:
        takes = inspect.signature(fn).parameters
        if "chunk_size" in takes and "chunk_size" not in kernel_kwargs:
            kwargs["chunk_size"] = chunk_size
    except (TypeError, ValueError):  # a builtin or an object without a signature
        pass
    kwargs.update(kernel_kwargs)
    try:
        result = fn(**kwargs)
    except Exception as e:
        raise KernelRaised(f"fn raised {type(e).__name__} on the forward call: {e}") from e
    o, ht = (result[0], result[1]) if isinstance(result, (tuple, list)) and len(result) == 2 \
        else (result, None)
    _expect_shape("o", o, (B, T, H, V))
    if output_final_state:
        if ht is None:
            raise KernelInputError("fn: returned no final state, though output_final_state=True")
        _expect_shape("final_state", ht, (N, H, K, V))
    else:
        ht = None
    tensors = {n: t.detach() for n, t in leaves.items()}
    tensors["o"] = o.detach()
    if ht is not None:
        tensors["final_state"] = ht.detach()
    if h0 is not None:
        tensors["initial_state"] = h0.detach()
    missing = []
    if backward:
        outs, grads_in = [o], [x.do]
        if ht is not None:
            outs.append(ht), grads_in.append(x.dht)
        if not any(t.requires_grad for t in outs):
            raise KernelInputError("fn: its outputs carry no gradient (requires_grad is False): "
                                   "pass backward=False to judge the forward pass alone")
        try:
            torch.autograd.backward([t for t in outs if t.requires_grad],
                                    [g for t, g in zip(outs, grads_in) if t.requires_grad])
        except Exception as e:
            raise KernelRaised(f"fn raised {type(e).__name__} on the backward pass: {e}") from e
        tensors["do"] = x.do
        if ht is not None:
            tensors["dht"] = x.dht
        for n, t in list(leaves.items()) + [("initial_state", h0)]:
            if t is None or not t.is_floating_point():
                continue
            name = "dh0" if n == "initial_state" else "d" + n
            if t.grad is None:
                missing.append(name)
            else:
                tensors[name] = t.grad.detach()
    if cu is not None:
        tensors["cu_seqlens"] = torch.tensor(cu, dtype=torch.int64)
    metadata = {"scale": repr(scale), "chunk_size": str(chunk_size), "rule": rule,
                "recipe": recipe, "seed": str(seed)}
    shape = f"B={B} T={T} H={H} K={K} V={V}" + (f" cu_seqlens={cu}" if cu else "")
    words = (f"{_JUDGED_DTYPES[dtype]}, {shape}, chunk {chunk_size}, recipe {recipe}, seed "
             f"{seed}" + ("" if initial_state else ", no h0"))
    redraw = (f"ruleproof.check(fn, {rule!r}, B={B}, T={T}, H={H}, K={K}, V={V}, "
              f"dtype={dtype}, recipe={recipe!r}, seed={seed}, chunk_size={chunk_size}"
              + (f", cu_seqlens={cu}" if cu else "")
              + ("" if initial_state else ", initial_state=False") + ")")
    return _Call(tensors, metadata, missing, words, redraw)


def dump(path, fn, rule, **options):
    """Calls fn as check does and writes the dump check-dump reads to `path` (a temporary file,
    then a rename: never half-written); returns the path. Options: those of check."""
    for unused in ("policy", "artifacts", "keep", "threads", "verbose"):
        options.pop(unused, None)
    call = _call(fn, rule, **options)
    write_safetensors(path, call.tensors, call.metadata)
    return path


def _artifacts_root(artifacts):
    return os.path.abspath(artifacts or os.environ.get("RULEPROOF_ARTIFACTS")
                           or "ruleproof-artifacts")


def _number(x):
    if x is None:
        return math.nan
    if isinstance(x, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(x, math.nan)
    return float(x)


def _tensor_verdict(result, chunk_size):
    d = result.get("details", {})
    w = result.get("where") or {}
    where = None
    if w.get("index") is not None:
        t = w.get("time")
        where = Where(tuple(w["index"]), w.get("batch"), t, w.get("head"),
                      None if t is None else t // chunk_size)
    truth_rms = _number(d.get("truth_rms"))
    kernel_rms = _number(d.get("kernel_rms_error"))
    finite = d.get("finite", True)
    return TensorVerdict(
        name=result["output"], holds=result["verdict"] == "holds",
        worst_error=_number(result.get("worst_error")),
        allowed=_number(result.get("allowed_error")),
        ratio=_number(result.get("error_over_allowed")), where=where,
        nan=int(d.get("nan", 0)), inf=int(d.get("inf", 0)),
        rms_ratio=(kernel_rms / truth_rms if truth_rms > 0 else
                   (0.0 if kernel_rms == 0 else math.inf)) if finite else math.inf,
        twin_error=_number(d.get("twin_error")), dtype=result.get("scalar", ""))


def check(fn, rule, *, policy=None, artifacts=None, keep=False, threads=None, verbose=False,
          name=None, **options):
    """Calls the kernel `fn` of `rule` on drawn inputs, forward and backward, and judges every
    output and gradient with `ruleproof check-dump` under the precision policy of its dtype.

    Shapes and inputs: B, T, H, K, V (defaults 1, 256, 2, 64, 64), dtype (torch.bfloat16;
    torch.float16 and torch.float32 too), device (cuda when there is one), recipe ("fla";
    ruleproof.RECIPES), seed (0: the same seed draws the same inputs), cu_seqlens (a list of
    offsets, with B=1), chunk_size (the kernel's, 64: the twin chunks as it does), scale
    (K ** -0.5), initial_state (True: h0 drawn), output_final_state (True), backward (True),
    guard (True: NaN after every input buffer), inputs (a dict of your own tensors instead of
    drawn ones). Other keywords go to fn.

    Judging: policy (None: tensor-core for 16-bit inputs, tf32 for fp32 on a GPU, fp32 on the
    CPU), binary (the `ruleproof` command; see ruleproof.find_binary), threads (check-dump's),
    verbose (print check-dump's progress lines as they come).

    Files: the dump, check_dump.json and its HTML page and summary are written to a temporary
    folder, and moved to `artifacts`/`name` (default ./ruleproof-artifacts, or
    $RULEPROOF_ARTIFACTS; name: rule, dtype, sizes, recipe and seed) when a tensor fails or
    keep=True; otherwise removed. Returns a Verdict."""
    dtype = options.get("dtype", torch.bfloat16)
    device = options.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    options["device"] = device
    policy = policy or default_policy(dtype, device)
    call = _call(fn, rule, **options)  # every argument checked, the kernel called
    work = tempfile.mkdtemp(prefix="ruleproof-check-")
    try:
        write_safetensors(os.path.join(work, "dump.safetensors"), call.tensors, call.metadata)
        report = _engine_in(work, rule, policy, options.get("binary"), threads, verbose)
        chunk_size = options.get("chunk_size", 64)
        judged = {r["output"]: _tensor_verdict(r, chunk_size) for r in report["results"]}
        order = [n for n in _ORDER if n in judged] + sorted(set(judged) - set(_ORDER))
        tensors = {n: judged[n] for n in order}
        for g in call.missing_grads:
            tensors[g] = TensorVerdict(g, False, math.nan, math.nan, math.inf, None, 0, 0,
                                       math.inf, math.nan, "",
                                       note="the kernel gave no gradient for this input")
        label = name or _label(rule, call)
        verdict = Verdict(rule, _JUDGED_DTYPES[dtype], policy, call.words, tensors,
                          replay="", redraw=call.redraw)
        if keep or not verdict.holds:
            folder = os.path.join(_artifacts_root(artifacts), label)
            _move(work, folder)
            verdict.artifacts = folder
            verdict.files = {k: os.path.join(folder, f) for k, f in (
                ("dump", "dump.safetensors"), ("report", "check_dump.json"),
                ("html", "check_dump.html"), ("summary", "check_dump.summary.md"))
                if os.path.exists(os.path.join(folder, f))}
            verdict.replay = (f"{shlex.quote(engine.find_binary(options.get('binary')))} "
                              f"check-dump {shlex.quote(verdict.files['dump'])} --rule {rule} "
                              f"--policy {policy}")
        return verdict
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _label(rule, call):
    m = call.metadata
    t = call.tensors["q"]
    B, T, H, K = t.shape
    V = call.tensors["v"].shape[-1]
    cu = "" if "cu_seqlens" not in call.tensors else \
        "-cu" + ".".join(str(int(x)) for x in call.tensors["cu_seqlens"])
    return (f"{rule}-{_JUDGED_DTYPES[t.dtype]}-B{B}-T{T}-H{H}-K{K}-V{V}{cu}-{m['recipe']}"
            f"-seed{m['seed']}")


def _engine_in(folder, rule, policy, binary, threads, verbose):
    """check-dump on folder/dump.safetensors, run inside `folder` so that the report's replay
    command names the dump by a path that stays true when the folder moves."""
    return engine.check_dump("dump.safetensors", rule, "check_dump.json", policy, binary, threads,
                             progress=print if verbose else None, cwd=folder)


def _move(work, folder):
    """Moves the files of `work` into `folder` (replacing an earlier run's), through a sibling
    temporary folder and a rename, so that `folder` is whole or absent."""
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".staging-", dir=os.path.dirname(folder))
    for f in os.listdir(work):
        shutil.move(os.path.join(work, f), os.path.join(staging, f))
    if os.path.exists(folder):
        shutil.rmtree(folder)
    os.rename(staging, folder)
