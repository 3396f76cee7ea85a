#!/usr/bin/env bash
# Runs every set of tools/fla_dumps.py on a GPU machine, one process a rule and set, at once,
# and packs the dumps, the JSON reports and the logs into OUT/fla_dumps.tar.gz.
#
#   bash tools/fla_dumps_on_device.sh HEAD OLD REVERTED OUT
#
# HEAD: a folder holding flash-linear-attention's package `fla` at the commit judged (bc3b101);
# OLD: the same at 2e90142c (the commit before 91d870f8); REVERTED: the two files of
# fla/ops/generalized_delta_rule/dplr that commit 40334f1c changed, as they were before it
# (HEAD with that commit reverted). None of them is part of this repository.
# PLAN=FILE runs, instead of every set whole, one process per line `SET CASE,CASE,...` of FILE;
# CONFIGS=N autotunes each kernel over its first N configurations only (fla_dumps.py --configs).
set -u
head=$(realpath "$1") old=$(realpath "$2") reverted=$(realpath "$3") out=$4
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$work/dumps/main" "$work/dumps/bad" "$work/logs"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR="$work/triton"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__,
      torch.cuda.get_device_name())' | tee "$work/logs/versions.txt"
cp -r "$head" "$work/reverted"
cp "$reverted"/*.py "$work/reverted/fla/ops/generalized_delta_rule/dplr/"

limit=${LIMIT:-520}
job() { # NAME TREE ARGS...
  local name=$1 tree=$2
  shift 2
  PYTHONPATH=$tree timeout "$limit" python3 "$here/fla_dumps.py" "$@" >"$work/logs/$name.log" 2>&1
  echo "$name: exit $?" >>"$work/logs/exits.txt"
}
tree_of() { case $1 in dplr_offsets) echo "$work/reverted" ;; gdn_mask) echo "$old" ;; *) echo "$head" ;; esac; }
producer_of() {
  case $1 in
  dplr_offsets) echo "flash-linear-attention bc3b101 with 40334f1c reverted" ;;
  gdn_mask) echo "flash-linear-attention 2e90142c" ;;
  *) echo "flash-linear-attention bc3b101" ;;
  esac
}
folder_of() { [ "$1" = main ] && echo main || echo bad; }
configs=()
[ -n "${CONFIGS:-}" ] && configs=(--configs "$CONFIGS")
if [ -n "${PLAN:-}" ]; then # lines: SET CASE,CASE,...: one process a line
  n=0
  while read -r set cases; do
    [ -n "$set" ] || continue
    n=$((n + 1))
    job "${set}_$n" "$(tree_of "$set")" --set "$set" --cases "$cases" "${configs[@]}" \
      --out "$work/dumps/$(folder_of "$set")" --producer "$(producer_of "$set")" &
  done <"$PLAN"
else
  for rule in simple_gla gla gated_delta_rule kda dplr_fla gated_oja; do
    job "main_$rule" "$head" --set main --only "$rule" "${configs[@]}" --out "$work/dumps/main" &
  done
  for set in no_guard dplr_offsets gdn_mask; do
    job "$set" "$(tree_of $set)" --set "$set" "${configs[@]}" --out "$work/dumps/bad" \
      --producer "$(producer_of $set)" &
  done
fi
wait
cat "$work/logs/exits.txt"
tar czf "$out/fla_dumps.tar.gz" -C "$work" dumps logs
python3 - "$work/dumps" <<'EOF'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*/*.json")):
    report = json.load(open(path))
    for name, entry in report["cases"].items():
        errs = {k: v for k, v in entry.get("errors", {}).items() if isinstance(v, dict)}
        worst = max(errs, key=lambda k: errs[k]["rms_ratio"], default=None)
        what = entry.get("exception") or entry.get("errors", {}).get("refused") or ""
        line = f"{worst} {errs[worst]['rms_ratio']:.2e}" if worst else ""
        print(f"{name:55s} {line:24s} {what[:90]}")
EOF
