#!/usr/bin/env bash
# Fuzzing leg (issue 15). Builds the libFuzzer programs of tests/fuzz (the scenario, card,
# catalog, profile and PyTorch trace readers, the GPU kernel-time importers, the kernel model's fit CSV and a
# profile's host entry; tests/fuzz/fuzz_targets.h says what each checks) with clang 14,
# ASan and UBSan in a build folder of its own, and runs each for FUZZ_SECONDS seconds (default
# 60), starting from the inputs FuzzRegressions replays (the shipped and broken files of
# scenarios/, models/cards, sim/catalog and tests/data) and the findings kept so far.
#   scripts/fuzz.sh [target ...]     default: scenario card catalog profile trace gpu_import gpu_network kernel_fit host_entry
# Env: FUZZ_SECONDS (per target, after the seeds have run once; 0: build only), FUZZ_SEEDS
# (all, the default, or shipped: see below), FUZZ_SANITIZE (default address,undefined;
# `undefined` alone, or `none`, runs more inputs a second, for long runs that look for hangs,
# crashes, unnamed errors and memory blow-ups),
# FUZZ_OPT (default "-O0 -g1", the quickest to build; "-O1 -g1" runs about twice as many
# inputs a second, for long runs), FUZZ_BUILD_DIR (default build-fuzz/, or
# build-fuzz-<sanitizers> for other sanitizers),
# FUZZ_JOBS (build jobs), FUZZ_SKIP_BUILD=1 (use the programs already built, e.g. when
# several runs of this script fuzz different targets side by side).
# A finding (a crash, a sanitizer report, an unnamed error, an input over 25 s or 2 GB) fails
# the run; its input is copied to tests/fuzz/regressions/<target>/ (commit it with the fix, and
# FuzzRegressions replays it from then on) and printed in base64, so a CI log keeps it too.
# The inputs each fuzzer found interesting stay in $FUZZ_BUILD_DIR/corpus/<target> and are
# reused by the next run. Prints the executions of each target and their total.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
sanitize=${FUZZ_SANITIZE:-address,undefined}
if [[ $sanitize == address,undefined ]]; then build=${FUZZ_BUILD_DIR:-$here/build-fuzz}
else build=${FUZZ_BUILD_DIR:-$here/build-fuzz-${sanitize//,/-}}; fi
secs=${FUZZ_SECONDS:-60}
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(scenario card catalog profile trace gpu_import gpu_network kernel_fit host_entry)

"$here/scripts/install_packages.sh" clang-14 libclang-rt-14-dev llvm-14
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

start=$SECONDS
mkdir -p "$build"
[[ ${FUZZ_SKIP_BUILD:-0} == 1 ]] || {
# No sanitizer: an optimised build (the sanitizer flags, -O0 or -O1, apply only with one).
build_type=Debug; [[ $sanitize != none ]] || build_type=RelWithDebInfo
CXX=clang++-14 CC=clang-14 cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=$build_type -DCMAKE_UNITY_BUILD=ON \
  -DVLASIM_FUZZ=ON "-DVLASIM_SANITIZE=${sanitize/#none/}" "-DVLASIM_SANITIZE_OPT=${FUZZ_OPT:--O0 -g1}" -DVLASIM_BUILD_TESTS=ON \
  -DVLASIM_BUILD_BENCHMARKS=OFF -DVLASIM_WITH_CUDA=OFF > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "${FUZZ_JOBS:-$(nproc)}" --target vlasim_fuzzers
echo "== fuzz build: $((SECONDS - start)) s"
}
[[ $secs != 0 ]] || exit 0

# Seed folders of each target: as in tests/fuzz/fuzz_targets.cc targets().
# FUZZ_SEEDS=shipped leaves out the generated bad inputs (tests/data/bad_inputs, 480 of the 509
# scenario seeds): at -O0 the scenario fuzzer takes over two minutes just to run those once,
# which CI has no room for (they are run in every build by bad_inputs_test and FuzzRegressions).
bad=tests/data/bad_inputs
[[ ${FUZZ_SEEDS:-all} == shipped ]] && bad=
declare -A seed_dirs=(
  [scenario]="scenarios scenarios/systems scenarios/papers scenarios/validation tests/data/broken_scenarios ${bad:+$bad/scenarios}"
  [card]="models/cards tests/data/cards tests/data/broken_cards ${bad:+$bad/cards}"
  [catalog]="sim/catalog tests/data/broken_catalog ${bad:+$bad/catalog}"
  [profile]="scenarios/validation ${bad:+$bad/profiles}"
  [trace]="tests/data/torch_trace/seeds ${bad:+$bad/traces}"
  # Vidur mlp.csv and ApxInf JSON; the bad-input cases of vlasim import (a Vidur case is a
  # folder holding mlp.csv: seed folders are searched one level down, names made unique).
  [gpu_import]="tests/data/gpu_import ${bad:+$bad/gpu_import}"
  [gpu_network]="tests/data/gpu_network ${bad:+$bad/gpu_network}"
  # The kernel cost model's fit CSV, and a device profile's host entry (a JSON object).
  [kernel_fit]="sim/kernel_fit tests/data/kernel_fit ${bad:+$bad/kernel_fit}"
  [host_entry]="tests/data/host_entry ${bad:+$bad/host_entry}"
)
total=0
failed=()
for t in "${targets[@]}"; do
  [[ -n ${seed_dirs[$t]:-} ]] || { echo "fuzz.sh: unknown target '$t' (scenario, card, catalog, profile, trace, gpu_import, gpu_network, kernel_fit, host_entry)" >&2; exit 2; }
  seeds=$build/seeds/$t corpus=$build/corpus/$t kept=$here/tests/fuzz/regressions/$t
  findings=$build/findings/$t
  rm -rf "$seeds" "$findings"; mkdir -p "$seeds" "$corpus" "$findings" "$kept"
  for d in ${seed_dirs[$t]}; do
    if [[ $t == gpu_import ]]; then
      find "$here/$d" -maxdepth 2 -type f \( -name '*.csv' -o -name '*.json' \) -print0 |
        while IFS= read -r -d '' f; do cp "$f" "$seeds/$(echo "${f#$here/$d/}" | tr / _)"; done
    elif [[ $t == gpu_network ]]; then
      find "$here/$d" -maxdepth 2 -type f \( -name '*.csv' -o -name '*.yaml' \) -print0 |
        while IFS= read -r -d '' f; do cp "$f" "$seeds/$(echo "${f#$here/$d/}" | tr / _)"; done
    elif [[ $t == kernel_fit ]]; then
      find "$here/$d" -maxdepth 1 -type f -name '*.csv' -exec cp {} "$seeds/" \;
    else
      find "$here/$d" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.json' \) -exec cp {} "$seeds/" \;
    fi
  done
  # A dictionary of the keys the seeds use, so mutations write keys the readers know.
  # (CSV seeds: their header's column names; bytes past ASCII, such as a byte order mark, dropped:
  # libFuzzer reads only ASCII in a dictionary.)
  { grep -ahoE '"?[A-Za-z_][A-Za-z0-9_]*"?:' "$seeds"/* || true
    for f in "$seeds"/*.csv; do [[ -f $f ]] || continue; head -1 "$f" | tr "," "\n"; done; } |
    tr -d '\r' | LC_ALL=C tr -d '\200-\377' | sed '/^$/d' | sort -u | sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/"&"/' > "$build/$t.dict"
  echo "== fuzz $t for $secs s ($(ls "$seeds" | wc -l) seeds, $(ls "$corpus" | wc -l) in corpus, $(ls "$kept" | wc -l) kept)"
  log=$build/fuzz_$t.log
  rc=0
  # -timeout: the slowest seed, a 100000-step card refused at its 500000th op, takes 11 s in
  # this build (1 s in a release one); the Robion scenarios, which plan pi0 and SmolVLA at every
  # batch bucket, take about as long, so units are reported slow only past 20 s. `timeout` ends a fuzzer that hangs in its own timeout
  # handler (seen: libFuzzer's report allocating while the timed-out input held ASan's lock);
  # the seeds run first, outside -max_total_time.
  timeout -k 10 $((secs + 600)) \
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=25 -report_slow_units=20 -rss_limit_mb=2048 \
    -max_len=16384 -close_fd_mask=1 -print_final_stats=1 -dict="$build/$t.dict" \
    -artifact_prefix="$findings/" "$corpus" "$seeds" "$kept" > "$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  total=$((total + ${runs:-0}))
  echo "   $t: ${runs:-?} executions, exit $rc"
  if [[ $rc != 0 ]] || compgen -G "$findings/*" > /dev/null; then
    failed+=("$t")
    grep -E "ERROR|finding|SUMMARY|==[0-9]+==" "$log" | head -30 || true
    for f in "$findings"/*; do
      [[ -f $f ]] || continue
      cp "$f" "$kept/"
      echo "   finding kept as tests/fuzz/regressions/$t/$(basename "$f"); base64:"
      base64 -w 0 "$f" | head -c 4000; echo
    done
  fi
done
echo "== fuzzing: $total executions in all, $((SECONDS - start)) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in ${failed[*]} (logs: $build/fuzz_<target>.log)" >&2
  exit 1
fi
