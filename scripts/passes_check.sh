#!/usr/bin/env bash
# Graph passes on this machine's CPU (issue 13): is each step of the speed-up table predicted as
# it runs? Calibrates scenarios/papers/realtime_passes_cpu.yaml as the file gives it (the fit:
# the quick grid and the card's default graph, its ops in context), then `vlasim passes
# --measure` predicts every row with that profile and runs every row's graph on the oneDNN
# executor, rows in turn for REPS rounds. Rows other than the card's default set are test rows:
# their unfused or rewritten ops were never measured and come from the profile's fits.
# Adds a section to reports/passes.md (newest first) with the host, the load and the table.
# Builds nothing: it expects build/vlasim (or $VLASIM). REPS (default 15) timed runs per row.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
reps=${REPS:-15}
report=${REPORT:-$here/reports/passes.md}
out=out/passes
[[ -x $vlasim ]] || { echo "passes_check: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
date_start=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$vlasim" calibrate scenarios/papers/realtime_passes_cpu.yaml --grid quick --in-context -q \
  -o "$out/profile.json" > "$out/calibrate.log" 2>&1
"$vlasim" --profile "$out/profile.json" passes scenarios/papers/realtime_passes_cpu.yaml --measure --reps "$reps" \
  -q -o "$out"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
{
  head -1 "$report" 2>/dev/null || echo "# Graph passes on the CPU executor: predicted vs measured"
  echo
  echo "## $date_start: $(sed -n 's/^  cpu: //p' "$out/host.txt")"
  echo
  echo '```'
  cat "$out/host.txt"
  echo '```'
  echo
  echo "Load average at start $load_start, at end $load_end. \`scripts/passes_check.sh\` (REPS=$reps)."
  echo "Fit: the quick grid and the scenario's default graph (qkv_fuse, gateup_fuse, last_layer_skip) in"
  echo "context; every other row is predicted from the profile's fits (a test row)."
  echo
  sed -n '/^| step/,$p' "$out/passes.md"
  echo
  tail -n +2 "$report" 2>/dev/null | sed '1{/^$/d}' || true
} > "$out/report.md"
mv "$out/report.md" "$report"
echo "passes_check: wrote $report"
