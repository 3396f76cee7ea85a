#!/usr/bin/env bash
# Fuzzes one reader from its seed corpus, for SECONDS:
#   bash io/fuzz/run_fuzzer.sh TARGET SECONDS [FUZZ_BUILD]
# TARGET: safetensors, result or input_file; FUZZ_BUILD: the fuzz build (default build-fuzz/,
# made by bootstrap.sh --tests). Inputs that reach new code go to FUZZ_BUILD/io/fuzz/corpus/
# (the committed corpus stays as it is, and a later run starts from both). Fails on a crash, a
# sanitizer report, a leak, an input that takes over 10 s, an allocation over 256 MiB or a
# process over 2 GiB; the input is left in FUZZ_BUILD/io/fuzz/artifacts/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?usage: run_fuzzer.sh TARGET SECONDS [FUZZ_BUILD]}"
seconds="${2:?usage: run_fuzzer.sh TARGET SECONDS [FUZZ_BUILD]}"
build="${3:-$here/../../build-fuzz}"
fuzzer="$build/io/fuzz/fuzz_$target"
if [ ! -x "$fuzzer" ]; then
  echo "run_fuzzer: no $fuzzer: build it with bash scripts/bootstrap.sh --tests" >&2
  exit 1
fi
work="$build/io/fuzz"
mkdir -p "$work/corpus/$target" "$work/artifacts"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The dictionary (the format's keys) and value profiles (operands of comparisons) lead the
# fuzzer to inputs that pass the readers' checks by a little.
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 \
  -dict="$here/$target.dict" -use_value_profile=1 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/$target-" \
  "$work/corpus/$target" "$here/corpus/$target"
