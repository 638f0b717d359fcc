#!/usr/bin/env bash
# Checks that an installed vlasim works from outside the source tree: brings a build tree's
# library and CLI up to date, installs it into a fresh prefix, compiles the installed headers
# against the package, builds examples/embed with find_package(vlasim) in a fresh build
# directory and runs it, and runs the installed CLI. Both must take their cards and catalog
# from the prefix.
# BUILD_DIR: the configured and built tree to install (default: build/).
# Prints "install_check: PASS" and exits 0, or "install_check: FAIL: why" and exits 1.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
jobs=$(nproc 2>/dev/null || echo 2)

fail() {
  echo "install_check: FAIL: $*"
  exit 1
}
# Runs a step quietly; on failure shows its output and fails with `what`.
step() {
  local what=$1 log
  shift
  log=$work/step.log
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log"
    fail "$what"
  fi
}

[[ -f $build_dir/CMakeCache.txt ]] || fail "$build_dir is not a configured build tree (set BUILD_DIR)"
work=$(mktemp -d "${TMPDIR:-/tmp}/vlasim-install-check.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/prefix"
prefix=$(cd "$work/prefix" && pwd -P)
# Nothing may point the installed code at data elsewhere.
unset VLASIM_CARDS VLASIM_CATALOG
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

echo "install_check: bringing $build_dir's library and CLI up to date"
# The Python module too where the tree builds it (VLASIM_PYTHON).
targets=(vlasim_shared vlasim)
grep -q '^VLASIM_PYTHON:BOOL=ON$' "$build_dir/CMakeCache.txt" && targets+=(vlasim_python)
step "cmake --build $build_dir" cmake --build "$build_dir" --target "${targets[@]}" -j "$jobs"
echo "install_check: installing $build_dir into $prefix"
step "cmake --install $build_dir" cmake --install "$build_dir" --prefix "$prefix"
for f in lib/libvlasim.so bin/vlasim include/vlasim/sim/engine/engine.h include/vlasim/scenarios/build.h \
         include/vlasim/executors/calibration/calibrate.h share/vlasim/cards/pi0_small.yaml \
         share/vlasim/catalog/gpus.yaml lib/cmake/vlasim/vlasimConfig.cmake \
         lib/cmake/vlasim/vlasimConfigVersion.cmake lib/cmake/vlasim/vlasimTargets.cmake; do
  [[ -e $prefix/$f ]] || fail "the install lacks $f"
done

# The installed headers compile with only vlasim::vlasim's usage requirements (none of them
# needs a header the install lacks).
mkdir -p "$work/headers"
(cd "$prefix/include/vlasim" && find . -name '*.h' | sort) | while read -r h; do
  echo "#include \"${h#./}\""
done >"$work/headers/all_headers.cc"
cat >"$work/headers/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(vlasim_headers LANGUAGES CXX)
find_package(vlasim REQUIRED)
add_library(all_headers OBJECT all_headers.cc)
target_link_libraries(all_headers PRIVATE vlasim::vlasim)
CMAKE
echo "install_check: compiling the $(wc -l <"$work/headers/all_headers.cc") installed headers"
step "configure the header check" cmake -S "$work/headers" -B "$work/headers/build" \
  -DCMAKE_PREFIX_PATH="$prefix"
step "compile the installed headers" cmake --build "$work/headers/build"

echo "install_check: building examples/embed against the prefix"
step "configure examples/embed" cmake -S "$here/examples/embed" -B "$work/embed" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
step "build examples/embed" cmake --build "$work/embed" -j "$jobs"
out=$("$work/embed/embed" 2>&1)
rc=$?
echo "$out" | sed 's/^/  embed| /'
[[ $rc -eq 0 ]] || fail "embed exited with status $rc"
grep -q '^p50 latency: [0-9]' <<<"$out" || fail "embed printed no p50 latency"
grep -q '^p99 latency: [0-9]' <<<"$out" || fail "embed printed no p99 latency"
grep -qx "cards: $prefix/share/vlasim/cards" <<<"$out" || fail "embed did not take its cards from $prefix"
grep -qx "catalog: $prefix/share/vlasim/catalog" <<<"$out" ||
  fail "embed did not take its catalog from $prefix"
# ldd's output is taken whole first: `ldd | grep -q` under pipefail fails when grep stops
# reading at its match and ldd, still writing, gets SIGPIPE.
libs=$(ldd "$work/embed/embed" 2>&1)
grep -q "$prefix/lib/libvlasim.so" <<<"$libs" || { echo "$libs"; fail "embed does not load $prefix/lib/libvlasim.so"; }

echo "install_check: running the installed CLI"
out=$("$prefix/bin/vlasim" list cards 2>&1)
rc=$?
[[ $rc -eq 0 ]] || { echo "$out"; fail "vlasim list cards exited with status $rc"; }
head -n 1 <<<"$out" | sed 's/^/  vlasim| /'
grep -qx "model cards ($prefix/share/vlasim/cards):" <<<"$out" ||
  fail "the installed CLI did not take its cards from $prefix"
grep -qx '  pi0_small' <<<"$out" || fail "the installed CLI does not list pi0_small"
out=$("$prefix/bin/vlasim" list devices 2>&1) || { echo "$out"; fail "vlasim list devices failed"; }
grep -qx "devices (catalog $prefix/share/vlasim/catalog):" <<<"$out" ||
  fail "the installed CLI did not take its catalog from $prefix"
grep -q 'rtx4090' <<<"$out" || fail "the installed CLI does not list the catalog's rtx4090"

if [[ " ${targets[*]} " == *" vlasim_python "* ]]; then
  echo "install_check: importing the installed Python module"
  python=$(sed -n 's/^_*Python3_EXECUTABLE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" | head -n 1)
  pydir=$(sed -n 's/^VLASIM_PYTHON_INSTALL_DIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  [[ -f $prefix/$pydir/vlasim/__init__.py ]] || fail "the install lacks $pydir/vlasim"
  out=$(cd "$work" && PYTHONPATH=$prefix/$pydir "${python:-python3}" -c \
        'import vlasim; from vlasim import _vlasim; print(_vlasim.data_dirs()[1]); print(vlasim.graph("pi0_small")["card"])' 2>&1) ||
    { echo "$out"; fail "the installed Python module does not import"; }
  sed 's/^/  python| /' <<<"$out"
  [[ $(head -n 1 <<<"$out") == "$prefix/share/vlasim/cards" ]] ||
    fail "the installed Python module did not take its cards from $prefix"
fi

echo "install_check: PASS"
