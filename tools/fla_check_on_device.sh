#!/usr/bin/env bash
# Runs tools/fla_check.py on a GPU machine: one process a rule and dtype (bf16, fp16), and for
# simple_gla and gated_delta_rule also with flash-linear-attention's Hopper guard off (their
# backward is refused on Hopper otherwise), all at once; then writes OUT/fla_check.md and packs
# the JSON reports, the logs and the failing cases' dumps and reports into OUT.
#
#   bash tools/fla_check_on_device.sh FLA CARRY OUT
#
# FLA: a folder holding flash-linear-attention's package `fla` (not part of this repository);
# CARRY: a folder with bin/ruleproof and the libraries it needs in lib/ (gpu/tests/make_carry.sh
# makes one). CONFIGS=N autotunes each kernel over its first N configurations only; LIMIT=S stops
# each process after S seconds (default 500); RULES="gla kda" checks these rules only. Every
# failing case's dump is also judged on its own by tools/fla_dumps.py --judge (float64, autograd,
# no ruleproof code): OUT/judged.json. The dumps themselves stay on the machine, but those of the
# cases whose names match the pattern KEEP (grep -E) come back in OUT/fla_check_dumps.tar.gz.
# PLAN=FILE runs instead one process per line of FILE, the line's words fla_check.py's arguments
# (CONFIGS still applies unless a line says --configs).
set -u
fla=$(realpath "$1") carry=$(realpath "$2") out=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$work/json" "$work/logs"
export RULEPROOF="$carry/bin/ruleproof" LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR="$work/triton" PYTHONPATH="$fla"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__,
      torch.cuda.get_device_name())' | tee "$work/logs/versions.txt"
"$RULEPROOF" rules >>"$work/logs/versions.txt" || exit 1
configs=()
[ -n "${CONFIGS:-}" ] && configs=(--configs "$CONFIGS")
job() { # NAME ARGS...
  local name=$1
  shift
  timeout "${LIMIT:-500}" python3 "$here/fla_check.py" --out "$work/json" "${configs[@]}" "$@" \
    >"$work/logs/$name.log" 2>&1
  echo "$name: exit $?" >>"$work/logs/exits.txt"
}
if [ -n "${PLAN:-}" ]; then
  n=0
  while read -r line; do
    [ -n "$line" ] || continue
    n=$((n + 1))
    # shellcheck disable=SC2086
    job "plan_$n" $line &
  done <"$PLAN"
  rules=""
else
  rules=${RULES:-simple_gla gla gated_delta_rule kda dplr_fla gated_oja}
fi
for rule in $rules; do
  for dtype in bf16 fp16; do
    job "${rule}_$dtype" --rule "$rule" --dtype "$dtype" &
  done
done
for rule in $rules; do
  case $rule in simple_gla | gated_delta_rule) ;; *) continue ;; esac
  for dtype in bf16 fp16; do
    job "${rule}_${dtype}_no_guard" --rule "$rule" --dtype "$dtype" --no-hopper-guard &
  done
done
wait
cat "$work/logs/exits.txt"
python3 "$here/fla_check.py" --summarise --out "$work/json"
cp "$work/json/fla_check.md" "$out/"
dumps=$(ls "$work"/json/artifacts/*/dump.safetensors 2>/dev/null)
if [ -n "$dumps" ]; then
  # shellcheck disable=SC2086
  python3 "$here/fla_dumps.py" --judge $dumps --device cpu --out "$work/json" >/dev/null &&
    cp "$work/json/judged.json" "$out/"
  keep=$(cd "$work/json" && ls -d artifacts/*/ | grep -E "${KEEP:-^$}")
  # shellcheck disable=SC2086
  [ -n "$keep" ] && tar czf "$out/fla_check_dumps.tar.gz" -C "$work/json" $keep
fi
tar czf "$out/fla_check_reports.tar.gz" --exclude='*.safetensors' -C "$work" json logs
ls -la "$out"
