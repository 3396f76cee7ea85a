"""ruleproof for PyTorch kernel authors: a kernel's call on drawn inputs, every output and
gradient judged against the float128 truth within what its precision policy allows.

    import ruleproof
    v = ruleproof.check(chunk_gla, rule="gla", B=2, T=300, H=4, K=64, V=64,
                        dtype=torch.bfloat16)
    v.assert_holds()  # raises with the summary table and the replay command

The verdicts are the `ruleproof check-dump` command's (found by ruleproof.find_binary); see
python/README.md.
"""
from .cases import SHAPES, Case, cases, hard_cases
from .check import TensorVerdict, Verdict, Where, check, default_policy, dump
from .engine import find_binary, rules
from .errors import BinaryNotFound, KernelInputError, KernelRaised, RuleproofError
from .recipes import RECIPES

__all__ = ["check", "dump", "Verdict", "TensorVerdict", "Where", "Case", "cases", "hard_cases", "SHAPES",
           "RECIPES", "rules", "find_binary", "default_policy", "parametrize", "RuleproofError",
           "BinaryNotFound", "KernelInputError", "KernelRaised"]


def parametrize(rule, **grid):
    """pytest.mark.parametrize("case", ...) over ruleproof.cases(rule, **grid), each case's id
    its sizes, dtype, recipe and seed (so that -k selects them): the test takes `case` and calls
    ruleproof.check(fn, **case.options()) (or the fixture ruleproof_check(fn, case))."""
    import pytest
    return pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in cases(rule, **grid)])
