#!/usr/bin/env bash
# How long `ruleproof check-dump` takes on a dump at flash-linear-attention's benchmark shape
# (B = 4, T = 4096, H = 16, K = V = 128, bf16, forward and backward), with the truth in double
# certified against float128 on 4 heads. Writing the dump is not timed.
#
#   bash bench/check_dump_speed.sh [BUILD] [RULE] [THREADS]
set -euo pipefail
build=${1:-build} rule=${2:-gla} threads=${3:-2}
dump=$(mktemp -d)/large_${rule}.safetensors
"$build/bench/write_large_dump" --rule "$rule" --threads "$threads" --out "$dump"
ls -l "$dump"
/usr/bin/time -f "check-dump: %e s wall, %U s user, %M KiB at most" \
  "$build/cli/ruleproof" check-dump "$dump" --rule "$rule" --threads "$threads" \
  --out "${dump%.safetensors}.json"
rm -f "$dump"
