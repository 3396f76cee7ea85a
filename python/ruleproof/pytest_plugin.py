"""The pytest plugin: a fixture that checks a kernel on a case and keeps, for a failing test,
the dump and the HTML report in a folder named after the test.

Enable it in a conftest.py with `pytest_plugins = ["ruleproof.pytest_plugin"]` (or `-p
ruleproof.pytest_plugin`; installed with pip, it is found by its entry point). Then:

    @ruleproof.parametrize("gla")           # ruleproof.cases("gla"): shapes x recipes
    def test_my_gla(ruleproof_check, case):
        ruleproof_check(my_chunk_gla, case).assert_holds()

Options: --ruleproof-artifacts DIR (where failing tests' files go; default ./ruleproof-artifacts
or $RULEPROOF_ARTIFACTS), --ruleproof-binary PATH (the `ruleproof` command), --ruleproof-keep
(keep the files of passing checks too). The case ids carry the rule, dtype, sizes, recipe and
seed, so -k selects them ("-k 'T300 and strong'"); -x stops at the first failing case as with any
test.
"""
import re

import pytest

from .check import check


def pytest_addoption(parser):
    group = parser.getgroup("ruleproof", "ruleproof kernel checks")
    group.addoption("--ruleproof-artifacts", metavar="DIR", default=None,
                    help="where a failing check keeps its dump and report, a folder per test "
                         "(default ./ruleproof-artifacts, or $RULEPROOF_ARTIFACTS)")
    group.addoption("--ruleproof-binary", metavar="PATH", default=None,
                    help="the ruleproof command (default: $RULEPROOF, PATH, the checkout's "
                         "build)")
    group.addoption("--ruleproof-keep", action="store_true",
                    help="keep the dump and report of passing checks too")


def _folder_name(nodeid):
    """A test's node id as a folder name: path separators and brackets made underscores."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", nodeid).strip("_")


@pytest.fixture
def ruleproof_check(request):
    """check(fn, case=None, **options): ruleproof.check on the case's sizes, recipe and seed
    (options override them), its files kept under --ruleproof-artifacts in a folder named after
    the test when it fails. Returns the Verdict; call assert_holds() on it. The failing test's
    report names the files in a section "ruleproof"."""
    config = request.config
    calls = []

    def run(fn, case=None, **options):
        opts = case.options() if case is not None else {}
        opts.update(options)
        if "rule" not in opts:
            raise TypeError("ruleproof_check: give a case or rule=...")
        rule = opts.pop("rule")
        opts.setdefault("artifacts", config.getoption("ruleproof_artifacts"))
        opts.setdefault("binary", config.getoption("ruleproof_binary"))
        opts.setdefault("keep", config.getoption("ruleproof_keep"))
        suffix = f"-{len(calls)}" if calls else ""
        opts["name"] = _folder_name(request.node.nodeid) + suffix
        verdict = check(fn, rule, **opts)
        calls.append(verdict)
        if verdict.artifacts:
            request.node.add_report_section(
                "call", "ruleproof", f"{verdict.artifacts}\n  " +
                "\n  ".join(f"{k}: {p}" for k, p in sorted(verdict.files.items())) +
                f"\n  replay: {verdict.replay}")
            request.node.user_properties.append(("ruleproof_artifacts", verdict.artifacts))
        return verdict

    return run
