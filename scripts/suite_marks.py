#!/usr/bin/env python3
"""Whether the machine disturbed one measured scenario of the validation suite.

Used by scripts/validation_suite.sh twice: after each attempt, to decide whether to measure the
scenario again (RETRIES), and in the report, to leave disturbed runs out of the medians. No
reason looks at the prediction's error, only at the machine:

  sentinel   compare's drift sentinel marked the run (its fixed kernel drifted or its speed
             changed since the calibration beyond the target, or other processes or the
             hypervisor took more than 5% of the CPUs: drift.json "marked");
  calibration drift  the same sentinel, timed right before and right after the calibration the
             prediction uses (the profile's "sentinel"), moved by more than the target: the
             machine changed speed while the segment times the prediction rests on were
             measured. compare's check sets the calibration's speed against the measurement's
             from the mean of its two ends, which a calibration slower at one end than the
             other leaves ambiguous (a split1_serial calibration at +5.2%, whose second core
             group's segment took 19.1 ms in the calibration's in-context requests and 18.0 ms
             in its co-run pass a few seconds later, passed it);
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


def calibrate_figure(log, name):
    """A figure calibrate --in-context printed per scenario model ("NAME X ms": latency, ops,
    segments), in ms summed over the models; 0 when the log or the figure is missing."""
    if not os.path.exists(log):
        return 0.0
    txt = open(log).read().split()
    return sum(float(txt[i - 1]) for i, w in enumerate(txt)
               if w.rstrip(",") == "ms" and i >= 2 and txt[i - 2] == name)


def alone_latency(log):
    """The in-context alone latency (ms, summed over the scenario's models) calibrate printed, 0 when none."""
    return calibrate_figure(log, "latency")


def own_drift(run_dir):
    """The alone latency right after the run over right before it, less 1; None when either is missing."""
    before = alone_latency(os.path.join(run_dir, "calibrate.log"))
    after = alone_latency(os.path.join(run_dir, "calibrate_after.log"))
    return after / before - 1 if before > 0 and after > 0 else None


def calibration_drift(run_dir):
    """The sentinel's kernel time at the end of the calibration in run_dir (profile.json, the one
    the prediction used) over at its start, less 1; None when the profile or its sentinel has
    fewer than two samples."""
    path = os.path.join(run_dir, "profile.json")
    if not os.path.exists(path):
        return None
    samples = json.load(open(path)).get("sentinel") or []
    if len(samples) < 2 or not samples[0][1] > 0:
        return None
    return samples[-1][1] / samples[0][1] - 1


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
    """Why the machine disturbed the run in run_dir, with the three drifts it was judged on:
    (reasons: a list of "sentinel", "calibration drift", "own drift", "in-run drift", in that
    order, empty when undisturbed; own_drift(run_dir); in_run_drift(run_dir);
    calibration_drift(run_dir))."""
    why = []
    dj = os.path.join(run_dir, "drift.json")
    target = TARGET
    if os.path.exists(dj):
        d = json.load(open(dj))
        target = d.get("target", TARGET)
        if d.get("marked"):
            why.append("sentinel")
    cd = calibration_drift(run_dir)
    if cd is not None and abs(cd) > target:
        why.append("calibration drift")
    od = own_drift(run_dir)
    if od is not None and abs(od) > target:
        why.append("own drift")
    ir = in_run_drift(run_dir)
    if ir is not None and ir > target + IN_RUN_NOISE:
        why.append("in-run drift")
    return why, od, ir, cd


def reasons(run_dir):
    """marks(run_dir)'s reasons alone."""
    return marks(run_dir)[0]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: suite_marks.py RUN_DIR (a scenario's directory of a validation suite run)")
    print(", ".join(reasons(sys.argv[1])))
