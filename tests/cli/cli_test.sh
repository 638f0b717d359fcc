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

echo "$passed passed, $failed failed"
test "$failed" -eq 0
