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
source "$here/scripts/check_report.sh"
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
reps=${REPS:-15}
report=${REPORT:-$here/reports/passes.md}
out=out/passes
[[ -x $vlasim ]] || { echo "passes_check: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$vlasim" calibrate scenarios/papers/realtime_passes_cpu.yaml --grid quick --in-context -q \
  -o "$out/profile.json" > "$out/calibrate.log" 2>&1
"$vlasim" --profile "$out/profile.json" passes scenarios/papers/realtime_passes_cpu.yaml --measure --reps "$reps" \
  -q -o "$out"
{
  echo "\`scripts/passes_check.sh\` (REPS=$reps)."
  echo "Fit: the quick grid and the scenario's default graph (qkv_fuse, gateup_fuse, epilogue_fuse, last_layer_skip)"
  echo "in context; every other row is predicted from the profile's fits (a test row)."
  echo
  sed -n '/^| step/,$p' "$out/passes.md"
} > "$out/body.md"
prepend_section "$report" "# Graph passes on the CPU executor: predicted vs measured" "$out/host.txt" "$load_start" "$out/body.md"
