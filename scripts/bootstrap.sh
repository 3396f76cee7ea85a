#!/usr/bin/env bash
# Installs the Debian packages ruleproof needs (only those missing), then configures and
# builds into build/. Safe to run again: each step does nothing when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake libeigen3-dev libboost-dev libmpfr-dev libgmp-dev catch2
          librapidcheck-dev nlohmann-json3-dev libcli11-dev libfmt-dev chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

werror=OFF
[ -n "${CI:-}" ] && werror=ON
cmake -S . -B build -DRULEPROOF_WERROR="$werror" >/dev/null
cmake --build build -j"$(nproc)"
