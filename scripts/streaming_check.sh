#!/usr/bin/env bash
# Full streaming on this machine's CPU (issue 13): are the per-stream rates, latency and prefix
# staleness of scenarios/papers/realtime_streaming_cpu.yaml predicted as measured? Calibrates the
# scenario twice (the fits: the quick grid and its ops timed back to back, "ops alone"; and the
# same plus its segments run one request at a time, "in context"), and with each profile
# `vlasim compare` runs and simulates it twice: as written (VLM 30 Hz, action expert 200 Hz)
# and with the action expert asked for 1000 Hz, past what its core can do, so the achieved rate
# is the core's throughput and a prediction, not the rate asked. Adds a section to
# reports/streaming.md (newest first).
# Builds nothing: it expects build/vlasim (or $VLASIM). AE_HZ overrides the saturated rate.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/scripts/check_report.sh"
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
report=${REPORT:-$here/reports/streaming.md}
ae_hz=${AE_HZ:-1000}
out=out/streaming
scenario=scenarios/papers/realtime_streaming_cpu.yaml
[[ -x $vlasim ]] || { echo "streaming_check: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
# The saturated variant sits beside the original so its relative profile path still resolves.
saturated=scenarios/papers/.streaming_saturated.yaml
trap 'rm -f "$saturated"' EXIT
sed "s/rate_hz: 200, deadline_ms: 5/rate_hz: $ae_hz, deadline_ms: 5/" "$scenario" > "$saturated"
grep -q "rate_hz: $ae_hz" "$saturated" || { echo "streaming_check: could not set the expert's rate" >&2; exit 1; }
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for fit in alone context; do
  flag=(); [[ $fit == context ]] && flag=(--in-context)
  "$vlasim" calibrate "$scenario" --grid quick "${flag[@]}" -q -o "$out/profile_$fit.json" > "$out/calibrate_$fit.log" 2>&1
  "$vlasim" --profile "$out/profile_$fit.json" compare "$scenario" -q -o "$out/nominal_$fit"
  "$vlasim" --profile "$out/profile_$fit.json" compare "$saturated" -q -o "$out/saturated_$fit"
done
{
  echo "\`scripts/streaming_check.sh\` on \`$scenario\`."
  echo "Fits: the quick grid and the scenario's ops timed back to back (ops alone), or also its segments run one"
  echo "request at a time (in context); the stream figures are predictions."
  echo
  for fit in alone context; do
    echo "Fit $fit, as written (VLM 30 Hz, action expert 200 Hz):"
    echo
    sed -n '/^| stream | stages/,/^$/p' "$out/nominal_$fit/compare.md"
    echo
    echo "Fit $fit, action expert asked for $ae_hz Hz (saturated):"
    echo
    sed -n '/^| stream | stages/,/^$/p' "$out/saturated_$fit/compare.md"
    echo
  done
} > "$out/body.md"
prepend_section "$report" "# Full streaming on the CPU executor: predicted vs measured" "$out/host.txt" "$load_start" "$out/body.md"
