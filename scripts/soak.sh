#!/usr/bin/env bash
# Soak: the Robion fleet (scenarios/systems/robion_h100.yaml, 16 robots at 10 Hz) simulated for
# 10 M and 100 M requests with --stream-records, and for 10 M keeping every record; peak RSS
# and wall time of each, appended to reports/soak.md with the machine.
# Usage: scripts/soak.sh [BUILD_DIR]   (default build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build}/vlasim
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
run() {  # run LABEL DURATION_S ARGS...: prints "label | requests | seconds | peak RSS MB"
  local label=$1 dur=$2; shift 2
  sed "s/duration_s: 10/duration_s: $dur/g" "$root/scenarios/systems/robion_h100.yaml" >"$tmp/s.yaml"
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" simulate "$tmp/s.yaml" --max-requests 2e8 "$@" >"$tmp/out"
  local n; n=$(head -1 "$tmp/out" | sed 's/.*: \([0-9]*\) requests.*/\1/')
  read -r secs kb <"$tmp/time"
  printf '| %s | %s | %s | %d |\n' "$label" "$n" "$secs" $((kb / 1024))
}
{
  echo
  echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, commit $(git -C "$root" describe --always --dirty)"
  echo
  echo "| run | requests | wall s | peak RSS MB |"
  echo "|---|---|---|---|"
  run "streamed, 10 M" 62500 --stream-records
  run "streamed, 100 M" 625000 --stream-records
  run "kept, 10 M" 62500
} | tee -a "$root/reports/soak.md"
