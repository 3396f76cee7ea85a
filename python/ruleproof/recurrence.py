"""The six rules check-dump judges, step by step: S_t from S_{t-1} and row t of the inputs, in
whatever dtype the inputs have. In float64, differentiated by autograd, it is an independent judge
of a dump (tools/fla_dumps.py --judge); in fp32 it is the plain recurrent kernel the package's
own tests check.
"""
import torch


def step(rule, S, x):
    """One step of the recurrence on states S [N?, H, K, V]; x holds one row of each input."""
    if rule == "simple_gla":
        return S * x["g"].exp()[..., None, None] + x["k"][..., :, None] * x["v"][..., None, :]
    if rule == "gla":
        return S * x["g"].exp()[..., :, None] + x["k"][..., :, None] * x["v"][..., None, :]
    if rule in ("gated_delta_rule", "kda"):
        decay = x["g"].exp()[..., None, None] if rule == "gated_delta_rule" else \
            x["g"].exp()[..., :, None]
        X = S * decay  # S_t = X + beta k (v - X^T k)^T, X the decayed state
        r = x["v"] - torch.einsum("hkv,hk->hv", X, x["k"])
        return X + x["beta"][..., None, None] * x["k"][..., :, None] * r[..., None, :]
    if rule == "dplr_fla":  # S_t = exp(gk) . S + b (a^T S) + k v^T
        aS = torch.einsum("hk,hkv->hv", x["a"], S)
        return (S * x["gk"].exp()[..., :, None] + x["b"][..., :, None] * aS[..., None, :]
                + x["k"][..., :, None] * x["v"][..., None, :])
    if rule == "gated_oja":  # X = S Diag(exp(gv)), S_t = X + beta (k - X v) v^T
        X = S * x["gv"].exp()[..., None, :]
        r = x["k"] - torch.einsum("hkv,hv->hk", X, x["v"])
        return X + x["beta"][..., None, None] * r[..., :, None] * x["v"][..., None, :]
    raise ValueError(rule)


def recurrence(rule, inputs, scale, h0, cu_seqlens):
    """o [B, T, H, V] and the final states [N, H, K, V], one step at a time."""
    q = inputs["q"]
    B, T, H, K = q.shape
    V = inputs["v"].shape[-1]
    bounds = [(b, 0, T) for b in range(B)] if cu_seqlens is None else \
        [(0, int(cu_seqlens[n]), int(cu_seqlens[n + 1])) for n in range(len(cu_seqlens) - 1)]
    rows, finals = [], []
    for n, (b, bos, eos) in enumerate(bounds):
        S = h0[n] if h0 is not None else q.new_zeros(H, K, V)
        for t in range(bos, eos):
            S = step(rule, S, {name: x[b, t] for name, x in inputs.items()})
            rows.append((b, t, torch.einsum("hkv,hk->hv", S, scale * q[b, t])))
        finals.append(S)
    o = [[None] * T for _ in range(B)]
    for b, t, row in rows:
        o[b][t] = row
    return torch.stack([torch.stack(r) for r in o]), torch.stack(finals)
