"""The engine: the `ruleproof` command of the build, run as a child process.

Every verdict of the package is `ruleproof check-dump`'s, on a dump this package wrote; the rules
and the tensors each call takes are `ruleproof rules --json`'s, read from the registry's table.
"""
import functools
import json
import os
import shutil
import subprocess

from .errors import BinaryNotFound, KernelInputError

_HERE = os.path.dirname(os.path.abspath(__file__))
#: The build folder of the checkout this package lies in (python/ruleproof -> build/cli).
_CHECKOUT_BINARY = os.path.join(_HERE, os.pardir, os.pardir, "build", "cli", "ruleproof")


def find_binary(binary=None):
    """The `ruleproof` command: `binary` when given, else $RULEPROOF, else `ruleproof` on PATH,
    else the one of this checkout's build (build/cli/ruleproof)."""
    tried = []
    for where, path in (("binary", binary), ("$RULEPROOF", os.environ.get("RULEPROOF")),
                        ("PATH", shutil.which("ruleproof")),
                        ("the checkout's build", _CHECKOUT_BINARY)):
        if not path:
            continue
        tried.append(f"{where}: {path}")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
        if where in ("binary", "$RULEPROOF"):  # named explicitly: no quiet fall-back
            break
    raise BinaryNotFound(
        "binary: no executable `ruleproof` command found (tried " +
        ("; ".join(tried) if tried else "nothing: none named") +
        "). Build it with `bash scripts/bootstrap.sh` in the ruleproof checkout, then pass "
        "binary=PATH, set RULEPROOF=PATH or put it on PATH.")


@functools.lru_cache(maxsize=None)
def _rules_of(path):
    out = subprocess.run([path, "rules", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise BinaryNotFound(f"binary: `{path} rules --json` failed (exit {out.returncode}): "
                             f"{out.stderr.strip()} (a ruleproof build older than the package?)")
    return {r["name"]: r for r in json.loads(out.stdout)["rules"]}


def rules(binary=None):
    """The rules check-dump judges, by name: each one's gate tensor ("g", "gk", "gv"), its gate's
    shape ("[B, T, H]", "[B, T, H, K]" or "[B, T, H, V]"), and whether it takes beta and a, b."""
    return _rules_of(find_binary(binary))


def check_dump(dump, rule, report, policy, binary=None, threads=None, progress=None, cwd=None):
    """Runs `ruleproof check-dump DUMP --rule RULE --policy POLICY --out REPORT` and returns the
    report it wrote, parsed (check_dump.json; the HTML page and summary go beside it), in the
    folder `cwd` (relative paths are read there); `progress` is handed each line the engine
    prints, as it prints it. Bad input the engine refuses (exit 2) raises KernelInputError with
    its message; a crash (exit 3 or a signal) raises RuntimeError."""
    path = find_binary(binary)
    command = [path, "check-dump", dump, "--rule", rule, "--policy", policy, "--out", report]
    if threads:
        command += ["--threads", str(threads)]
    env = dict(os.environ, CI=os.environ.get("CI", "1"))  # no progress line drawn
    if progress:  # each line of the engine's progress as it comes (long runs)
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=cwd, env=env) as child:
            lines = []
            for line in child.stdout:
                lines.append(line)
                progress(line.rstrip("\n"))
            err = child.stderr.read()
        out = subprocess.CompletedProcess(command, child.returncode, "".join(lines), err)
    else:
        out = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    report = os.path.join(cwd or ".", report)
    if out.returncode == 2:
        raise KernelInputError(out.stderr.strip().removeprefix("ruleproof: bad input: "))
    if out.returncode not in (0, 1) or not os.path.isfile(report):
        raise RuntimeError(f"`{' '.join(command)}` ended with exit {out.returncode}:\n"
                           f"{out.stdout}{out.stderr}")
    with open(report) as f:
        return json.load(f)
