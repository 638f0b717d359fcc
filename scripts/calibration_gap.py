#!/usr/bin/env python3
"""How far the in-context calibration's op times sit from the run's, in the validation suite.

The prediction of a scenario rests on its in-context calibration (`vlasim calibrate --in-context`,
right before the run, in its own process); the suite calibrates once more right after the run.
Each prints, per scenario model, the sum of the runtime's op medians ("ops X ms" in
calibrate.log and calibrate_after.log); compare.json holds the run's own op medians. Their ratio
is the part of a stage error that the calibration brought before any model did: the same ops,
on the same cores, minutes apart.

Over a class's runs (every attempt, marked or not: the machine's drift goes either way, a bias
of the calibration does not), the median gap and a two-sided sign test say whether the
calibration is systematically slower or faster than the run.

  gap(run_dir)              (before / run - 1, after / run - 1), None where a file is missing
  summary(class_dir)        the gaps of every run directory under class_dir, with their sign test
  by_signature(class_dir)   per (stage, op signature) of the 2-core bf16 section, the calibration's
                            figure over the run's mean, each run's overall gap divided out: which
                            ops the calibration times differently from the run (ops are matched to
                            a signature by their predicted time, which is the in-context figure
                            itself; ops whose figure two signatures share are left out)

Usage: calibration_gap.py CLASS_DIR [--by-op]
"""
import collections
import glob
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_marks  # noqa: E402


def calibration_ops(path):
    """Sum over the scenario's models of the op medians a calibrate log printed (s), or None."""
    ms = suite_marks.calibrate_figure(path, "ops")
    return ms / 1e3 if ms > 0 else None


def run_ops(run_dir):
    """Sum of the run's op medians (compare.json operators), or None."""
    path = os.path.join(run_dir, "compare.json")
    if not os.path.exists(path):
        return None
    ops = json.load(open(path)).get("operators", {}).get("ops", [])
    total = sum(o["measured_s"] for o in ops)
    return total if total > 0 else None


def gap(run_dir):
    """(calibration before / run - 1, calibration after / run - 1); None for a missing figure."""
    run = run_ops(run_dir)
    if run is None:
        return None, None
    out = []
    for log in ("calibrate.log", "calibrate_after.log"):
        c = calibration_ops(os.path.join(run_dir, log))
        out.append(None if c is None else c / run - 1)
    return tuple(out)


def sign_test(values):
    """Two-sided exact sign test of the non-zero values against a median of 0 (p, positives, n)."""
    v = [x for x in values if x != 0]
    n, k = len(v), sum(x > 0 for x in v)
    if n == 0:
        return 1.0, 0, 0
    tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail), k, n


def run_dirs(class_dir):
    """Every scenario run directory of a class (attempts included), sorted."""
    return sorted(d for d in glob.glob(os.path.join(class_dir, "*")) if os.path.isdir(d)
                  and os.path.exists(os.path.join(d, "compare.json")))


def summary(class_dir):
    """{'before': (median, p, positives, n), 'after': ...} over the class's runs; None where none."""
    before, after = [], []
    for d in run_dirs(class_dir):
        b, a = gap(d)
        if b is not None:
            before.append(b)
        if a is not None:
            after.append(a)
    out = {}
    for name, v in (("before", before), ("after", after)):
        if v:
            p, k, n = sign_test(v)
            out[name] = (statistics.median(v), p, k, n)
        else:
            out[name] = None
    return out


def by_signature(class_dir, dtype="bf16", threads=2):
    """{(stage, signature): [calibration / run mean / run's overall ratio - 1, one per run]}."""
    shifts = collections.defaultdict(list)
    for d in run_dirs(class_dir):
        prof_path = os.path.join(d, "profile.json")
        if not os.path.exists(prof_path):
            continue
        sections = [s for s in json.load(open(prof_path))["sections"]
                    if s["dtype"] == dtype and s["threads"] == threads]
        if not sections:
            continue
        by_value = collections.defaultdict(list)
        for sig, m in sections[0]["table"].items():
            if m.get("source") == "in-context":
                by_value[round(m["median_s"] * 1e9)].append(sig)
        measured = collections.defaultdict(list)
        predicted = {}
        for o in json.load(open(os.path.join(d, "compare.json")))["operators"]["ops"]:
            sigs = by_value.get(round(o["predicted_s"] * 1e9), [])
            if len(sigs) == 1:
                measured[(o["stage"], sigs[0])].append(o["measured_s"])
                predicted[(o["stage"], sigs[0])] = o["predicted_s"]
        tp = sum(predicted[k] * len(v) for k, v in measured.items())
        tm = sum(sum(v) for v in measured.values())
        if not (tp > 0 and tm > 0):
            continue
        for k, v in measured.items():
            shifts[k].append(predicted[k] / statistics.mean(v) / (tp / tm) - 1)
    return shifts


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    class_dir = argv[1]
    if not os.path.isdir(class_dir):
        print(f"calibration_gap: {class_dir}: no such directory", file=sys.stderr)
        return 2
    s = summary(class_dir)
    for name in ("before", "after"):
        if s[name] is None:
            print(f"calibration {name} the run: no runs with both figures")
            continue
        m, p, k, n = s[name]
        print(f"calibration {name} the run: op total {100 * m:+.2f}% (median over {n} runs), "
              f"slower than the run in {k} of {n}, sign test p = {p:.2g}")
    if "--by-op" in argv[2:]:
        rows = [(k, v) for k, v in by_signature(class_dir).items() if len(v) >= 8]
        rows.sort(key=lambda kv: -abs(statistics.median(kv[1])))
        for (stage, sig), v in rows:
            p, k, n = sign_test(v)
            print(f"{stage:8s} {statistics.median(v) * 100:+6.1f}%  higher in {k:2d} of {n:2d} (p {p:.2g})  {sig}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
