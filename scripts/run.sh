#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the main job on the default scenario.
# Extra arguments go to the vlasim command (default: simulate scenarios/default.yaml).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
cd "$here"
if [ $# -eq 0 ]; then set -- simulate scenarios/default.yaml --out out/default; fi
exec "${BUILD_DIR:-$here/build}/vlasim" "$@"
