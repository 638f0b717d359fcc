#!/usr/bin/env bash
# Sanitizer leg (issue 15). Builds, in a build folder of its own, only the test programs it
# runs, with the sanitizers on every target (cmake/VlasimSanitize.cmake), and runs their tests
# through ctest, one binary's tests at a time being chosen by label (tests/CMakeLists.txt).
#   scripts/sanitize.sh [address]  ASan + LeakSanitizer + UBSan (float-cast-overflow included,
#                                  every report fatal) on the loader, model, engine and runtime
#                                  tests; build-asan/ (SAN_BUILD_DIR overrides)
#   scripts/sanitize.sh thread     TSan on the runtime tests; build-tsan/
# oneDNN, SystemC, yaml-cpp and GoogleTest are Debian's uninstrumented shared libraries.
# ASan and UBSan need nothing from them; reports inside them are suppressed in
# tests/sanitizers/*.supp, each line with its reason, never a frame of our own code.
# Run after scripts/setup.sh (the packages). SAN_JOBS: build jobs (default: nproc); SAN_OPT: the
# optimisation flags (default -O0 -g1, set on every configure, so a folder another run
# configured otherwise is brought back to them).
# SAN_WITH_FUZZERS=1 (address only): build with clang 14 in build-fuzz/, the folder and flags
# of scripts/fuzz.sh, and build its libFuzzer programs there too, so that the fuzzing leg
# runs them with FUZZ_SKIP_BUILD=1 instead of compiling the library a third time (what
# scripts/test.sh does: about 150 s less on 2 cores). The tests then also carry libFuzzer's
# coverage instrumentation, which changes nothing they check.
set -euo pipefail
exclude=""
fuzz_args=()
targets=(vlasim_sanitize_tests)
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-address}
supp=$here/tests/sanitizers
case $mode in
  address)
    sanitize=address,undefined
    build=${SAN_BUILD_DIR:-$here/build-asan}
    if [[ ${SAN_WITH_FUZZERS:-0} == 1 ]]; then
      build=${SAN_BUILD_DIR:-${FUZZ_BUILD_DIR:-$here/build-fuzz}}
      "$here/scripts/install_packages.sh" clang-14 libclang-rt-14-dev llvm-14
      export CXX=clang++-14 CC=clang-14 ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
      fuzz_args=(-DVLASIM_FUZZ=ON)
      targets+=(vlasim_fuzzers)
    fi
    # loader; models; engine and the rest of sim; runtime
    tests=(config_test scenario_test data_dir_test build_test
           models_test
           engine_test flow_test zone_test load_test catalog_test torch_trace_test
           runtime_test)
    ;;
  thread)
    sanitize=thread
    build=${SAN_BUILD_DIR:-$here/build-tsan}
    tests=(runtime_test)
    # libgomp is not built with TSan: its barriers are invisible to it, so every OpenMP team
    # of more than one thread reports races between its own members. The runtime tests use
    # one-core groups (CoreWorker sets the team to the group's size, 1), and this keeps any
    # OpenMP region outside a CoreWorker at one thread too, so each report is about threads
    # vlasim starts itself (unit runners, core workers, background load), synchronised with
    # the pthread calls TSan intercepts.
    export OMP_NUM_THREADS=1
    ;;
  *) echo "usage: $0 [address|thread]" >&2; exit 2 ;;
esac

# Also exported while building: gtest_discover_tests runs each test program at build time.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:check_initialization_order=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

start=$SECONDS
mkdir -p "$build"
# A unity build (each target's sources compiled as one): the headers (GoogleTest, SystemC,
# oneDNN, nlohmann/json, Boost) are most of the compile time, and this halves it, which is what
# lets this leg fit in CI's time limit.
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=ON -DVLASIM_SANITIZE=$sanitize \
      "-DVLASIM_SANITIZE_OPT=${SAN_OPT:--O0 -g1}" \
      -DVLASIM_BUILD_TESTS=ON -DVLASIM_BUILD_BENCHMARKS=OFF -DVLASIM_WITH_CUDA=OFF \
      "-DVLASIM_SANITIZE_TESTS=$(IFS=';'; echo "${tests[*]}")" ${fuzz_args[@]+"${fuzz_args[@]}"} ${SAN_CMAKE_ARGS:-} \
      > "$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "${SAN_JOBS:-$(nproc)}" --target "${targets[@]}"
built=$SECONDS
labels=$(IFS='|'; echo "^(${tests[*]})\$")
echo "== $mode sanitizer: ${tests[*]}"
# The runtime tests time threads and kernels, so they run alone; the others two at a time.
if [[ $mode == address ]]; then
  ctest --test-dir "$build" -L "$labels" -LE '^runtime_test$' ${exclude:+-E "$exclude"} -j 2 \
        --output-on-failure --timeout 600
fi
ctest --test-dir "$build" -L '^runtime_test$' ${exclude:+-E "$exclude"} --output-on-failure --timeout 600
echo "== $mode sanitizer leg: build $((built - start)) s, tests $((SECONDS - built)) s"
