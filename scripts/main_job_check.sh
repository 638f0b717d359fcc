#!/usr/bin/env bash
# Does the main job's prediction hold on this machine? Runs the main job's own steps
# (scripts/run.sh without its set-up: calibrate in context, then compare scenarios/default.yaml)
# RUNS times in a row (default 3), each followed by a short in-context re-measurement for the
# machine's drift, and adds a section to reports/main_job.md (newest first; earlier series are
# kept): the host (CPU, oneDNN ISA, the dtype `auto` chose), the load, and per run the median |stage error|, p50, p90 and p99
# errors and the operator time-weighted error and MAPE, against the targets (stage <= 3%,
# |p50| <= 5%, |p99| <= 10%, operators <= 5%). Builds nothing: it expects build/vlasim
# (or $VLASIM). Needs python3 for the report. REPORT overrides the report's path.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
runs=${1:-3}
report=${REPORT:-$here/reports/main_job.md}
out=out/main_job
[[ -x $vlasim ]] || { echo "main_job_check: $vlasim not found; run scripts/run.sh first" >&2; exit 1; }
command -v python3 >/dev/null || { echo "main_job_check: python3 is needed for the report" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u +%Y-%m-%dT%H:%MZ)
for i in $(seq 1 "$runs"); do
  echo "== main job run $i of $runs (load $(cut -d' ' -f1 /proc/loadavg))"
  "$vlasim" calibrate scenarios/default.yaml --grid quick --in-context --context-requests 120 \
    --context-seconds 30 -q -o "$out/profile$i.json" > "$out/calibrate$i.log" 2>&1
  "$vlasim" --profile "$out/profile$i.json" compare scenarios/default.yaml -q -o "$out/run$i" 2> "$out/compare$i.err"
  # The alone latency in context once more, right after: how far this machine's speed drifted
  # while the run was measured (not used by the prediction).
  "$vlasim" calibrate scenarios/default.yaml --base "$out/profile$i.json" --in-context --context-requests 25 \
    --context-seconds 6 -q -o "$out/after$i.json" > "$out/after$i.log" 2>&1
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out" "$runs" "$report" "$date_start" "$load_start" "$load_end" <<'PY'
import json, sys
out, runs, report, date, load_start, load_end = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
host = open(f"{out}/host.txt").read().strip()
T = {"stage": 0.03, "p50": 0.05, "p99": 0.10, "ops": 0.05}
def pct(x, signed=True):
    return "n/a" if x is None else (f"{100*x:+.1f}%" if signed else f"{100*x:.1f}%")
def ms(x):
    return "n/a" if x is None else f"{1e3*x:.1f}"
def mark(x, bound):
    return "" if x is not None and abs(x) <= bound else " ✗"
def alone_ms(log):
    w = open(log).read().split()
    return sum(float(w[k - 1]) for k, x in enumerate(w) if x == "ms" and w[k - 2] == "latency")
rows, met = [], 0
for i in range(1, runs + 1):
    c = json.load(open(f"{out}/run{i}/compare.json"))
    o = c["overall"]
    lat = o["latency_s"]
    stage = o["median_abs_stage_error"]
    p50, p90, p99 = lat["p50"]["error"], lat["p90"]["error"], lat["p99"]["error"]
    ops = c["operators"]["weighted_error"]
    ok = all(x is not None and abs(x) <= b for x, b in ((stage, T["stage"]), (p50, T["p50"]), (p99, T["p99"]), (ops, T["ops"])))
    met += ok
    rows.append(f"| {i} | {pct(stage, False)}{mark(stage, T['stage'])} | {pct(p50)}{mark(p50, T['p50'])} | {pct(p90)} | "
                f"{pct(p99)}{mark(p99, T['p99'])} | {pct(ops, False)}{mark(ops, T['ops'])} | {pct(c['operators']['mape'], False)} | "
                f"{ms(lat['p50']['predicted'])} / {ms(lat['p50']['measured'])} | "
                f"{ms(lat['p99']['predicted'])} / {ms(lat['p99']['measured'])} | "
                f"{o['finished']['measured']} | {100*(alone_ms(f'{out}/after{i}.log') / alone_ms(f'{out}/calibrate{i}.log') - 1):+.1f}% |")
import os, re
isa = re.search(r"effective isa (\S+)", host).group(1)
earlier = ""
if os.path.exists(report):
    old = open(report).read()
    k = old.find("\n## ")
    earlier = old[k + 1:] if k >= 0 else ""
head = ("# The main job's prediction on this machine\n\n"
        "Made by `scripts/main_job_check.sh` (newest series first): the main job's own steps "
        "(`vlasim calibrate scenarios/default.yaml --grid quick --in-context --context-requests 120`, then "
        "`vlasim --profile ... compare scenarios/default.yaml`), several times in a row.\n\n"
        "Targets: median |stage error| <= 3%, |p50| <= 5%, |p99| <= 10%, operator time-weighted error <= 5% "
        "(✗ marks a miss). Errors are (predicted - measured) / measured. Drift: the alone latency "
        "measured in context right after the run against the calibration right before it (not used by the "
        "prediction); a drift of several percent is the machine changing speed under the measurement.\n\n")
sec = (f"## {date}, host class {isa}\n\n"
       f"{runs} runs; load average {load_start} at start, {load_end} at end.\n\n```\n{host}\n```\n\n"
       "| run | median stage | p50 | p90 | p99 | ops time-weighted | ops MAPE | p50 ms pred / meas | p99 ms pred / meas | measured requests | drift |\n"
       "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
       + "\n".join(rows) + "\n\n" + f"{met} of {runs} runs meet every target.\n\n")
open(report, "w").write(head + sec + earlier)
print(open(report).read())
PY
