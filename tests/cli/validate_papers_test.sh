#!/usr/bin/env bash
# The shipped figure table (scenarios/papers/figures.yaml) still evaluates: every figure gets a
# row, every evaluated one a number, and the summary says whether the target is met.
# Usage: validate_papers_test.sh VLASIM_BINARY SOURCE_DIR
set -u
bin=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
fail=0
"$bin" validate-papers "$src/scenarios/papers/figures.yaml" -o "$tmp/a" >/dev/null 2>"$tmp/err" || { echo "FAILED: exit $?"; cat "$tmp/err"; exit 1; }
# stderr is a file here, not a terminal: no progress frames in it without --progress
if grep -q $'\r' "$tmp/err" || grep -qE '\] +[0-9]+%' "$tmp/err"; then echo "FAILED: progress frames in a file"; fail=1; fi
figures=$(grep -c '^  - id:' "$src/scenarios/papers/figures.yaml")
evaluated=$(grep -c '^    eval:' "$src/scenarios/papers/figures.yaml")
rows=$(($(wc -l <"$tmp/a/validate.csv") - 1))
[[ $rows == "$figures" ]] || { echo "FAILED: $rows rows for $figures figures"; fail=1; }
numbers=$(awk -F, 'NR > 1 && $5 == 1 && $9 != "" {n++} END {print n + 0}' "$tmp/a/validate.csv")
[[ $numbers == "$evaluated" ]] || { echo "FAILED: $numbers figures with a prediction, $evaluated evaluated"; fail=1; }
grep -q "Out of sample: median |error|" "$tmp/a/validate.md" || { echo "FAILED: no summary line"; fail=1; }
echo "$rows figures, $numbers predicted"
exit $fail
