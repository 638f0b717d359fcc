#!/usr/bin/env python3
"""Whether the machine disturbed one measured scenario of the validation suite.

Used by scripts/validation_suite.sh twice: after each attempt, to decide whether to measure the
scenario again (RETRIES), and in the report, to leave disturbed runs out of the medians. Neither
reason looks at the prediction's error, only at the machine:

  sentinel   compare's drift sentinel marked the run (its fixed kernel drifted or its speed
             changed since the calibration beyond the target, or other processes or the
             hypervisor took more than 5% of the CPUs: drift.json "marked");
  own drift  the scenario's own alone latency, measured in context right before the run and
             again right after it, moved by more than the same target: the machine's speed for
             this very work changed while it was measured (the sentinel's 96^3 matrix product
             stays in the core's caches and misses a change in memory or cache speed).

Usage: suite_marks.py DIR   prints the reasons DIR's run is marked, one line ("" when none).
"""
import json
import os
import sys

TARGET = 0.03  # compare's drift target (drift.json "target")


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


def reasons(run_dir):
    """Why the machine disturbed the run in run_dir: a list of "sentinel", "own drift" (empty: undisturbed)."""
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
    return why


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: suite_marks.py RUN_DIR (a scenario's directory of a validation suite run)")
    print(", ".join(reasons(sys.argv[1])))
