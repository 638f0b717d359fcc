#!/usr/bin/env python3
"""A/B of the dispatch time's form on measured validation runs (issue 32, session 30).

For each scenario run folder given (out/validation/<class>/<scenario>[.attemptN], as
scripts/validation_suite.sh leaves it: profile.json, calibrate.log, compare.json), predicts the
scenario twice with `vlasim simulate` from the same calibration:
  one  every section's dispatch as one figure per op (op_overhead_share dropped, op_overhead_s
       set to the "one figure per op" calibrate printed for that section);
  fit  the profile as calibrated (a time per op plus a share of the op's time where fitted);
and prints, per run, each stage's error against the measured stage mean in compare.json and
the median |stage error| of each form. Sections calibrate printed no fit for are left as they
are. Python 3 standard library only.

Usage: scripts/dispatch_ab.py [--vlasim build/vlasim] RUN_DIR...
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIT_LINE = re.compile(r"dispatch (\d+) core\(s\) (\w+): .*one figure per op: ([\d.]+) us")


def one_figure(log_path):
    """(threads, dtype) -> the one figure per op (seconds) calibrate printed in log_path."""
    with open(log_path) as f:
        return {(int(m.group(1)), m.group(2)): float(m.group(3)) * 1e-6 for m in FIT_LINE.finditer(f.read())}


def stage_errors(vlasim, profile, scenario, measured, tmp):
    """[(model.stage, error %)] of `scenario` simulated with `profile` against `measured`."""
    out = os.path.join(tmp, "sim")
    subprocess.run([vlasim, "--profile", profile, "simulate", scenario, "-q", "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    errs = []
    for m in report["models"]:
        for stage, v in m["stages"].items():
            key = (m["name"], stage)
            if key in measured and measured[key] > 0:
                errs.append(("%s.%s" % key, 100 * (v["mean_s"] / measured[key] - 1)))
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vlasim", default=os.path.join(HERE, "build", "vlasim"))
    ap.add_argument("runs", nargs="+", metavar="RUN_DIR")
    a = ap.parse_args()
    for run in a.runs:
        name = os.path.basename(os.path.normpath(run)).split(".attempt")[0]
        scenario = os.path.join(HERE, "scenarios", "validation", name + ".yaml")
        need = [os.path.join(run, f) for f in ("profile.json", "calibrate.log", "compare.json")] + [scenario]
        missing = [p for p in need if not os.path.exists(p)]
        if missing:
            sys.exit("dispatch_ab: %s: missing %s" % (run, ", ".join(missing)))
        with open(os.path.join(run, "compare.json")) as f:
            c = json.load(f)
        measured = {(m["name"], s["stage"]): s["mean_s"]["measured"] for m in c["models"] for s in m["stages"]}
        figures = one_figure(os.path.join(run, "calibrate.log"))
        with open(os.path.join(run, "profile.json")) as f:
            prof = json.load(f)
        with tempfile.TemporaryDirectory() as tmp:
            results = {}
            for form in ("one", "fit"):
                p = json.loads(json.dumps(prof))
                if form == "one":
                    for sec in p["sections"]:
                        key = (sec["threads"], sec["dtype"])
                        if key in figures:
                            sec.pop("op_overhead_share", None)
                            sec["op_overhead_s"] = figures[key]
                path = os.path.join(tmp, "profile_%s.json" % form)
                with open(path, "w") as f:
                    json.dump(p, f)
                results[form] = stage_errors(a.vlasim, path, scenario, measured, tmp)
        line = run
        for form, errs in results.items():
            med = statistics.median(abs(e) for _, e in errs) if errs else float("nan")
            line += " | %s %.1f%% [%s]" % (form, med, " ".join("%s %+.1f" % (k, e) for k, e in errs))
        print(line)


if __name__ == "__main__":
    main()
