#!/usr/bin/env bash
# The test of the tests: applies each mutant of a table (mutants.txt) to a scratch copy of the
# committed tree, one at a time, rebuilds what its row names, runs those test programs and, where
# the row says so, `ruleproof claims` (its verdicts against reports/claims.md), and records whether
# the mutant was caught. Prints and writes a report (mutants caught / mutants tried); exits 0 when
# every mutant tried was caught, 1 when one survived, 2 when the table or the unmutated tree is
# wrong (an original not found exactly once, a mutant that does not compile, a failing baseline).
#
# usage: run_mutants.sh [--gpu] [TABLE]
#   --gpu    also the mutants that run on a GPU (CUDA build; on a machine with a Hopper GPU)
# environment: RULEPROOF_MUTATION_DIR (scratch folder, default /tmp/ruleproof-mutation: src/ the
# copy, build/ its build, kept between runs so only what a mutant touches is rebuilt),
# RULEPROOF_MUTATION_REPORT (default $RULEPROOF_MUTATION_DIR/mutation.md), JOBS (default 2),
# RC_PARAMS (default max_success=25: the RapidCheck cases of each property).
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true
export LC_ALL=C

gpu=OFF flag=""
if [[ ${1:-} == --gpu ]]; then
  gpu=ON flag=" --gpu"
  shift
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
table=$(realpath "${1:-$here/mutants.txt}")
work=${RULEPROOF_MUTATION_DIR:-/tmp/ruleproof-mutation}
report=${RULEPROOF_MUTATION_REPORT:-$work/mutation.md}
jobs=${JOBS:-2}
export RC_PARAMS=${RC_PARAMS:-max_success=25}
src=$work/src
build=$work/build
logs=$work/logs
commit=$(git -C "$root" rev-parse HEAD)
mkdir -p "$work" "$logs"

say() { printf '%s\n' "$*" >&2; }
fail_table() {
  say "run_mutants: $*"
  exit 2
}

# The committed tree: a file is copied only where it differs from the copy's (so a later commit,
# or a file left mutated by an interrupted run, rebuilds only what depends on what changed).
if [[ ! -f $src/.commit || $(cat "$src/.commit") != "$commit" ]]; then
  rm -rf "$work/extract"
  mkdir -p "$work/extract" "$src"
  git -C "$root" archive "$commit" | tar -x -C "$work/extract"
  (cd "$work/extract" && find . -type f) | while IFS= read -r f; do
    if ! cmp -s "$work/extract/$f" "$src/$f"; then
      mkdir -p "$(dirname "$src/$f")"
      cp "$work/extract/$f" "$src/$f"
    fi
  done
  rm -rf "$work/extract"
  echo "$commit" >"$src/.commit"
fi
restore() {
  local tmp="$work/restore.tmp"
  git -C "$root" show "$commit:$1" >"$tmp"
  cmp -s "$tmp" "$src/$1" || cp "$tmp" "$src/$1"
}

# The table: id | class | runs on | file | programs | claims | original | replacement.
ids=() classes=() where=() files=() programs=() claims=() originals=() replacements=()
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  rest=$line
  fields=()
  for _ in 1 2 3 4 5 6 7; do
    [[ $rest == *" | "* ]] || fail_table "line with fewer than 8 fields: $line"
    fields+=("${rest%% | *}")
    rest=${rest#* | }
  done
  fields+=("$rest")
  ids+=("${fields[0]}") classes+=("${fields[1]}") where+=("${fields[2]}") files+=("${fields[3]}")
  programs+=("${fields[4]}") claims+=("${fields[5]}") originals+=("${fields[6]}")
  replacements+=("${fields[7]}")
done <"$table"
(( ${#ids[@]} > 0 )) || fail_table "no mutants in $table"
for f in $(printf '%s\n' "${files[@]}" | sort -u); do
  [[ -f $src/$f ]] || fail_table "no file $f"
  restore "$f"
done

seeds=$(realpath -m "$root/../shared/seeds")
cmake -S "$src" -B "$build" -DRULEPROOF_CUDA=$gpu -DCMAKE_BUILD_TYPE=Mutation \
  -DCMAKE_CXX_FLAGS_MUTATION=-O1 -DRULEPROOF_SEEDS_DIR="$seeds" >"$logs/configure.log" 2>&1 ||
  fail_table "configure failed: $logs/configure.log"

program_path() {
  local p
  p=$(find "$build" -type f -name "$1" -perm -u+x -print -quit)
  [[ -n $p ]] || fail_table "no program $1 in $build"
  echo "$p"
}

# Runs the programs of a row; prints the failing test cases ("program: test case"), or
# "program: crashed (exit N)" when a program stopped without its report.
failing_tests() {
  local name=$1 prog path xml code
  shift
  for prog in "$@"; do
    path=$(program_path "$prog")
    xml="$logs/$name.$prog.xml"
    rm -f "$xml"
    code=0
    timeout 1800 "$path" -r junit -o "$xml" >"$logs/$name.$prog.log" 2>&1 || code=$?
    if [[ $code == 77 ]]; then
      echo "$prog: skipped (no GPU)"
    elif [[ $code != 0 ]]; then
      if [[ -s $xml ]] && grep -q '<failure\|<error' "$xml"; then
        awk -v prog="$prog" '
          /<testcase / { match($0, / name="[^"]*"/); name = substr($0, RSTART + 7, RLENGTH - 8) }
          /<failure|<error/ { if (!(name in seen)) { seen[name] = 1; print prog ": " name } }' "$xml"
      else
        echo "$prog: crashed (exit $code)"
      fi
    fi
  done
}

# `ruleproof claims`: prints the claims whose verdict differs from reports/claims.md's
# ("id: before -> after"), or what else went wrong.
verdicts() { awk -F' [|] ' '/^[|] [0-9][0-9][0-9]\./ { sub(/^[|] /, "", $1); print $1, $3 }' "$1"; }
claims_changes() {
  local name=$1 out="$work/claims_$1" code=0
  rm -rf "$out"
  timeout 3600 "$build/cli/ruleproof" claims --threads "$jobs" --out "$out" \
    >"$logs/$name.claims.log" 2>&1 || code=$?
  if [[ ! -f $out/claims.md ]]; then
    echo "ruleproof claims: stopped (exit $code)"
    return
  fi
  join <(verdicts "$src/reports/claims.md" | sort) <(verdicts "$out/claims.md" | sort) |
    awk '$2 != $3 { print "ruleproof claims: " $1 " " $2 " -> " $3 }'
  if [[ $code != 0 ]]; then
    echo "ruleproof claims: exit $code (a correction no longer holds)"
  elif ! cmp -s "$out/claims.md" "$src/reports/claims.md"; then
    echo "ruleproof claims: claims.md differs from reports/claims.md"
  fi
}

build_targets() { # name targets...
  local name=$1
  shift
  nice -n 5 cmake --build "$build" -j "$jobs" --target "$@" >"$logs/$name.build.log" 2>&1
}

selected=()
for i in "${!ids[@]}"; do
  [[ ${where[$i]} == cpu || $gpu == ON ]] && selected+=("$i")
done

# The unmutated tree first: every program and the claims must pass there, or a "catch" would
# mean nothing.
all_programs=$(for i in "${selected[@]}"; do echo ${programs[$i]}; done | tr ' ' '\n' | sort -u)
with_claims=no
for i in "${selected[@]}"; do [[ ${claims[$i]} == yes ]] && with_claims=yes; done
say "run_mutants: building the unmutated tree ($commit) in $build"
# shellcheck disable=SC2086
build_targets baseline $all_programs $([[ $with_claims == yes ]] && echo ruleproof) ||
  fail_table "the unmutated tree does not build: $logs/baseline.build.log"
# shellcheck disable=SC2086
baseline=$(failing_tests baseline $all_programs; [[ $with_claims == no ]] || claims_changes baseline)
if grep -v '^$\|skipped (no GPU)' <<<"$baseline" | grep -q .; then
  fail_table "the unmutated tree fails already:"$'\n'"$baseline"
fi

rows=() caught=0 tried=0 survivors=()
not_run=()
for i in "${!ids[@]}"; do
  [[ ${where[$i]} == cpu || $gpu == ON ]] || not_run+=("| ${ids[$i]} | ${classes[$i]} | \`${files[$i]}\` | ${programs[$i]} |")
done

# The report, written again after each mutant (a run stopped early leaves what it tried).
write_report() {
  {
    echo "# Mutation check"
    echo
    echo "Mutants caught / mutants tried: **$caught / $tried**${1:+ ($1)}."
    echo
    echo "Made by \`property_tests/mutation/run_mutants.sh$flag\` on $(date -u +%Y-%m-%d), commit \`${commit:0:12}\`,"
    echo "from \`$(realpath --relative-to="$root" "$table")\`: each mutant applied alone to the"
    echo "committed tree, built with CUDA $gpu, its test programs run with \`RC_PARAMS=$RC_PARAMS\`,"
    echo "and \`ruleproof claims\` where the table says so (a verdict other than reports/claims.md's"
    echo "catches it). The unmutated tree passed the same programs and claims first."
    echo
    echo "| mutant | fault class | file | runs on | verdict | caught by | time |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    if (( ${#not_run[@]} > 0 )); then
      echo
      echo "Not tried here: the code of these mutants runs only on a GPU (\`run_mutants.sh --gpu\` on"
      echo "a machine with a Hopper GPU judges them):"
      echo
      echo "| mutant | fault class | file | programs |"
      echo "|---|---|---|---|"
      printf '%s\n' "${not_run[@]}"
    fi
  } >"$report"
}
for i in "${selected[@]}"; do
  id=${ids[$i]} file=${files[$i]}
  content=$(cat "$src/$file"; printf x)
  content=${content%x}
  rest=${content//"${originals[$i]}"/}
  count=$(( (${#content} - ${#rest}) / ${#originals[$i]} ))
  (( count == 1 )) || fail_table "$id: the original occurs $count times in $file, not once"
  [[ ${originals[$i]} != "${replacements[$i]}" ]] || say "run_mutants: $id changes nothing"
  printf '%s' "${content/"${originals[$i]}"/"${replacements[$i]}"}" >"$src/$file"
  say "run_mutants: $id ($file): building ${programs[$i]}"
  targets=${programs[$i]}
  [[ ${claims[$i]} == yes ]] && targets+=" ruleproof"
  start=$SECONDS
  # shellcheck disable=SC2086
  if ! build_targets "$id" $targets; then
    restore "$file"
    fail_table "$id does not compile: $logs/$id.build.log"
  fi
  # shellcheck disable=SC2086
  found=$(failing_tests "$id" ${programs[$i]})
  [[ ${claims[$i]} == yes ]] && found+=$'\n'$(claims_changes "$id")
  found=$(grep -v '^$\|skipped (no GPU)' <<<"$found" || true)
  restore "$file"
  tried=$((tried + 1))
  if [[ -n $found ]]; then
    caught=$((caught + 1))
    verdict=caught
  else
    verdict=SURVIVED
    survivors+=("$id")
  fi
  by=$(sed 's/|/\\|/g' <<<"$found" | paste -sd ';' | sed 's/;/<br>/g')
  rows+=("| $id | ${classes[$i]} | \`$file\` | ${where[$i]} | $verdict | ${by:-nothing failed} | $((SECONDS - start)) s |")
  say "run_mutants: $id: $verdict${found:+ by}"$'\n'"$found"
  write_report "stopped early: $tried of ${#selected[@]} tried"
done
write_report

say "run_mutants: mutants caught / mutants tried: $caught / $tried; report: $report"
if (( ${#survivors[@]} > 0 )); then
  say "run_mutants: survived: ${survivors[*]}"
  exit 1
fi
