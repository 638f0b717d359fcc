#!/usr/bin/env bash
# The CPU analogue of Robion on this machine (issue 11): is scenarios/papers/robion_cpu.yaml
# (two models, stage disaggregation over two core groups, dynamic batches, ESF) predicted as it
# runs? Calibrates the scenario (the quick grid, its ops in context one request at a time, and
# each batched segment at every batch size its core group runs: the fit), then `vlasim compare`
# runs it for real and simulates it with that profile. Adds a section to reports/robion_cpu.md (newest first): host, load, the
# per-model comparison and the batches each core group ran, predicted and measured.
# Builds nothing: it expects build/vlasim (or $VLASIM).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/scripts/check_report.sh"
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
report=${REPORT:-$here/reports/robion_cpu.md}
# SCENARIO: another scenario of the same form (scenarios/papers/robion_cpu_omni.yaml: the
# vLLM-Omni-like baseline's continuous batching); its files go to out/<its name>.
scenario=${SCENARIO:-scenarios/papers/robion_cpu.yaml}
[[ -f $scenario ]] || { echo "robion_cpu_check: $scenario not found" >&2; exit 1; }
out=out/$(basename "$scenario" .yaml)
[[ -x $vlasim ]] || { echo "robion_cpu_check: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$vlasim" calibrate "$scenario" --grid quick --in-context -q -o "$out/profile.json" > "$out/calibrate.log" 2>&1
"$vlasim" --profile "$out/profile.json" compare "$scenario" -q -o "$out/compare"
# Batches per core group and size: (group, requests in the batch) -> runs, from each trace.
batches() {
  python3 - "$1" <<'PY'
import json, sys, collections
t = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in t if e.get("name") == "thread_name"}
c = collections.Counter((names[e["tid"]], e.get("args", {}).get("items", 1)) for e in t if e.get("ph") == "X")
print(", ".join(f"{g} x{n}: {k}" for (g, n), k in sorted(c.items())))
PY
}
{
  echo "\`scripts/robion_cpu_check.sh\` on \`$scenario\`."
  echo "Fit: the quick grid, the scenario's ops in context one request at a time, and its batched"
  echo "segments at each batch size (calibrate --in-context). The run's queueing, batching and"
  echo "deadlines are the test."
  echo
  sed -n '/^| model | metric/,/^$/p' "$out/compare/compare.md" | grep -E '^\|(---| model| [a-z0-9_]+ \| (p50|p99|mean latency|deadline|throughput))'
  echo
  sed -n '/^| model | stage/,/^$/p' "$out/compare/compare.md"
  echo "Batches run (core group x requests in the batch: runs):"
  echo
  echo "- predicted: $(batches "$out/compare/simulate/trace.json")"
  echo "- measured: $(batches "$out/compare/execute/trace.json")"
  echo
} > "$out/body.md"
prepend_section "$report" "# Robion's CPU analogue: predicted vs measured" "$out/host.txt" "$load_start" "$out/body.md"
