#!/usr/bin/env python3
"""Whether the machine disturbed one measured scenario of the validation suite.

Used by scripts/validation_suite.sh twice: after each attempt, to decide whether to measure the
scenario again (RETRIES), and in the report, to leave disturbed runs out of the medians. No
reason looks at the prediction's error, only at the machine:

  sentinel   compare's drift sentinel marked the run (its fixed kernel drifted or its speed
             changed since the calibration beyond the target, or other processes or the
             hypervisor took more than 5% of the CPUs: drift.json "marked");
  own drift  the scenario's own alone latency, measured in context right before the run and
             again right after it, moved by more than the same target: the machine's speed for
             this very work changed while it was measured (the sentinel's 96^3 matrix product
             stays in the core's caches and misses a change in memory or cache speed);
  in-run drift  the scenario's own segments slowed or sped up within the run: the medians of
             a segment's measured runs over the run's five consecutive fifths differ by more
             than the target plus the sampling noise of such a median (IN_RUN_NOISE). Both checks
             above look only at the run's ends; a VM that slows for a few seconds in the
             middle of the run and recovers before the calibration after it passes them (a
             single_bf16 run at 18.6 ms per request for two fifths and 26.0 ms for the last two,
             with the sentinel at +1.4% and its own drift at +0.8%). The suite's scenarios
             are stationary (fixed rates over the whole run), so without the machine changing
             speed the fifths' medians agree.

Usage: suite_marks.py DIR   prints the reasons DIR's run is marked, one line ("" when none).
"""
import json
import os
import statistics
import sys

TARGET = 0.03  # compare's drift target (drift.json "target")
# The spread between five medians of a segment's runs that the run-to-run variation alone gives:
# with 10-80 runs per fifth and a few percent between runs, one median moves by about 0.5-1%,
# the largest over the smallest of five by up to about 2%.
IN_RUN_NOISE = 0.02
FIFTHS = 5
MIN_PER_FIFTH = 10  # a segment with fewer measured runs per fifth is not judged


def alone_latency(log):
    """The in-context alone latency (ms, summed over the scenario's models) calibrate printed, 0 when none."""
    if not os.path.exists(log):
        return 0.0
    txt = open(log).read().split()
    return sum(float(txt[i - 1]) for i, w in enumerate(txt) if w == "ms" and i >= 2 and txt[i - 2] == "latency")


def own_drift(run_dir):
    """The alone latency right after the run over right before it, less 1; None when either is missing."""
    before = alone_latency(os.path.join(run_dir, "calibrate.log"))
    after = alone_latency(os.path.join(run_dir, "calibrate_after.log"))
    return after / before - 1 if before > 0 and after > 0 else None


def in_run_drift(run_dir):
    """The largest, over the run's compute segments with enough measured runs, of the largest over
    the smallest median of the segment's runs in each fifth of the run (by start), less 1; None
    when no segment has MIN_PER_FIFTH runs per fifth or the measured trace is missing."""
    path = os.path.join(run_dir, "execute", "trace.json")
    if not os.path.exists(path):
        return None
    runs = {}
    for e in json.load(open(path)).get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") == "compute" and e.get("dur", 0) > 0:
            runs.setdefault((e.get("tid"), e.get("name")), []).append((e["ts"], e["dur"]))
    worst = None
    for seg in runs.values():
        n = len(seg) // FIFTHS
        if n < MIN_PER_FIFTH:
            continue
        seg.sort()
        meds = [statistics.median(d for _, d in seg[i * n:(i + 1) * n]) for i in range(FIFTHS)]
        spread = max(meds) / min(meds) - 1
        worst = spread if worst is None else max(worst, spread)
    return worst


def marks(run_dir):
    """Why the machine disturbed the run in run_dir, with the two drifts it was judged on:
    (reasons: a list of "sentinel", "own drift", "in-run drift", empty when undisturbed;
    own_drift(run_dir); in_run_drift(run_dir))."""
    why = []
    dj = os.path.join(run_dir, "drift.json")
    target = TARGET
    if os.path.exists(dj):
        d = json.load(open(dj))
        target = d.get("target", TARGET)
        if d.get("marked"):
            why.append("sentinel")
    od = own_drift(run_dir)
    if od is not None and abs(od) > target:
        why.append("own drift")
    ir = in_run_drift(run_dir)
    if ir is not None and ir > target + IN_RUN_NOISE:
        why.append("in-run drift")
    return why, od, ir


def reasons(run_dir):
    """marks(run_dir)'s reasons alone."""
    return marks(run_dir)[0]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: suite_marks.py RUN_DIR (a scenario's directory of a validation suite run)")
    print(", ".join(reasons(sys.argv[1])))
