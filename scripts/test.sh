#!/usr/bin/env bash
# Installs what is missing, builds (tests included), and runs the whole test suite with ctest.
# Tests run one at a time: several measure real kernels (core-group concurrency, calibration,
# the predicted-vs-measured gate), and two of them at once on 2 cores would measure each other.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
cd "${BUILD_DIR:-$here/build}"
ctest --output-on-failure --timeout 600
