#!/usr/bin/env bash
# How long `ruleproof check-dump` takes on a dump at flash-linear-attention's benchmark shape
# (B = 4, T = 4096, H = 16, K = V = 128, bf16, forward and backward), with the truth in double
# certified against float128 on 2 heads (the default). Writing the dump is not timed.
#
#   bash bench/check_dump_speed.sh [BUILD] [RULE] [THREADS]
set -euo pipefail
build=${1:-build} rule=${2:-gla} threads=${3:-2}
dump=$(mktemp -d)/large_${rule}.safetensors
cmake --build "$build" --target ruleproof write_large_dump >/dev/null
"$build/bench/write_large_dump" --rule "$rule" --threads "$threads" --out "$dump"
ls -l "$dump"
/usr/bin/time -f "check-dump: %e s wall, %U s user, %M KiB at most" \
  "$build/cli/ruleproof" check-dump "$dump" --rule "$rule" --threads "$threads" \
  --out "${dump%.safetensors}.json"
python3 - "${dump%.safetensors}.json" <<'EOF' || true
import json, sys
r = json.load(open(sys.argv[1]))
c = r["details"].get("certification")
worst = max(x["error_over_allowed"] for x in r["results"])
print("truth", r["details"]["truth"], "worst ratio %.3f" % worst, "digits agreed on the sample:",
      {k: round(v["digits"], 1) for k, v in (c or {}).get("outputs", {}).items()})
EOF
rm -f "$dump" "${dump%.safetensors}".*
