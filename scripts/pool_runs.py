#!/usr/bin/env python3
"""The validation suite's figures pooled over several runs of it on one host class.

On a machine whose speed drifts, one run of the suite keeps only the few scenarios the machine
left undisturbed (scripts/suite_marks.py), and its medians over those few are mostly that
run's noise. Repeated runs of the same code on the same machine keep a different few each
time; pooled, their undisturbed measurements give the suite's medians over more scenarios.
Nothing here looks at a prediction's error to decide what is kept: a measurement is kept when
suite_marks.marks finds no reason to mark it, as in a single run's report.

Pooled figures, per host class:
  per scenario  the median over its unmarked runs of each error (|median stage error|,
                |p50 error|, |p99 error|): one figure per scenario however often it ran clean;
  suite         the median over the scenarios with at least one unmarked run of those figures,
                the single run's definition (scripts/validation_suite.sh) over more scenarios;
  measurements  the median over every unmarked measurement, each counted once (a scenario
                clean in several runs weighs more).

Usage: pool_runs.py [--class ISA] [--json] RUN [RUN ...]
  RUN   a suite run's output: out/validation (with one directory per host class) or one host
        class's directory of it (out/validation/avx512_core_bf16), holding run.env.
Runs of different commits (run.env "commit"; older runs record none) are pooled but named in
the output, so a reader sees when the code differed.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_marks  # noqa: E402

TARGETS = {"stage": 0.03, "p50": 0.05, "p99": 0.10}  # the suite's targets (validation_suite.sh)


def scenario_errors(c):
    """From a compare.json's content: (median |stage error| over every model's stages, p50 error,
    p99 error) of the whole scenario; the stage figure is None when no stage has an error."""
    errs = [st["mean_s"]["error"] for m in c["models"] for st in m["stages"] if st["mean_s"]["error"] is not None]
    med_stage = statistics.median([abs(e) for e in errs]) if errs else None
    lat = c["overall"]["latency_s"]
    return med_stage, lat["p50"]["error"], lat["p99"]["error"]


def read_env(path):
    """run.env's KEY="value" lines as a dict."""
    env = {}
    for line in open(path):
        key, sep, val = line.strip().partition("=")
        if sep:
            env[key] = val.strip('"')
    return env


def class_dir(run, isa):
    """The directory of host class `isa` in run (or run itself when it is one). Raises ValueError
    naming the run when it holds no such class."""
    if os.path.exists(os.path.join(run, "run.env")) and (isa is None or os.path.basename(os.path.normpath(run)) == isa):
        return run
    if isa is None:
        found = classes(run)
        if len(found) != 1:
            raise ValueError(f"{run}: {'no suite run' if not found else 'several host classes: ' + ', '.join(found)}"
                             " (name one with --class)")
        isa = found[0]
    d = os.path.join(run, isa)
    if not os.path.exists(os.path.join(d, "run.env")):
        raise ValueError(f"{run}: no run of host class {isa} (no {d}/run.env)")
    return d


def classes(run):
    """The host classes run holds a suite run of, sorted."""
    if not os.path.isdir(run):
        return []
    return sorted(e for e in os.listdir(run) if os.path.exists(os.path.join(run, e, "run.env")))


def load_run(d):
    """One run's measurements: {"dir", "commit", "date", "scenarios": [{"name", "marks", "stage", "p50",
    "p99"}]}, one per scenario (its kept attempt: the directory named for it, not *.attemptN)."""
    env = read_env(os.path.join(d, "run.env"))
    rows = []
    for name in sorted(os.listdir(d)):
        sd = os.path.join(d, name)
        cj = os.path.join(sd, "compare.json")
        if ".attempt" in name or not os.path.exists(cj):
            continue
        try:
            stage, p50, p99 = scenario_errors(json.load(open(cj)))
        except (KeyError, TypeError, IndexError, json.JSONDecodeError) as e:
            raise ValueError(f"{cj}: not a compare.json of vlasim compare ({type(e).__name__}: {e})") from None
        rows.append({"name": name, "marks": suite_marks.reasons(sd), "stage": stage, "p50": p50, "p99": p99})
    return {"dir": d, "commit": env.get("commit", "unknown"), "date": env.get("date_start", "?"), "scenarios": rows}


def load_runs(runs, isa=None):
    """load_run of each run's host class `isa` (class_dir). Raises ValueError naming the run when
    it is missing, holds no such class, or is a run already given, by path or as a copy (the
    same class, start date and commit in run.env): it would count twice."""
    seen, loaded = {}, []
    for r in runs:
        if not os.path.isdir(r):
            raise ValueError(f"{r}: no such directory")
        d = class_dir(r, isa)
        run = load_run(d)
        for key in (os.path.realpath(d), (os.path.basename(os.path.normpath(d)), run["date"], run["commit"])):
            if key in seen:
                raise ValueError(f"{r}: the same run as {seen[key]} (it would count twice)")
            seen[key] = r
        loaded.append(run)
    return loaded


def _median_abs(v):
    v = [abs(x) for x in v if x is not None]
    return statistics.median(v) if v else None


def pool(runs):
    """Pooled figures of loaded runs (load_run): {"runs", "commits", "measurements", "unmarked",
    "scenarios": {name: {"runs", "unmarked", "stage", "p50", "p99"}}, "suite": {fig: median or None},
    "covered", "by_measurement": {fig: ...}, "met": bool or None}. Per-scenario figures are None
    for a scenario never unmarked; "met" is None when no scenario was."""
    per = {}
    clean = []
    for r in runs:
        for s in r["scenarios"]:
            e = per.setdefault(s["name"], {"runs": 0, "kept": []})
            e["runs"] += 1
            if not s["marks"]:
                e["kept"].append(s)
                clean.append(s)
    scen = {}
    for name, e in sorted(per.items()):
        scen[name] = {"runs": e["runs"], "unmarked": len(e["kept"])}
        for f in TARGETS:
            scen[name][f] = _median_abs([s[f] for s in e["kept"]])
    covered = [n for n, s in scen.items() if s["unmarked"]]
    suite = {f: _median_abs([scen[n][f] for n in covered]) for f in TARGETS}
    by_meas = {f: _median_abs([s[f] for s in clean]) for f in TARGETS}
    met = None if not covered else all(suite[f] is not None and suite[f] <= t for f, t in TARGETS.items())
    return {"runs": len(runs), "commits": sorted({r["commit"] for r in runs}),
            "measurements": sum(len(r["scenarios"]) for r in runs), "unmarked": len(clean),
            "scenarios": scen, "suite": suite, "covered": len(covered), "by_measurement": by_meas, "met": met}


def _pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def markdown(runs, p):
    """The pooled figures as a markdown section body (no heading)."""
    out = [f"Pooled over {p['runs']} run(s) of the suite on this host class ("
           + ", ".join(f"{r['date']} commit {r['commit']}" for r in sorted(runs, key=lambda r: r["date"])) + "): "
           f"{p['unmarked']} of {p['measurements']} scenario measurements unmarked, covering {p['covered']} of "
           f"{len(p['scenarios'])} scenarios."]
    if len(p["commits"]) > 1:
        out.append(f"\nThe runs measured different code ({', '.join(p['commits'])}).")
    out.append("\n| scenario | runs | unmarked | median stage error | \\|p50 error\\| | \\|p99 error\\| |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for name, s in p["scenarios"].items():
        out.append(f"| {name} | {s['runs']} | {s['unmarked']} | {_pct(s['stage'])} | {_pct(s['p50'])} | {_pct(s['p99'])} |")
    su, bm = p["suite"], p["by_measurement"]
    verdict = "no scenario unmarked" if p["met"] is None else ("targets met" if p["met"] else "**targets not met**")
    out.append(f"\nOver the {p['covered']} scenarios with an unmarked run (each its median over its unmarked runs): "
               f"median stage error {_pct(su['stage'])}, median |p50 error| {_pct(su['p50'])}, median |p99 error| "
               f"{_pct(su['p99'])} (targets {' / '.join(f'{100 * t:g}' for t in TARGETS.values())}%): {verdict}. Over the {p['unmarked']} unmarked measurements "
               f"each counted once: {_pct(bm['stage'])}, {_pct(bm['p50'])}, {_pct(bm['p99'])}.")
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description="The validation suite's figures pooled over several runs (see the module text).")
    ap.add_argument("runs", nargs="+", metavar="RUN", help="a suite run's output directory (out/validation or one class of it)")
    ap.add_argument("--class", dest="isa", help="the host class to pool (default: the only one the runs hold)")
    ap.add_argument("--json", action="store_true", help="print the pooled figures as JSON instead of markdown")
    a = ap.parse_args(argv)
    try:
        loaded = load_runs(a.runs, a.isa)
    except (ValueError, OSError, KeyError, json.JSONDecodeError) as e:
        print(f"pool_runs: {e}", file=sys.stderr)
        return 1
    p = pool(loaded)
    if a.json:
        print(json.dumps(p, indent=1, sort_keys=True))
    else:
        print(markdown(loaded, p), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
