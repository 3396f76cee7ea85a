"""Kernels in plain PyTorch, called as flash-linear-attention's chunk kernels are, for the
package's own tests: a correct chunkwise GLA kernel (in fp32, or rounding every product's
operands and the state it carries to the input dtype, as a tensor-core kernel does), the same
with one bug each, and the recurrent form of every rule.
"""
import torch

from ruleproof.recurrence import recurrence

#: The bugs chunk_gla can carry, each a mistake a chunkwise kernel's author makes.
BUGS = {
    "dropped_diagonal": "the intra-chunk scores drop their diagonal term (j < i for j <= i)",
    "boundary_off_by_one": "the state carried to the next chunk decays by the cumulative gate "
                           "of the chunk's second-to-last row, not its last",
    "ignores_h0": "the initial state is never read: every sequence starts from zero",
    "reads_past_T": "the last, partial chunk is read whole: rows past the sequence's end",
}


def _sequences(B, T, cu_seqlens):
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    cu = [int(x) for x in cu_seqlens.tolist()]
    return [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]


def _rows(x, b, start, C, end, read_past):
    """Rows start .. end of batch row b, [rows, H, ...] in fp32; with read_past, C rows whatever
    end is (the bug reads_past_T: straight from the tensor's memory)."""
    if read_past and end - start < C:
        stride = x.stride()
        offset = x.storage_offset() + b * stride[0] + start * stride[1]
        return torch.as_strided(x, (C,) + tuple(x.shape[2:]), stride[1:], offset).float()
    return x[b, start:end].float()


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False,
              cu_seqlens=None, chunk_size=64, rounded=False, bug=None):
    """GLA, chunk by chunk: for rows i, j of a chunk with cumulative log-gates b (per key),
    o_i = scale q_i^T (Diag(exp(b_i)) S + sum_{j <= i} Diag(exp(b_i - b_j)) k_j v_j^T), and the
    state carried on is Diag(exp(b_C)) S + sum_j Diag(exp(b_C - b_j)) k_j v_j^T. Every exponent
    is <= 0. In fp32; `rounded`: each product's operands rounded to q's dtype first, as a
    tensor-core kernel rounds them."""
    assert bug is None or bug in BUGS, bug
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K ** -0.5 if scale is None else scale
    low = (lambda x: x.to(q.dtype).float()) if rounded else (lambda x: x)
    outs, finals = [], []
    for n, (b, bos, eos) in enumerate(_sequences(B, T, cu_seqlens)):
        S = q.new_zeros(H, K, V, dtype=torch.float32)
        if initial_state is not None and bug != "ignores_h0":
            S = initial_state[n].float()
        rows = []
        for start in range(bos, eos, chunk_size):
            end = min(start + chunk_size, eos)
            read_past = bug == "reads_past_T"
            qc, kc, vc, gc = (_rows(x, b, start, chunk_size, end, read_past) for x in (q, k, v, g))
            c = qc.shape[0]
            g_cum = gc.cumsum(0)  # [c, H, K]
            causal = torch.ones(c, c, dtype=torch.bool, device=q.device).tril(
                -1 if bug == "dropped_diagonal" else 0)
            decay = (g_cum[:, None] - g_cum[None, :]).masked_fill(~causal[..., None, None],
                                                                  float("-inf")).exp()
            A = torch.einsum("ihk,jhk,ijhk->hij", low(qc), low(kc), decay) * scale
            o_c = torch.einsum("hij,jhv->ihv", low(A), low(vc)) + \
                torch.einsum("ihk,hkv->ihv", low(qc * g_cum.exp() * scale), low(S))
            rows.append(o_c[: end - start])
            last = g_cum[-2] if bug == "boundary_off_by_one" and c > 1 else g_cum[-1]
            S = S * last.exp()[..., None] + torch.einsum(
                "jhk,jhv->hkv", low(kc * (last - g_cum).exp()), low(vc))
        outs.append(torch.cat(rows) if rows else q.new_zeros(0, H, V, dtype=torch.float32))
        finals.append(S)
    o = torch.cat(outs)[None] if cu_seqlens is not None else torch.stack(outs)
    return o.to(q.dtype), (torch.stack(finals) if output_final_state else None)


def recurrent(rule):
    """The recurrent form of `rule` as a kernel: one step at a time in fp32, o stored in the input
    dtype, the final state in fp32."""
    gate = {"dplr_fla": "gk", "gated_oja": "gv"}.get(rule, "g")

    def kernel(q, k, v, scale=None, initial_state=None, output_final_state=False,
               cu_seqlens=None, **rest):
        x = {"q": q, "k": k, "v": v, gate: rest[gate]}
        x.update({n: rest[n] for n in ("beta", "a", "b") if n in rest})
        x = {n: t.float() for n, t in x.items()}
        h0 = None if initial_state is None else initial_state.float()
        scale = q.shape[-1] ** -0.5 if scale is None else scale
        o, ht = recurrence(rule, x, scale, h0, None if cu_seqlens is None else cu_seqlens.tolist())
        return o.to(q.dtype), (ht if output_final_state else None)

    kernel.__name__ = f"recurrent_{rule}"
    return kernel
