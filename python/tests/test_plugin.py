"""The pytest plugin as a kernel author's suite uses it: a test file parametrised over cases,
run through pytest with -k and -x, a failing case's dump and HTML report kept and named."""
import os

import pytest

USER_TESTS = """
import functools
import pytest
import ruleproof
from kernels import chunk_gla

good = functools.partial(chunk_gla, rounded=True)
bad = functools.partial(chunk_gla, bug="boundary_off_by_one")

@pytest.mark.parametrize("fn", [good, bad], ids=["good", "bad"])
@ruleproof.parametrize("gla", shapes=["partial_chunk"], recipes=["fla", "strong"])
def test_chunk_gla(ruleproof_check, fn, case):
    ruleproof_check(fn, case).assert_holds()
"""


@pytest.fixture
def user_suite(pytester, tmp_path):
    pytester.makepyfile(test_user=USER_TESTS)
    artifacts = tmp_path / "artifacts"

    def run(*args):
        return pytester.runpytest("-p", "ruleproof.pytest_plugin", "-p", "no:cacheprovider",
                                  "--ruleproof-artifacts", str(artifacts), *args)
    return run, artifacts


def test_a_failing_case_keeps_its_dump_and_report_and_names_them(user_suite):
    run, artifacts = user_suite
    result = run()
    result.assert_outcomes(passed=2, failed=2)
    folders = sorted(os.listdir(artifacts))
    assert len(folders) == 2 and all("bad" in f for f in folders)
    for f in folders:
        assert {"dump.safetensors", "check_dump.html", "check_dump.json"} <= \
            set(os.listdir(artifacts / f))
    text = result.stdout.str()
    assert "FAILS on o" in text and "replay: " in text
    for f in folders:
        assert str(artifacts / f / "dump.safetensors") in text
        assert str(artifacts / f / "check_dump.html") in text


def test_k_selects_cases_by_their_ids(user_suite):
    run, artifacts = user_suite
    run("-k", "strong and good").assert_outcomes(passed=1)
    run("-k", "T300 and fla and bad").assert_outcomes(failed=1)
    assert len(os.listdir(artifacts)) == 1


def test_x_stops_at_the_first_failing_case(user_suite):
    run, _ = user_suite
    result = run("-x", "-k", "bad")
    result.assert_outcomes(failed=1)
    assert "stopping after 1 failures" in result.stdout.str()


def test_the_options_are_in_pytests_help(pytester):
    result = pytester.runpytest("-p", "ruleproof.pytest_plugin", "--help")
    for option in ("--ruleproof-artifacts", "--ruleproof-binary", "--ruleproof-keep"):
        assert option in result.stdout.str()
