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
# The mutants that run on a GPU can also be built here and judged on a GPU machine that cannot
# build the tree (gpu/tests/run_on_device.sh's case):
#   run_mutants.sh --gpu-build CARRY [TABLE]   builds the unmutated tree and each GPU mutant
#       with CUDA ON and puts each one's programs (stripped) in CARRY/baseline/, CARRY/ID/, and
#       the shared libraries they need in CARRY/lib/; runs nothing
#   run_mutants.sh --gpu-judge CARRY [TABLE]   runs those programs and writes the report, as
#       --gpu does (on the GPU machine, from the repository root; builds nothing)
# environment: RULEPROOF_MUTATION_DIR (scratch folder, default /tmp/ruleproof-mutation: src/ the
# copy, build/ its build, kept between runs so only what a mutant touches is rebuilt),
# RULEPROOF_MUTATION_REPORT (default $RULEPROOF_MUTATION_DIR/mutation.md), JOBS (default 2),
# RC_PARAMS (default max_success=25: the RapidCheck cases of each property).
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true
export LC_ALL=C

gpu=OFF flag="" mode=build_and_run carry=""
case ${1:-} in
  --gpu) gpu=ON flag=" --gpu" && shift ;;
  --gpu-build | --gpu-judge)
    gpu=ON mode=${1#--gpu-} carry=${2:?$1 needs a folder}
    flag=" --gpu-build / --gpu-judge"
    shift 2
    mkdir -p "$carry"
    carry=$(realpath "$carry")
    ;;
esac
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
if [[ $mode == judge ]]; then # the commit the carried programs were built from
  commit=$(cat "$carry/commit")
else
  commit=$(git -C "$root" rev-parse HEAD)
fi
mkdir -p "$work" "$logs"

say() { printf '%s\n' "$*" >&2; }
fail_table() {
  say "run_mutants: $*"
  exit 2
}

# The committed tree: a file is copied only where it differs from the copy's (so a later commit,
# or a file left mutated by an interrupted run, rebuilds only what depends on what changed).
if [[ $mode != judge && ( ! -f $src/.commit || $(cat "$src/.commit") != "$commit" ) ]]; then
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
if [[ $mode != judge ]]; then
  for f in $(printf '%s\n' "${files[@]}" | sort -u); do
    [[ -f $src/$f ]] || fail_table "no file $f"
    restore "$f"
  done
  seeds=$(realpath -m "$root/../shared/seeds")
  cmake -S "$src" -B "$build" -DRULEPROOF_CUDA=$gpu -DCMAKE_BUILD_TYPE=Mutation \
    -DCMAKE_CXX_FLAGS_MUTATION=-O1 -DRULEPROOF_SEEDS_DIR="$seeds" >"$logs/configure.log" 2>&1 ||
    fail_table "configure failed: $logs/configure.log"
else
  export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# Program $2 as built for $1 (baseline or a mutant's id): in the build, or in CARRY/$1/.
program_path() {
  local p where=$build
  [[ $mode == judge ]] && where=$carry/$1
  p=$(find "$where" -type f -name "$2" -perm -u+x -print -quit)
  [[ -n $p ]] || fail_table "no program $2 in $where"
  echo "$p"
}

# --gpu-build: the programs of $1 (baseline or a mutant's id), as just built, into CARRY/$1/.
carry_programs() {
  local name=$1 prog
  shift
  rm -rf "${carry:?}/$name"
  mkdir -p "$carry/$name" "$carry/lib"
  for prog in "$@"; do
    cp "$(program_path "$name" "$prog")" "$carry/$name/"
    strip "$carry/$name/$prog"
    ldd "$carry/$name/$prog" | awk '/=> \// {print $3}' |
      grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
      while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  done
}

# Runs the programs of a row; prints the failing test cases ("program: test case"), or
# "program: crashed (exit N)" when a program stopped without its report.
failing_tests() {
  local name=$1 prog path xml code
  shift
  for prog in "$@"; do
    path=$(program_path "$name" "$prog")
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

# Mutant $1 (a row's index) written into the copy of the tree.
apply_mutant() {
  local i=$1 id=${ids[$1]} file=${files[$1]} content rest count
  content=$(cat "$src/$file"; printf x)
  content=${content%x}
  rest=${content//"${originals[$i]}"/}
  count=$(( (${#content} - ${#rest}) / ${#originals[$i]} ))
  (( count == 1 )) || fail_table "$id: the original occurs $count times in $file, not once"
  [[ ${originals[$i]} != "${replacements[$i]}" ]] || say "run_mutants: $id changes nothing"
  printf '%s' "${content/"${originals[$i]}"/"${replacements[$i]}"}" >"$src/$file"
}

build_targets() { # name targets...
  local name=$1
  shift
  nice -n 5 cmake --build "$build" -j "$jobs" --target "$@" >"$logs/$name.build.log" 2>&1
}

selected=()
for i in "${!ids[@]}"; do
  if [[ $mode == build_and_run ]]; then
    [[ ${where[$i]} == cpu || $gpu == ON ]] && selected+=("$i")
  else
    [[ ${where[$i]} == gpu ]] && selected+=("$i")
  fi
done

# The unmutated tree first: every program and the claims must pass there, or a "catch" would
# mean nothing.
all_programs=$(for i in "${selected[@]}"; do echo ${programs[$i]}; done | tr ' ' '\n' | sort -u)
with_claims=no
for i in "${selected[@]}"; do [[ ${claims[$i]} == yes ]] && with_claims=yes; done
if [[ $mode != judge ]]; then
  say "run_mutants: building the unmutated tree ($commit) in $build"
  # shellcheck disable=SC2086
  build_targets baseline $all_programs $([[ $with_claims == yes ]] && echo ruleproof) ||
    fail_table "the unmutated tree does not build: $logs/baseline.build.log"
fi
if [[ $mode == build ]]; then
  echo "$commit" >"$carry/commit"
  # shellcheck disable=SC2086
  carry_programs baseline $all_programs
  for i in "${selected[@]}"; do
    id=${ids[$i]} file=${files[$i]}
    apply_mutant "$i"
    say "run_mutants: $id ($file): building ${programs[$i]} for $carry/$id"
    # shellcheck disable=SC2086
    build_targets "$id" ${programs[$i]} || { restore "$file"; fail_table "$id does not compile: $logs/$id.build.log"; }
    # shellcheck disable=SC2086
    carry_programs "$id" ${programs[$i]}
    restore "$file"
  done
  du -sh "$carry" >&2
  say "run_mutants: built ${#selected[@]} GPU mutants into $carry; judge them on a GPU machine with --gpu-judge"
  exit 0
fi
# shellcheck disable=SC2086
baseline=$(failing_tests baseline $all_programs; [[ $with_claims == no ]] || claims_changes baseline)
if grep -v '^$\|skipped (no GPU)' <<<"$baseline" | grep -q .; then
  fail_table "the unmutated tree fails already:"$'\n'"$baseline"
fi

rows=() caught=0 tried=0 survivors=()
not_run=()
for i in "${!ids[@]}"; do
  [[ ${where[$i]} == gpu && $gpu == OFF ]] && not_run+=("| ${ids[$i]} | ${classes[$i]} | \`${files[$i]}\` | ${programs[$i]} |")
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
  start=$SECONDS
  if [[ $mode != judge ]]; then
    apply_mutant "$i"
    say "run_mutants: $id ($file): building ${programs[$i]}"
    targets=${programs[$i]}
    [[ ${claims[$i]} == yes ]] && targets+=" ruleproof"
    # shellcheck disable=SC2086
    if ! build_targets "$id" $targets; then
      restore "$file"
      fail_table "$id does not compile: $logs/$id.build.log"
    fi
  fi
  # shellcheck disable=SC2086
  found=$(failing_tests "$id" ${programs[$i]})
  [[ ${claims[$i]} == yes ]] && found+=$'\n'$(claims_changes "$id")
  found=$(grep -v '^$\|skipped (no GPU)' <<<"$found" || true)
  [[ $mode == judge ]] || restore "$file"
  tried=$((tried + 1))
  if [[ -n $found ]]; then
    caught=$((caught + 1))
    verdict=caught
  else
    verdict=SURVIVED
    survivors+=("$id")
  fi
  by=$(sed 's/|/\\|/g' <<<"$found" | awk 'NR > 1 { printf "<br>" } { printf "%s", $0 }')
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
