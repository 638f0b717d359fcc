#!/usr/bin/env bash
# The vlasim command as a user meets it: exit codes, error messages, byte-identical reports.
# Usage: cli_test.sh VLASIM_BINARY SOURCE_DIR
set -u
bin=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
expect_error() {  # expect_error NAME EXIT_CODE PATTERN ARGS...
  local name=$1 code=$2 pattern=$3; shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name: exit $code (got $rc)" test "$rc" -eq "$code"
  check "$name: message matches '$pattern'" grep -q -- "$pattern" "$tmp/err"
}

export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
expect_error "missing file" 2 "cannot open file" simulate "$src/no/such/file.yaml"
expect_error "malformed yaml" 2 "malformed_yaml.yaml:7" simulate "$src/tests/data/broken_scenarios/malformed_yaml.yaml"
expect_error "unknown policy" 2 "valid names are: fifo" simulate "$src/tests/data/broken_scenarios/unknown_policy.yaml"
expect_error "does not fit" 2 "over by" simulate "$src/tests/data/broken_scenarios/does_not_fit.yaml"
expect_error "unknown card" 2 "no model card 'nope'" graph nope
expect_error "unknown list family" 2 "valid names are" list nope
expect_error "no subcommand" 106 "" 

"$bin" simulate "$src/scenarios/default.yaml" -q -o "$tmp/a"; rc1=$?
"$bin" simulate "$src/scenarios/default.yaml" -q -o "$tmp/b"; rc2=$?
check "simulate exits 0" test "$rc1" -eq 0 -a "$rc2" -eq 0
check "same scenario and seed: byte-identical report.json" cmp -s "$tmp/a/report.json" "$tmp/b/report.json"
check "same scenario and seed: byte-identical requests.csv" cmp -s "$tmp/a/requests.csv" "$tmp/b/requests.csv"
check "trace is Chrome trace JSON" grep -q '"traceEvents"' "$tmp/a/trace.json"
"$bin" simulate "$src/scenarios/default.yaml" -q --seed 9 -o "$tmp/c"
check "another seed changes the report" bash -c "! cmp -s '$tmp/a/report.json' '$tmp/c/report.json'"
"$bin" list >"$tmp/list"
for part in roofline edf async onednn periodic rtx4090 pi0_small; do
  check "list shows $part" grep -q "$part" "$tmp/list"
done
"$bin" graph pi0 --views 2 --prompt 0 --chunk 63 --steps 10 >"$tmp/graph"
check "graph prints the stages" grep -q "prefix" "$tmp/graph"

# This CPU's capabilities, and a CPU without bf16 (oneDNN capped at AVX2, as on an AVX2-only
# host): an explicit bf16 is refused before any work with file, line, key, ISA and the way out.
"$bin" list host >"$tmp/host"
check "list host names the ISA" grep -q "effective isa" "$tmp/host"
check "list host says what dtype auto picks" grep -q "dtype auto: \(fp32\|bf16\)" "$tmp/host"
ONEDNN_MAX_CPU_ISA=AVX2 "$bin" list host >"$tmp/host_avx2"
check "under the AVX2 cap, auto is fp32" grep -q "dtype auto: fp32" "$tmp/host_avx2"
sed 's/dtype: auto/dtype: bf16/' "$src/scenarios/default.yaml" >"$tmp/bf16.yaml"
line=$(grep -n "dtype: bf16" "$tmp/bf16.yaml" | cut -d: -f1)
export ONEDNN_MAX_CPU_ISA=AVX2
expect_error "explicit bf16 on AVX2 (execute)" 2 "bf16.yaml:$line:.*models\[0\].dtype.*ISA avx2.*dtype: fp32" execute "$tmp/bf16.yaml" -q
expect_error "explicit bf16 on AVX2 (calibrate)" 2 "bf16.yaml:$line:.*ISA avx2" calibrate "$tmp/bf16.yaml" --grid none -q -o "$tmp/p.json"
expect_error "calibrate --dtypes bf16 on AVX2" 2 "--dtypes.*ISA avx2" calibrate --dtypes bf16 --grid quick -q -o "$tmp/p.json"
unset ONEDNN_MAX_CPU_ISA
check "nothing was calibrated" test ! -e "$tmp/p.json"
# A profile made on another ISA (or recording none) is refused for a comparison on this host.
sed -e '/^  "isa":/d' -e 's/^ "made_with": {$/ "made_with": {\n  "isa": "some_other_isa",/' \
  "$src/scenarios/validation/profile.json" >"$tmp/other_isa.json"
expect_error "profile of another ISA" 2 "--profile.*ISA some_other_isa" --profile "$tmp/other_isa.json" compare "$src/scenarios/default.yaml" -q
sed -e '/^  "isa":/d' "$src/scenarios/validation/profile.json" >"$tmp/no_isa.json"
expect_error "profile without an ISA" 2 "does not record the CPU ISA" --profile "$tmp/no_isa.json" compare "$src/scenarios/default.yaml" -q

echo "$passed passed, $failed failed"
test "$failed" -eq 0
