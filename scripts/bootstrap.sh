#!/usr/bin/env bash
# Installs the Debian packages ruleproof needs (only those missing), then configures and
# builds the ruleproof command into build/ (with Ninja, where a build folder is new; one made
# before keeps its generator). Safe to run again: each step does nothing when already done.
# --tests: the whole main build, every test program with it, and python3-torch and
# python3-pytest for the Python package's tests (python/tests).
# --cuda: the CUDA kernels even where no GPU is found.
# The CUDA kernels (gpu/*.cu, sm_90) are built where nvcc exists and a GPU is found (nvidia-smi
# lists one), for the tests (--tests: every kernel must compile), or with --cuda; a new build
# folder on a machine with no GPU links their CPU stand-ins instead, and `ruleproof gpu-check`
# says so (the kernels could not run there; they are a quarter of the command's build).
# It also builds the readers' fuzz targets (build-fuzz/, clang++ and libFuzzer), which the main
# build's suite runs briefly, and the sanitizer build (build-sanitize/, clang++ with
# AddressSanitizer and UndefinedBehaviorSanitizer), whose own suite is a test of the main build.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=false
cuda=false
for arg in "$@"; do
  case "$arg" in
  --tests) tests=true ;;
  --cuda) cuda=true ;;
  *) echo "bootstrap: unknown option $arg (known: --tests, --cuda)" >&2; exit 2 ;;
  esac
done

packages=(build-essential cmake libeigen3-dev libboost-dev libmpfr-dev libgmp-dev catch2
          librapidcheck-dev nlohmann-json3-dev libcli11-dev libfmt-dev chromium ninja-build)
$tests && packages+=(clang libclang-rt-14-dev    # the fuzz and sanitizer builds
                     python3-torch python3-pytest) # the Python package's tests
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
suite=()
$tests && suite=(-DRULEPROOF_SANITIZE_SUITE=ON)
# configure DIR ARGS...: cmake for the build folder DIR, with Ninja where DIR is new.
configure() {
  local dir=$1
  shift
  local generator=()
  [ -f "$dir/CMakeCache.txt" ] || generator=(-G Ninja)
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
kernels=()
if $tests || $cuda; then
  kernels=(-DRULEPROOF_CUDA=ON)
elif [ ! -f build/CMakeCache.txt ] && ! nvidia-smi -L >/dev/null 2>&1; then
  kernels=(-DRULEPROOF_CUDA=OFF) # a folder made before keeps its choice
fi
configure build -DRULEPROOF_WERROR="$werror" "${suite[@]}" "${kernels[@]}"
if $tests; then
  cmake --build build -j"$(nproc)"
  CXX=clang++ configure build-fuzz -DRULEPROOF_FUZZ=ON -DRULEPROOF_WERROR="$werror"
  cmake --build build-fuzz -j"$(nproc)" --target ruleproof_fuzzers
  CXX=clang++ configure build-sanitize -DRULEPROOF_SANITIZE=ON -DRULEPROOF_WERROR="$werror"
  cmake --build build-sanitize -j"$(nproc)"
else
  cmake --build build -j"$(nproc)" --target ruleproof
fi
