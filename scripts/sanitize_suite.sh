#!/usr/bin/env bash
# Runs the test suite of the sanitizer build (RULEPROOF_SANITIZE=ON: AddressSanitizer and
# UndefinedBehaviorSanitizer, made by bootstrap.sh --tests), with CASES cases a property
# (RapidCheck's max_success) and CASES draws a claim where claims runs are compared with each
# other, to keep it short; any sanitizer report fails the test that made it.
#   bash scripts/sanitize_suite.sh [SANITIZE_BUILD] [CASES]
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/.." && pwd)/build-sanitize}"
cases="${2:-10}"
if ! grep -qs "RULEPROOF_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
  echo "sanitize: no sanitizer build in $build: make it with bash scripts/bootstrap.sh --tests" >&2
  exit 1
fi
export RC_PARAMS="${RC_PARAMS:+$RC_PARAMS }max_success=$cases"
# and as many draws a claim where a test compares runs of `claims` with each other (determinism):
# under AddressSanitizer a run of `claims` at its default 4 draws took 51 s against 20 s at 2, on
# this project's 2-core machine. Never more than that default (EngineOptions::points in
# proofs/engine.hpp). Tests against the committed report keep the default.
export RULEPROOF_CLAIMS_POINTS=$((cases < 4 ? cases : 4))
# A report exits 86, a code no test expects (some expect 1, a failed check, or 2, bad input).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:exitcode=86"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=86"
exec ctest --test-dir "$build" --output-on-failure -j2
