#!/usr/bin/env bash
# DP-Cache on this machine's CPU (issue 14): is the predicted speed-up the measured one, and how
# far does it move the actions? Runs the executors_test DP-Cache test (float64 reference
# executor) for the relative change of the final actions, then scripts/speedup_check.sh on
# scenarios/validation/dp_cache_off.yaml (calibrated) and dp_cache_pair.yaml (compared: the
# model with and without DP-Cache in one run). Adds a section to reports/dp_cache.md (REPORT
# overrides it). RUNS (default 2) repeats the check. DIT=1 checks GR00T's DiT head instead
# (gr00t_tiny: dp_cache_dit_off.yaml / dp_cache_dit_pair.yaml). Builds nothing: it expects build/vlasim (or
# $VLASIM) and build/tests/executors/executors_test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
tests=${EXECUTORS_TEST:-$here/build/tests/executors/executors_test}
out=out/dp_cache_check
mkdir -p "$out"
"$tests" --gtest_filter='*DpCache*' --gtest_output="xml:$out/dp_cache_test.xml" > "$out/dp_cache_test.log" 2>&1 \
  || { cat "$out/dp_cache_test.log"; exit 1; }
moved_dit=$(python3 - "$out/dp_cache_test.xml" <<'PY'
import re, sys
m = re.search(r'name="dit_dp_cache_action_rel_diff" value="([^"]+)"', open(sys.argv[1]).read())
print("n/a" if not m else f"{float(m.group(1)):.3g}")
PY
)
moved=$(python3 - "$out/dp_cache_test.xml" <<'PY'
import re, sys
xml = open(sys.argv[1]).read()
m = re.search(r'name="dp_cache_action_rel_diff" value="([^"]+)"', xml) or re.search(r' dp_cache_action_rel_diff="([^"]+)"', xml)
print("n/a" if not m else f"{float(m.group(1)):.3g}")
PY
)
if [[ ${DIT:-0} == 1 ]]; then  # GR00T's DiT head (gr00t_tiny) instead of pi0's flow expert
  CHECK_COMMAND="DIT=1 scripts/dp_cache_check.sh" exec bash "$here/scripts/speedup_check.sh" dp_cache_dit_check DP-Cache \
    scenarios/validation/dp_cache_dit_off.yaml scenarios/validation/dp_cache_dit_pair.yaml plain cached \
    "${REPORT:-$here/reports/dp_cache.md}" \
    "GR00T's DiT head (gr00t_tiny). Final actions, relative change with DP-Cache (float64 reference executor, synthetic weights): $moved_dit."
fi
exec bash "$here/scripts/speedup_check.sh" dp_cache_check DP-Cache scenarios/validation/dp_cache_off.yaml \
  scenarios/validation/dp_cache_pair.yaml plain cached "${REPORT:-$here/reports/dp_cache.md}" \
  "Final actions, relative change with DP-Cache (pi0_tiny, float64 reference executor, synthetic weights): $moved."
