#!/usr/bin/env python3
"""A/B of the run-to-run variation on measured validation runs (issue 32, session 30).

For every scenario run folder of each suite run given (RUN/avx512_core_bf16/<scenario>[.attemptN],
as scripts/validation_suite.sh leaves them), predicts the scenario with `vlasim simulate` three
times from its own profile, changing only each section's service quantiles:
  own   the scenario's own (its few seconds of in-context runs, as the suite predicts it);
  base  the suite's base calibration's (RUN/<class>/profile.json, every scenario, ~240 s);
  mix   their mean, quantile by quantile;
and prints per run the median |stage error| of each form against compare.json's measured stage
means, then over all runs: the median of the per-run medians and over every stage.

Usage: scripts/quantiles_ab.py [--vlasim build/vlasim] [--isa avx512_core_bf16] SUITE_RUN...
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMS = ("own", "base", "mix")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vlasim", default=os.path.join(HERE, "build", "vlasim"))
    ap.add_argument("--isa", default="avx512_core_bf16")
    ap.add_argument("runs", nargs="+", metavar="SUITE_RUN")
    a = ap.parse_args()
    every = {f: [] for f in FORMS}
    per_run = {f: [] for f in FORMS}
    with tempfile.TemporaryDirectory() as tmp:
        for run in a.runs:
            cls = os.path.join(run, a.isa)
            with open(os.path.join(cls, "profile.json")) as f:
                base = {(s["threads"], s["dtype"]): s.get("service_quantiles") for s in json.load(f)["sections"]}
            for cmp_path in sorted(glob.glob(os.path.join(cls, "*", "compare.json"))):
                d = os.path.dirname(cmp_path)
                name = os.path.basename(d).split(".attempt")[0]
                with open(cmp_path) as f:
                    c = json.load(f)
                measured = {(m["name"], s["stage"]): s["mean_s"]["measured"] for m in c["models"] for s in m["stages"]}
                line = "%s %-28s" % (run, os.path.basename(d))
                for form in FORMS:
                    with open(os.path.join(d, "profile.json")) as f:
                        p = json.load(f)
                    for s in p["sections"]:
                        b, own = base.get((s["threads"], s["dtype"])), s.get("service_quantiles")
                        if not b or not own:
                            continue
                        if form == "base":
                            s["service_quantiles"] = b
                        elif form == "mix":
                            s["service_quantiles"] = [(x + y) / 2 for x, y in zip(own, b)]
                    path = os.path.join(tmp, "profile.json")
                    with open(path, "w") as f:
                        json.dump(p, f)
                    out = os.path.join(tmp, "sim")
                    subprocess.run([a.vlasim, "--profile", path, "simulate",
                                    os.path.join(HERE, "scenarios", "validation", name + ".yaml"), "-q", "-o", out],
                                   check=True, stdout=subprocess.DEVNULL)
                    with open(os.path.join(out, "report.json")) as f:
                        r = json.load(f)
                    errs = [100 * (v["mean_s"] / measured[(m["name"], st)] - 1) for m in r["models"]
                            for st, v in m["stages"].items() if measured.get((m["name"], st), 0) > 0]
                    if not errs:
                        continue
                    every[form] += errs
                    per_run[form].append(statistics.median(abs(e) for e in errs))
                    line += " | %s %4.1f" % (form, per_run[form][-1])
                print(line, flush=True)
    for form in FORMS:
        if per_run[form]:
            print("%s: median of the runs' medians %.2f%%, over every stage %.2f%%" % (
                form, statistics.median(per_run[form]), statistics.median(abs(e) for e in every[form])))


if __name__ == "__main__":
    main()
