#!/usr/bin/env bash
# The GPU kit runs from anywhere on a machine without vlasim's dependencies (issue 42): builds it
# with scripts/gpu_kit.sh, moves it to another folder, and runs its programs with LD_LIBRARY_PATH
# limited to the kit, under strace. Fails when
#   - a library a kit program or the CUDA module loads resolves outside the kit, other than
#     glibc, libstdc++, libgcc and CUDA's own (ldd, and every library opened at run time);
#   - a run reads anything from the source tree or the kit's build tree;
#   - `vlasim --version`, a GPU scenario simulated, `vlasim list cards` fail, or the CUDA tests
#     do not pass by skipping cleanly (this machine has no GPU), or bench_cuda fails;
#   - scripts/gpu_check.sh --kit KIT.tar.gz, which runs here too (every GPU step fails fast), does
#     not leave its report, its steps table and at most 8 files in $OUT, or its simulation steps
#     fail.
#   tests/kit/kit_test.sh            # KIT_BUILD_DIR: the kit's build tree (default build-kit/)
# Prints "kit_test: PASS" and exits 0, or "kit_test: FAIL: why" and exits 1.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "kit_test: FAIL: $*"; exit 1; }
command -v strace >/dev/null || fail "strace is not installed (scripts/setup.sh installs it)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vlasim-kit-test.XXXXXX")
trap '[[ -n ${KIT_TEST_KEEP:-} ]] || rm -rf "$tmp"' EXIT

build=${KIT_BUILD_DIR:-$here/build-kit}
BUILD_DIR=$build bash "$here/scripts/gpu_kit.sh" "$tmp/built/kit" || fail "scripts/gpu_kit.sh failed"
mkdir -p "$tmp/elsewhere"
mv "$tmp/built/kit" "$tmp/elsewhere/moved"   # the kit must not depend on where it was written
kit=$tmp/elsewhere/moved

# Allowed outside the kit: what the GPU machine itself provides (scripts/gpu_kit_provided.txt).
stems=$(grep -v '^#' "$here/scripts/gpu_kit_provided.txt" | tr -s ' \n' '|' | sed 's/^|//; s/|$//')
provided="/($stems)\.so[^/]*\$"
for f in "$kit"/bin/* "$kit"/lib/*.so*; do
  while read -r line; do
    name=$(awk '{print $1}' <<<"$line")
    path=$(awk '$2 == "=>" {print $3}' <<<"$line")
    [[ $line == *"not found"* ]] && { [[ /$name =~ $provided ]] && continue; fail "$(basename "$f"): $name not found in the kit"; }
    [[ -z $path ]] && continue
    [[ $path == "$kit"/* ]] && continue
    [[ $path =~ $provided ]] && continue
    fail "$(basename "$f") loads $path from outside the kit"
  done < <(LD_LIBRARY_PATH=$kit/lib ldd "$f" 2>&1)
done

# Runs a kit program as a bare machine would (no VLASIM_* variables, the kit's libraries only),
# from a folder outside both trees, recording what it opens.
bare() {
  (cd "$tmp" && env -i PATH=/usr/bin:/bin HOME="$tmp" SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 LD_LIBRARY_PATH="$kit/lib" \
     strace -f -qq -e trace=open,openat,execve -o "$tmp/strace.$1.log" "${@:2}")
}
bare version "$kit/bin/vlasim" --version > "$tmp/version.txt" 2>&1 || fail "vlasim --version: $(cat "$tmp/version.txt")"
bare cards "$kit/bin/vlasim" list cards > "$tmp/cards.txt" 2>&1 || fail "vlasim list cards: $(tail -3 "$tmp/cards.txt")"
grep -q pi0 "$tmp/cards.txt" || fail "vlasim list cards shows no pi0: $(head -5 "$tmp/cards.txt")"
bare simulate "$kit/bin/vlasim" simulate "$kit/scenarios/gpu_check/pi0.yaml" -q -o "$tmp/sim" > "$tmp/sim.txt" 2>&1 \
  || fail "simulating the kit's pi0 scenario: $(tail -5 "$tmp/sim.txt")"
[[ -s $tmp/sim/report.json ]] || fail "the simulation wrote no report.json"
bare tests "$kit/bin/cuda_probe_test" > "$tmp/tests.txt" 2>&1 || fail "the CUDA tests failed: $(tail -15 "$tmp/tests.txt")"
grep -q "SKIPPED" "$tmp/tests.txt" || fail "the CUDA tests ran without skipping on a machine without a GPU"
grep -q "\[  PASSED  \]" "$tmp/tests.txt" || fail "the CUDA tests passed nothing (the registry tests run everywhere)"
bare bench "$kit/bin/bench_cuda" > "$tmp/bench.txt" 2>&1 || fail "bench_cuda failed: $(tail -5 "$tmp/bench.txt")"
# The cuda executor made without a GPU: the module loads from the kit and refuses with a reason.
bare executor "$kit/bin/vlasim" execute "$kit/scenarios/gpu_check/pi0_torch.yaml" --executor cuda -q -o "$tmp/exec" \
  > "$tmp/exec.txt" 2>&1
rc=$?
((rc > 0 && rc < 128)) || fail "the cuda executor without a GPU: exit $rc ($(tail -3 "$tmp/exec.txt"))"

for log in "$tmp"/strace.*.log; do
  opened=$(grep -E '(open|openat)\(' "$log" | grep -vE '= -1 ' | sed -E 's/.*open(at)?\((AT_FDCWD, )?"([^"]*)".*/\3/')
  if src=$(grep -E "^($here|$build)/" <<<"$opened" | head -3) && [[ -n $src ]]; then
    fail "$(basename "$log" .log | cut -d. -f2) read from the source or build tree: $src"
  fi
  while read -r so; do
    [[ -z $so || $so == "$kit"/* || $so =~ $provided ]] && continue
    fail "$(basename "$log" .log | cut -d. -f2) loaded $so from outside the kit"
  done < <(grep -E '\.so(\.[0-9.]+)?$' <<<"$opened")
done
grep -q "libvlasim_cuda_executor.so" "$tmp/strace.executor.log" || fail "the cuda executor's module was never opened"
grep -E "\"$kit/(bin/\.\./)?lib/libvlasim_cuda_executor\.so\".* = [0-9]" "$tmp/strace.executor.log" >/dev/null \
  || fail "the cuda executor's module was not opened from the kit"

# The check itself, from the packed kit, on this GPU-less machine: it must run to its end.
OUT=$tmp/out GPU_CHECK_BUDGET_S=240 bash "$kit/scripts/gpu_check.sh" --kit "$tmp/built/kit.tar.gz" > "$tmp/check.txt" 2>&1
[[ -s $tmp/out/gpu_executor.md ]] || fail "gpu_check wrote no report: $(tail -20 "$tmp/check.txt")"
[[ -s $tmp/out/gpu_check.tar.gz ]] || fail "gpu_check archived nothing"
n=$(find "$tmp/out" -type f | wc -l)
((n <= 8)) || fail "gpu_check left $n files in \$OUT (the device tool brings back 8)"
for s in device tests bench kernel torch torch_sim calibrate; do
  grep -q "^$s	" "$tmp/out/steps.tsv" || fail "gpu_check has no '$s' step: $(cat "$tmp/out/steps.tsv")"
done
for s in tests torch_sim; do
  grep -q "^$s	0	" "$tmp/out/steps.tsv" || fail "gpu_check's '$s' step failed without a GPU: $(grep "^$s	" "$tmp/out/steps.tsv")"
done
grep -q "^### Targets" "$tmp/out/gpu_executor.md" || fail "the report has no targets table"
echo "kit_test: PASS ($(du -sm "$kit" | cut -f1) MB unpacked, $(( ($(stat -c %s "$tmp/built/kit.tar.gz") + 1048575) / 1048576 )) MB packed)"
