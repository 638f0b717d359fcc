#!/usr/bin/env bash
# Quick start, the main job: installs what is missing, builds, fits the simulator to this
# machine (vlasim calibrate: a quick shape grid plus 120 requests of the default scenario run
# one request at a time; about half a minute), then runs
# scenarios/default.yaml simulated and measured side by side (vlasim compare) into
# out/default/. With arguments, runs `vlasim ARGS...` after the build instead.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
cd "$here"
vlasim=${BUILD_DIR:-$here/build}/vlasim
if [ $# -gt 0 ]; then exec "$vlasim" "$@"; fi
mkdir -p out
# 120 in-context requests (~25 s at the scenario's 5 Hz): enough segment runs for the
# run-to-run variation that gives the prediction its p90/p99.
"$vlasim" calibrate scenarios/default.yaml --grid quick --in-context --context-requests 120 \
  --context-seconds 30 -o out/profile.json
exec "$vlasim" --profile out/profile.json compare scenarios/default.yaml -o out/default
