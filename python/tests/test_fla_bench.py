"""tools/fla_bench.py's report on disk: what --merge keeps, what it refuses, and the write that
leaves either the last complete report or the one before. (Its timings need a GPU and
flash-linear-attention; these parts need neither.)"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import fla_bench  # noqa: E402

SETTING = {"device": "NVIDIA H200", "torch": "2.11.0+cu130", "triton": "3.6.0",
           "shape": {"B": 4, "T": 4096, "H": 16, "K": 128, "V": 128}, "dtype": "bf16",
           "guard": False, "timer": "triton.testing.do_bench median"}


def written(path, report):
    with open(path, "w") as f:
        json.dump(report, f)
    return str(path)


def test_without_merge_a_run_starts_from_no_rules(tmp_path):
    out = written(tmp_path / "fla.json", dict(SETTING, rules={"gla": {"fwd_ms": 0.7}}))
    assert fla_bench.start_report(SETTING, out, merge=False) == dict(SETTING, rules={})


def test_merge_keeps_the_rules_of_the_same_setting(tmp_path):
    old = {"gla": {"fwd_ms": 0.7}, "kda": {"fwd_ms": 0.93}}
    out = written(tmp_path / "fla.json", dict(SETTING, rules=old))
    report = fla_bench.start_report(SETTING, out, merge=True)
    assert report == dict(SETTING, rules=old)
    report["rules"]["gla"] = {"fwd_ms": 0.69}  # a rule timed again replaces its entry
    assert report["rules"]["kda"] == {"fwd_ms": 0.93}
    assert fla_bench.start_report(SETTING, str(tmp_path / "none.json"), merge=True)["rules"] == {}


@pytest.mark.parametrize("key, value", [("device", "NVIDIA H100 80GB HBM3"), ("triton", "3.5.0"),
                                        ("shape", {"B": 1, "T": 4096, "H": 16, "K": 128,
                                                   "V": 128}),
                                        ("dtype", "fp16"), ("guard", True)])
def test_merge_refuses_a_report_of_another_setting(tmp_path, key, value):
    out = written(tmp_path / "fla.json", dict(SETTING, **{key: value}, rules={}))
    with pytest.raises(ValueError, match=key):
        fla_bench.start_report(SETTING, out, merge=True)


def test_merge_refuses_a_file_that_is_no_report(tmp_path):
    broken = tmp_path / "fla.json"
    broken.write_text('{"device": "NVIDIA H200", "rules": ')
    with pytest.raises(ValueError, match="not a report"):
        fla_bench.start_report(SETTING, str(broken), merge=True)
    no_rules = written(tmp_path / "no_rules.json", SETTING)
    with pytest.raises(ValueError, match="not a report"):
        fla_bench.start_report(SETTING, no_rules, merge=True)


def test_a_report_is_written_whole_and_leaves_no_temporary_file(tmp_path):
    out = str(tmp_path / "fla.json")
    first = dict(SETTING, rules={"gla": {"fwd_ms": 0.7}})
    fla_bench.write_report(first, out)
    second = dict(SETTING, rules={"gla": {"fwd_ms": 0.7}, "kda": {"fwd_ms": 0.93}})
    fla_bench.write_report(second, out)
    with open(out) as f:
        assert json.load(f) == second
    assert os.listdir(tmp_path) == ["fla.json"]
