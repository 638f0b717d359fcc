#!/usr/bin/env bash
# V-AEFusion on this machine's CPU (issue 14): the small pi0 with its VLM on one core and its
# action expert on the other, with and without 5 of its 10 flow steps stale
# (scenarios/validation/v_aefusion_off.yaml calibrated, v_aefusion_pair.yaml compared; see
# scripts/speedup_check.sh). Adds a section to reports/v_aefusion.md (REPORT overrides it).
# RUNS (default 2) repeats the check. Builds nothing: it expects build/vlasim (or $VLASIM).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec bash "$here/scripts/speedup_check.sh" v_aefusion_check V-AEFusion scenarios/validation/v_aefusion_off.yaml \
  scenarios/validation/v_aefusion_pair.yaml plain fused "${REPORT:-$here/reports/v_aefusion.md}" \
  "How far the stale steps move the actions: ExecutorEndToEnd.VAeFusionStaleStepsMoveTheActionsByAReportedAmount (float64 reference; 0.40 relative change on pi0_tiny with synthetic weights and an unrelated previous frame)."
