"""ruleproof.check judged on both sides: every correct kernel holds, every buggy one fails, and
each verdict's numbers (the worst element, the NaN count, flash-linear-attention's RMS ratio) are
what the tensors say."""
import functools
import math
import subprocess

import pytest
import torch

import ruleproof
from kernels import BUGS, chunk_gla, recurrent
from ruleproof.recurrence import recurrence
from ruleproof.safetensors import read_safetensors

RULES = list(ruleproof.rules())
GRID = ruleproof.cases("gla", recipes=ruleproof.RECIPES)


def kernel(rounded=False, bug=None):
    f = functools.partial(chunk_gla, rounded=rounded, bug=bug)
    f.__name__ = f"chunk_gla{'_rounded' if rounded else ''}{'_' + bug if bug else ''}"
    return f


@pytest.mark.parametrize("rounded", [False, True], ids=["fp32", "rounded_operands"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in GRID])
def test_a_correct_chunkwise_kernel_holds_on_every_shape_and_recipe(ruleproof_check, case,
                                                                     rounded):
    v = ruleproof_check(kernel(rounded), case)
    v.assert_holds()
    assert set(v.tensors) == {"o", "final_state", "dq", "dk", "dv", "dg", "dh0"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_a_correct_chunkwise_kernel_holds_in_every_dtype(ruleproof_check, dtype):
    case = ruleproof.cases("gla", ["partial_chunk"], ["strong"], [dtype])[0]
    v = ruleproof_check(kernel(rounded=True), case)
    v.assert_holds()
    assert v.policy == ("fp32" if dtype == torch.float32 else "tensor-core")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for r in RULES
                                  for c in ruleproof.hard_cases(r)])
def test_the_recurrent_form_of_every_rule_holds_on_the_hard_cases(ruleproof_check, case):
    ruleproof_check(recurrent(case.rule), case).assert_holds()


#: The tensors each bug must fail on, whatever the case (with a partial chunk for reads_past_T).
MUST_FAIL = {
    "dropped_diagonal": {"o", "dq", "dk", "dv"},
    "boundary_off_by_one": {"o", "final_state"},
    "ignores_h0": {"o", "dh0"},  # h0 decays away before T: the final state need not show it
    "reads_past_T": {"final_state"},
}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in
                                  ruleproof.cases("gla", recipes=["fla", "strong"])])
@pytest.mark.parametrize("bug", list(BUGS))
def test_every_buggy_kernel_fails_where_its_bug_lies(ruleproof_check, case, bug):
    v = ruleproof_check(kernel(bug=bug), case)
    if bug == "reads_past_T" and not _has_partial_chunk(case):  # no partial chunk: nothing past the end is read
        v.assert_holds()
        return
    must_fail = MUST_FAIL[bug]
    if bug == "ignores_h0" and case.recipe == "strong":  # h0 reaches o's first rows only, at
        must_fail = {"dh0"}  # a decay of ~exp(-7) a row: within the precision there
    assert not v.holds
    assert must_fail <= set(v.failing), v.summary()
    with pytest.raises(AssertionError, match="replay: .*check-dump"):
        v.assert_holds()


def _has_partial_chunk(case):
    cu = case.cu_seqlens or tuple(range(0, case.B * case.T + 1, case.T))
    return any((e - s) % case.chunk_size for s, e in zip(cu, cu[1:]))


def test_a_read_past_the_end_shows_as_nan_from_the_guard_band(ruleproof_check):
    case = ruleproof.cases("gla", ["partial_chunk"], ["fla"])[0]
    v = ruleproof_check(kernel(bug="reads_past_T"), case)
    assert v.tensors["final_state"].nan > 0 and not v.tensors["final_state"].holds
    assert math.isinf(v.tensors["final_state"].ratio)
    with pytest.raises(ruleproof.KernelRaised, match="out of bounds"):  # no guard: no memory
        ruleproof_check(kernel(bug="reads_past_T"), case, guard=False)


def corrupt(f, at, value):
    """f with o[at] replaced by value (+= when value is a number to add)."""
    def g(**kw):
        o, ht = f(**kw)
        o = o.clone()
        with torch.no_grad():
            o[at] = value(o[at])
        return o, ht
    return g


def test_where_and_counts_name_the_element_a_kernel_got_wrong(ruleproof_check):
    case = ruleproof.cases("gla", ["partial_chunk"], ["fla"])[0]
    v = ruleproof_check(corrupt(kernel(), (0, 200, 3, 7), lambda x: x + 1), case, backward=False)
    o = v.tensors["o"]
    assert not o.holds and set(v.failing) == {"o"}
    assert (o.where.batch, o.where.t, o.where.head, o.where.chunk) == (0, 200, 3, 3)
    assert o.where.index == (0, 200, 3, 7)
    v = ruleproof_check(corrupt(kernel(), (0, 5, 1, slice(0, 3)), lambda x: x * math.nan), case,
                        backward=False)
    assert (v.tensors["o"].nan, v.tensors["o"].inf) == (3, 0)
    v = ruleproof_check(corrupt(kernel(), (0, 9, 0, 0), lambda x: x * math.inf), case,
                        backward=False)
    assert (v.tensors["o"].nan, v.tensors["o"].inf) == (0, 1)


def test_the_rms_ratio_is_flash_linear_attentions_against_an_independent_truth(tmp_path):
    """The RMS ratio each verdict carries, RMS(kernel - truth) / RMS(truth), against the same
    ratio computed here from the dump, with the recurrence in float64 and autograd as truth."""
    options = dict(B=1, T=130, H=2, K=32, V=32, dtype=torch.bfloat16, recipe="strong", seed=3)
    path = ruleproof.dump(str(tmp_path / "gla.safetensors"), kernel(rounded=True), "gla",
                          **options)
    v = ruleproof.check(kernel(rounded=True), "gla", artifacts=str(tmp_path), **options)
    t, meta = read_safetensors(path)
    x = {n: t[n].double().requires_grad_(True) for n in ("q", "k", "v", "g")}
    h0 = t["initial_state"].double().requires_grad_(True)
    o, ht = recurrence("gla", x, float(meta["scale"]), h0, None)
    torch.autograd.backward([o, ht], [t["do"].double(), t["dht"].double()])
    truth = {"o": o, "final_state": ht, "dh0": h0.grad}
    truth.update({"d" + n: x[n].grad for n in x})
    rms = lambda a: a.double().pow(2).mean().sqrt().item()
    for name, tv in v.tensors.items():
        mine = rms(t[name].double() - truth[name].detach()) / rms(truth[name].detach())
        assert tv.rms_ratio == pytest.approx(mine, rel=1e-3), name


def test_the_same_seed_draws_the_same_call_and_another_seed_another(tmp_path):
    paths = [ruleproof.dump(str(tmp_path / f"{i}.safetensors"), kernel(), "gla", T=70, seed=s)
             for i, s in enumerate((5, 5, 6))]
    data = [open(p, "rb").read() for p in paths]
    assert data[0] == data[1] and data[0] != data[2]


def test_a_failing_check_keeps_its_files_and_its_replay_command_fails_again(tmp_path):
    v = ruleproof.check(kernel(bug="ignores_h0"), "gla", T=100, artifacts=str(tmp_path))
    assert not v.holds and v.artifacts.startswith(str(tmp_path))
    assert set(v.files) == {"dump", "report", "html", "summary"}
    assert "<html" in open(v.files["html"]).read(200).lower()
    assert subprocess.run(v.replay, shell=True, capture_output=True, cwd=tmp_path).returncode == 1
    held = ruleproof.check(kernel(), "gla", T=100, artifacts=str(tmp_path / "held"))
    assert held.holds and held.artifacts is None and not (tmp_path / "held").exists()
    kept = ruleproof.check(kernel(), "gla", T=100, artifacts=str(tmp_path / "kept"), keep=True)
    assert kept.holds and set(kept.files) == {"dump", "report", "html", "summary"}


def test_a_missing_gradient_fails(ruleproof_check):
    def detached_gate(g, **kw):
        return chunk_gla(g=g.detach(), **kw)
    v = ruleproof_check(detached_gate, rule="gla", T=100)
    assert v.failing == ["dg"] and "no gradient" in v.tensors["dg"].note


def test_verbose_shows_the_engines_progress_as_it_runs(capsys):
    ruleproof.check(kernel(), "gla", T=100, verbose=True)
    out = capsys.readouterr().out
    assert "the truth in float128" in out and "every output holds" in out
