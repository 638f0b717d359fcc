#!/usr/bin/env bash
# Installs what is missing, builds (tests included), and runs the whole test suite with ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
cd "${BUILD_DIR:-$here/build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
