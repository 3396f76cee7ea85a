"""Bad input raises a clear exception that names the argument at fault, and leaves nothing
behind: no artifacts folder, no temporary folder, no half-written dump."""
import math
import os
import tempfile

import pytest
import torch

import ruleproof
from kernels import chunk_gla


@pytest.fixture
def nothing_left(tmp_path, monkeypatch):
    """The artifacts folder a bad call is given, checked absent after the test, with the
    temporary folder (this test's own, so that checks running beside it do not count) empty."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    yield str(tmp_path / "artifacts")
    assert not (tmp_path / "artifacts").exists()
    assert os.listdir(scratch) == []


def check(fn=chunk_gla, rule="gla", **options):
    return ruleproof.check(fn, rule, T=70, **options)


def test_an_unknown_rule_names_the_rule_and_the_known_ones(nothing_left):
    with pytest.raises(ruleproof.KernelInputError, match="rule: 'retnet'.*gla.*gated_oja"):
        check(rule="retnet", artifacts=nothing_left)


def test_a_kernel_returning_the_wrong_shape_is_named(nothing_left):
    transposed = lambda **kw: (chunk_gla(**kw)[0].transpose(1, 2), chunk_gla(**kw)[1])
    with pytest.raises(ruleproof.KernelInputError, match=r"fn: returned o of shape \[1, 2, 70"):
        check(transposed, artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="fn: returned no final state"):
        check(lambda **kw: (chunk_gla(**kw)[0], None), artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="fn: returned o in torch.float64"):
        check(lambda **kw: (chunk_gla(**kw)[0].double(), chunk_gla(**kw)[1]),
              artifacts=nothing_left)


class _FailsBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("no backward here")


def test_a_kernel_that_raises_forward_or_backward_is_named_with_its_exception(nothing_left):
    def raises(**kw):
        raise IndexError("tile out of range")
    with pytest.raises(ruleproof.KernelRaised, match="fn raised IndexError on the forward call"
                       ) as e:
        check(raises, artifacts=nothing_left)
    assert isinstance(e.value.__cause__, IndexError)
    with pytest.raises(ruleproof.KernelRaised, match="fn raised ValueError on the backward pass"):
        check(lambda **kw: (_FailsBackward.apply(chunk_gla(**kw)[0]), chunk_gla(**kw)[1]),
              artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="outputs carry no gradient"):
        check(lambda **kw: tuple(t.detach() for t in chunk_gla(**kw)), artifacts=nothing_left)


def test_a_dtype_the_policy_cannot_judge_is_named(nothing_left):
    with pytest.raises(ruleproof.KernelInputError, match="dtype: torch.float64 cannot be judged"):
        check(dtype=torch.float64, artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="policy"):  # the engine's refusal
        check(dtype=torch.float32, policy="tensor-core", artifacts=nothing_left)


def test_a_missing_binary_is_named_with_where_it_was_looked_for(nothing_left, monkeypatch):
    with pytest.raises(ruleproof.BinaryNotFound, match="binary: .*/nowhere/ruleproof"):
        check(binary="/nowhere/ruleproof", artifacts=nothing_left)
    monkeypatch.setenv("RULEPROOF", "/nowhere/either")
    with pytest.raises(ruleproof.BinaryNotFound, match=r"\$RULEPROOF: /nowhere/either"):
        check(artifacts=nothing_left)


def test_bad_sizes_and_offsets_are_named(nothing_left):
    with pytest.raises(ruleproof.KernelInputError, match="B: 2; with cu_seqlens"):
        ruleproof.check(chunk_gla, "gla", B=2, T=70, cu_seqlens=[0, 30, 70],
                        artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="cu_seqlens: .* from 0 to T=70"):
        check(cu_seqlens=[0, 50, 40, 70], artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="K: 0 is not"):
        check(K=0, artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="recipe: 'gentle'"):
        check(recipe="gentle", artifacts=nothing_left)


def test_given_inputs_with_nan_or_positive_gates_are_named(nothing_left):
    B, T, H, K = 1, 70, 2, 16
    x = {n: torch.rand(B, T, H, K).to(torch.bfloat16) for n in "qkv"}
    x["g"] = -torch.rand(B, T, H, K)
    assert check(inputs=x, artifacts=nothing_left, keep=False).holds
    with pytest.raises(ruleproof.KernelInputError, match="inputs: k holds NaN"):
        check(inputs=dict(x, k=x["k"].clone().fill_(math.nan)), artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="inputs: g has positive log-gates"):
        check(inputs=dict(x, g=-x["g"]), artifacts=nothing_left)
    with pytest.raises(ruleproof.KernelInputError, match="inputs: g missing"):
        check(inputs={n: x[n] for n in "qkv"}, artifacts=nothing_left)
