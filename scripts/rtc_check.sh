#!/usr/bin/env bash
# Real-time chunking on this machine's CPU (issue 13): are the control delay, the frozen prefix
# and the bounded control rate of scenarios/papers/realtime_rtc_cpu.yaml predicted as they are
# measured? Calibrates the scenario (the quick grid and its ops in context: the fit), then
# `vlasim compare` runs it for real and simulates it with that profile. Adds a section to
# reports/rtc.md (newest first): host, load, and the control comparison of compare.md.
# Builds nothing: it expects build/vlasim (or $VLASIM).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/scripts/check_report.sh"
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
report=${REPORT:-$here/reports/rtc.md}
out=out/rtc
scenario=scenarios/papers/realtime_rtc_cpu.yaml
[[ -x $vlasim ]] || { echo "rtc_check: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$vlasim" calibrate "$scenario" --grid quick --in-context -q -o "$out/profile.json" > "$out/calibrate.log" 2>&1
"$vlasim" --profile "$out/profile.json" compare "$scenario" -q -o "$out/compare"
{
  echo "\`scripts/rtc_check.sh\` on \`$scenario\`."
  echo "Fit: the quick grid and the scenario's ops in context (calibrate); the control figures are predictions."
  echo
  sed -n '/^| stream | figure/,/^$/p' "$out/compare/compare.md"
  echo
  sed -n '/^| model | KS D/,/^$/p' "$out/compare/compare.md"
} > "$out/body.md"
prepend_section "$report" "# Real-time chunking on the CPU executor: predicted vs measured" "$out/host.txt" "$load_start" "$out/body.md"
