"""The cases a kernel is checked on: sizes, dtype, recipe and seed, each with an id pytest's -k
can select by.

SHAPES are the shapes flash-linear-attention's tests run and those they miss: whole chunks with
B > 1, T not a multiple of the chunk, and a varlen batch holding an empty sequence at K = V = 128.
"""
import itertools
from dataclasses import dataclass
from typing import Optional, Tuple

import torch

from .recipes import RECIPES

_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}

SHAPES = {
    "whole_chunks": dict(B=2, T=256, H=2, K=64, V=64),
    "partial_chunk": dict(B=1, T=300, H=4, K=64, V=64),
    "varlen_empty_K128": dict(B=1, T=300, H=2, K=128, V=128, cu_seqlens=(0, 100, 100, 300)),
}


@dataclass(frozen=True)
class Case:
    """One call's sizes, dtype, recipe and seed."""
    rule: str
    B: int = 1
    T: int = 256
    H: int = 2
    K: int = 64
    V: int = 64
    dtype: torch.dtype = torch.bfloat16
    recipe: str = "fla"
    seed: int = 0
    cu_seqlens: Optional[Tuple[int, ...]] = None
    chunk_size: int = 64
    initial_state: bool = True

    @property
    def id(self):
        varlen = "" if self.cu_seqlens is None else \
            "-cu" + ".".join(str(x) for x in self.cu_seqlens)
        return (f"{self.rule}-{_DTYPE_NAMES.get(self.dtype, str(self.dtype))}-B{self.B}-T{self.T}"
                f"-H{self.H}-K{self.K}-V{self.V}{varlen}-{self.recipe}-seed{self.seed}"
                + ("" if self.initial_state else "-no_h0"))

    def options(self):
        """The keywords of ruleproof.check for this case (with its rule)."""
        return dict(rule=self.rule, B=self.B, T=self.T, H=self.H, K=self.K, V=self.V,
                    dtype=self.dtype, recipe=self.recipe, seed=self.seed,
                    cu_seqlens=None if self.cu_seqlens is None else list(self.cu_seqlens),
                    chunk_size=self.chunk_size, initial_state=self.initial_state,
                    name=self.id)


def cases(rule, shapes=None, recipes=("fla", "strong", "head_gates"), dtypes=(torch.bfloat16,),
          seeds=(0,), chunk_size=64, initial_state=True):
    """Every combination of shapes (names of SHAPES or dicts of sizes; default all of SHAPES),
    recipes, dtypes and seeds, as Cases."""
    shapes = list(SHAPES) if shapes is None else shapes
    for r in recipes:
        if r not in RECIPES:
            raise ValueError(f"recipes: '{r}' is not a recipe; known: {', '.join(RECIPES)}")
    out = []
    for s, recipe, dtype, seed in itertools.product(shapes, recipes, dtypes, seeds):
        sizes = dict(SHAPES[s]) if isinstance(s, str) else dict(s)
        if sizes.get("cu_seqlens") is not None:
            sizes["cu_seqlens"] = tuple(sizes["cu_seqlens"])
        out.append(Case(rule, dtype=dtype, recipe=recipe, seed=seed, chunk_size=chunk_size,
                        initial_state=initial_state, **sizes))
    return out


def hard_cases(rule, dtypes=(torch.bfloat16,), seed=0):
    """The cases flash-linear-attention's tests miss: strong gates with T not a multiple of the
    chunk, gate strengths that differ per head, a varlen batch with an empty sequence at
    K = V = 128 (strong and as its tests draw it)."""
    grid = [("partial_chunk", "strong"), ("partial_chunk", "head_gates"),
            ("varlen_empty_K128", "strong"), ("varlen_empty_K128", "fla")]
    return [c for s, r in grid for c in cases(rule, [s], [r], dtypes, [seed])]
