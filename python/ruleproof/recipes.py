"""Inputs for a kernel's call, in flash-linear-attention's layout and keyword names.

Each recipe starts from flash-linear-attention's own test recipe for the rule (tests/ops/
test_<rule>.py at bc3b101: positive rand or randn q, k, v; L2-normalised keys for the delta rules;
g = logsigmoid(...) / normaliser, some gates masked to 0; beta = sigmoid; h0 drawn) and changes the
gates where its tests do not go:

    fla         its recipe as its tests run it (normaliser 1)
    masked      half the gates masked to 0 (log-gate 0: no decay), as its masked tests
    strong      gates 10 times stronger (normaliser 0.1): decays that underflow within a chunk
    weak        gates 10 times weaker (normaliser 10): states that grow over the sequence
    head_gates  each head its own strength, from 0.1 to 10 times the recipe's, and the first
                eight rows of head 0 at log-gate -5

Shapes with T not a multiple of the chunk, varlen batches with an empty sequence and K > 64 are
the cases' business (ruleproof.cases), not the recipes'. The same seed draws the same inputs.
Every input buffer is followed by a guard band of NaN (one chunk of rows; one sequence's state
after initial_state): a kernel that reads past the end of a tensor reads NaN, and its outputs show
it.
"""
import math
from dataclasses import dataclass
from typing import Dict, Optional

import torch
import torch.nn.functional as F

from .errors import KernelInputError

RECIPES = ("fla", "masked", "strong", "weak", "head_gates")
_NORMALISER = {"fla": 1.0, "masked": 1.0, "strong": 0.1, "weak": 10.0, "head_gates": 1.0}


def fla_inputs(rule, gen, B, T, H, K, V, N, dtype, normaliser=1.0, mask_p=0.0):
    """flash-linear-attention's test recipe for `rule` (its tests/ops/test_<rule>.py at bc3b101),
    drawn from the CPU generator `gen`: the inputs by keyword name, and h0 [N, H, K, V]."""
    rand = lambda *s, dtype=torch.float32: torch.rand(*s, generator=gen).to(dtype)
    randn = lambda *s, dtype=torch.float32: torch.randn(*s, generator=gen).to(dtype)
    dt = dtype
    x = {}
    if rule == "simple_gla":
        x["q"], x["k"], x["v"] = randn(B, T, H, K, dtype=dt), randn(B, T, H, K, dtype=dt), \
            randn(B, T, H, V, dtype=dt)
        x["g"] = F.logsigmoid(randn(B, T, H)) / normaliser
        h0 = rand(N, H, K, V)
    elif rule == "gla":
        x["q"], x["k"], x["v"] = rand(B, T, H, K, dtype=dt), rand(B, T, H, K, dtype=dt), \
            rand(B, T, H, V, dtype=dt)
        x["g"] = (F.logsigmoid(rand(B, T, H, K, dtype=dt).float()) / normaliser).to(dt)
        h0 = rand(N, H, K, V)
    elif rule in ("gated_delta_rule", "kda"):
        x["q"] = F.normalize(rand(B, T, H, K, dtype=dt).float(), p=2, dim=-1).to(dt)
        x["k"] = F.normalize(rand(B, T, H, K, dtype=dt).float(), p=2, dim=-1).to(dt)
        x["v"] = rand(B, T, H, V, dtype=dt)
        shape = (B, T, H) if rule == "gated_delta_rule" else (B, T, H, K)
        gate = rand(*shape) if rule == "gated_delta_rule" else randn(*shape)
        gate = F.logsigmoid(gate) / normaliser
        x["g"] = gate * (rand(*shape) > mask_p)
        x["beta"] = rand(B, T, H).sigmoid() if rule == "gated_delta_rule" else \
            randn(B, T, H, dtype=dt).float().sigmoid().to(dt)
        h0 = randn(N, H, K, V)
    elif rule == "dplr_fla":
        x["q"], x["k"], x["v"] = randn(B, T, H, K, dtype=dt), randn(B, T, H, K, dtype=dt), \
            randn(B, T, H, V, dtype=dt)
        x["a"] = F.normalize(rand(B, T, H, K, dtype=dt).float(), p=2, dim=-1).to(dt)
        x["b"] = -x["a"]
        gk = F.logsigmoid(randn(B, T, H, K)) / normaliser
        x["gk"] = gk * (rand(B, T, H, K) > mask_p)
        h0 = randn(N, H, K, V)
    elif rule == "gated_oja":
        x["q"], x["k"] = rand(B, T, H, K, dtype=dt), rand(B, T, H, K, dtype=dt)
        x["v"] = F.normalize(rand(B, T, H, V), p=2, dim=-1).to(dt)
        x["beta"] = rand(B, T, H).sigmoid()
        gv = F.logsigmoid(rand(B, T, H, V)) / normaliser
        x["gv"] = gv * (rand(B, T, H, V) > mask_p)
        h0 = randn(N, H, K, V)
    else:
        raise ValueError(f"rule: no flash-linear-attention recipe for '{rule}'")
    return x, h0


#: The rules whose flash-linear-attention recipe masks the gates itself (mask_p).
_MASKED_IN_RECIPE = ("gated_delta_rule", "kda", "dplr_fla", "gated_oja")


def _gate_name(x):
    return next(n for n in ("g", "gk", "gv") if n in x)


def head_strengths(H):
    """The factor of each head's log-gates in the recipe head_gates: 0.1 to 10, geometrically."""
    return [10.0 ** (-1.0 + 2.0 * h / (H - 1)) if H > 1 else 1.0 for h in range(H)]


@dataclass
class Drawn:
    """A call's inputs (by keyword), h0 (None when the call takes none), and the upstream
    gradients do [B, T, H, V] and dht [N, H, K, V]."""
    inputs: Dict[str, torch.Tensor]
    initial_state: Optional[torch.Tensor]
    do: torch.Tensor
    dht: Optional[torch.Tensor]


def draw(rule, recipe, seed, B, T, H, K, V, dtype, cu_seqlens=None, initial_state=True,
         final_state=True):
    """The inputs of one call, on the CPU, without guard bands (guarded() adds them)."""
    if recipe not in RECIPES:
        raise KernelInputError(f"recipe: '{recipe}' is not a recipe; known: "
                               f"{', '.join(RECIPES)}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    mask_p = 0.5 if recipe == "masked" else 0.0
    x, h0 = fla_inputs(rule, gen, B, T, H, K, V, N, dtype, _NORMALISER[recipe], mask_p)
    do = torch.randn(B, T, H, V, generator=gen).to(dtype)
    dht = torch.randn(N, H, K, V, generator=gen)
    gate = _gate_name(x)
    if recipe == "masked" and rule not in _MASKED_IN_RECIPE:
        x[gate] = (x[gate].float() * (torch.rand(x[gate].shape, generator=gen) > 0.5)).to(
            x[gate].dtype)
    if recipe == "head_gates":
        g = x[gate].float()
        shape = [1, 1, H] + [1] * (g.dim() - 3)
        g = g * torch.tensor(head_strengths(H)).view(shape)
        g[:, : min(8, T), 0] = -5.0
        x[gate] = g.to(x[gate].dtype)
    return Drawn(x, h0 if initial_state else None, do, dht if final_state else None)


def guard_rows(t, rows):
    """The guard band's length after `t`: `rows` rows of its trailing dimensions (dims from 2 on
    for [B, T, ...] tensors)."""
    return rows * math.prod(t.shape[2:]) if t.dim() >= 3 else rows


def with_guard(t, guard, device):
    """`t` copied onto `device` into the front of a buffer `guard` elements longer, the rest NaN:
    the same values and shape, contiguous, with NaN right after its last element in memory."""
    buf = torch.full((t.numel() + guard,), math.nan, dtype=t.dtype, device=device)
    view = buf[: t.numel()].view(t.shape)
    view.copy_(t)
    return view


def guarded(drawn, chunk_size, device, guard=True):
    """The drawn tensors on `device`, each followed by its guard band when `guard`: one chunk of
    rows after the [B, T, ...] tensors, one sequence's state after initial_state and dht."""
    def place(t, guard_length):
        if t is None:
            return None
        return with_guard(t, guard_length if guard else 0, device)

    state = lambda t: None if t is None else place(t, t[0].numel() if t.shape[0] else 1)
    inputs = {n: place(t, guard_rows(t, chunk_size)) for n, t in drawn.inputs.items()}
    return Drawn(inputs, state(drawn.initial_state), place(drawn.do, guard_rows(drawn.do,
                 chunk_size)), state(drawn.dht))
