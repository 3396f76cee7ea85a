"""Write a safetensors dump of one kernel call, for `ruleproof check-dump FILE --rule RULE`.

    from dump_kernel import dump_kernel
    from fla.ops.gla import chunk_gla
    dump_kernel("gla.safetensors", chunk_gla, q=q, k=k, v=v, g=g, initial_state=h0,
                scale=q.shape[-1] ** -0.5)

The kernel is called with the given keyword arguments (flash-linear-attention's names: q, k, v,
g, gk (dplr) or gv (gated_oja), beta, a, b, initial_state, scale, cu_seqlens, chunk_size) and
output_final_state=True; it must return (o, final_state). With backward=True, random upstream
gradients do and dht are drawn and the kernel's gradients of <do, o> + <dht, final_state> are
stored as dq, dk, dv, dg (dgk, dgv), dbeta, da, db, dh0.
Tensors keep their dtype (bf16, fp16 or fp32); cu_seqlens is stored as the I64 tensor it is;
scale and the kernel's chunk size (chunk_size=..., or kernel_chunk_size=... when the kernel
takes none; default 64) go into the metadata, where check-dump reads them.
"""
import torch

from safetensors_io import write_safetensors

INPUTS = ("q", "k", "v", "g", "gk", "gv", "beta", "a", "b", "initial_state")


def dump_kernel(path, kernel, backward=True, seed=0, kernel_chunk_size=None, **kwargs):
    inputs = {n: kwargs.pop(n).detach().clone().requires_grad_(backward)
              for n in INPUTS if kwargs.get(n) is not None}
    o, final_state = kernel(**inputs, **kwargs, output_final_state=True)
    tensors = dict(inputs, o=o, final_state=final_state)
    if backward:
        gen = torch.Generator(device=o.device).manual_seed(seed)
        do = torch.randn(o.shape, generator=gen, device=o.device).to(o.dtype)
        dht = torch.randn(final_state.shape, generator=gen, device=o.device).to(final_state.dtype)
        ((o * do).sum() + (final_state * dht).sum()).backward()
        tensors.update(do=do, dht=dht)
        grad_names = {"initial_state": "dh0"}
        for n, x in inputs.items():
            if x.grad is not None:
                tensors[grad_names.get(n, "d" + n)] = x.grad
    metadata = {"chunk_size": str(kwargs.get("chunk_size") or kernel_chunk_size or 64)}
    if kwargs.get("scale") is not None:
        metadata["scale"] = repr(float(kwargs["scale"]))
    if kwargs.get("cu_seqlens") is not None:
        tensors["cu_seqlens"] = kwargs["cu_seqlens"].to(torch.int64)
    write_safetensors(path, tensors, metadata)
