#!/usr/bin/env bash
# A speed-up technique on this machine's CPU: is its predicted speed-up the measured one?
# Shared by scripts/dp_cache_check.sh and scripts/v_aefusion_check.sh (issue 14).
#   speedup_check.sh NAME TITLE OFF.yaml PAIR.yaml OFF_MODEL ON_MODEL REPORT [NOTE]
# Calibrates OFF.yaml only (the fit: the quick grid and that scenario's ops in context), then
# runs PAIR.yaml with that profile (`vlasim compare`): the model without (OFF_MODEL) and with
# (ON_MODEL) the technique in one run, requests interleaved, so both see the same machine (this
# one's speed drifts by 20% over minutes). Adds a section to REPORT (newest first): the host,
# each model's p50 latency predicted and measured, the speed-up (p50 without / p50 with)
# predicted and measured and their ratio (target: within 10%), and NOTE (a line of Markdown).
# RUNS (default 2) repeats the whole check; CHECK_COMMAND names the command in the report
# (default scripts/NAME.sh). Builds nothing: it expects build/vlasim (or $VLASIM).
set -euo pipefail
[[ $# -ge 7 ]] || { echo "usage: $0 NAME TITLE OFF.yaml PAIR.yaml OFF_MODEL ON_MODEL REPORT [NOTE]" >&2; exit 2; }
name=$1 title=$2 off=$3 pair=$4 off_model=$5 on_model=$6 report=$7 note=${8:-}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
runs=${RUNS:-2}
out=out/$name
[[ -x $vlasim ]] || { echo "$name: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
command -v python3 >/dev/null || { echo "$name: python3 is needed for the report" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
date_start=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq 1 "$runs"); do
  echo "== $title check $i of $runs (load $(cut -d' ' -f1 /proc/loadavg))"
  "$vlasim" calibrate "$off" --grid quick --in-context --context-requests 60 \
    --context-seconds 20 -q -o "$out/profile$i.json" > "$out/calibrate$i.log" 2>&1
  "$vlasim" --profile "$out/profile$i.json" compare "$pair" -q -o "$out/pair$i" 2> "$out/compare$i.err"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out" "$runs" "$report" "$date_start" "$load_start" "$load_end" "$title" "$off" "$pair" \
  "$off_model" "$on_model" "$note" "${CHECK_COMMAND:-scripts/$name.sh}" <<'PY'
import json, sys
(out, runs, report, date, load_start, load_end, title, off, pair, off_model, on_model, note,
 script) = sys.argv[1:14]
runs = int(runs)
host = open(f"{out}/host.txt").read().strip()
rows, worst = [], 0.0
for i in range(1, runs + 1):
    p50 = {}
    models = {m["name"]: m for m in json.load(open(f"{out}/pair{i}/compare.json"))["models"]}
    for s, name in (("off", off_model), ("on", on_model)):
        c = models[name]["end_to_end"]["latency_s"]["p50"]
        p50[s] = (c["predicted"], c["measured"])
    sp_pred = p50["off"][0] / p50["on"][0]
    sp_meas = p50["off"][1] / p50["on"][1]
    err = sp_pred / sp_meas - 1
    worst = max(worst, abs(err))
    rows.append(f"| {i} | {1e3*p50['off'][0]:.2f} / {1e3*p50['off'][1]:.2f} | {1e3*p50['on'][0]:.2f} / "
                f"{1e3*p50['on'][1]:.2f} | {sp_pred:.3f}x | {sp_meas:.3f}x | {100*err:+.1f}% |")
cpu = next((l.split(":", 1)[1].strip() for l in host.splitlines() if l.strip().startswith("cpu:")), "host")
off_name, pair_name = off.rsplit("/", 1)[-1], pair.rsplit("/", 1)[-1]
section = [f"## {date}: {cpu}", "",
           "```", host, "```", "",
           f"Load average at start {load_start}, at end {load_end}. `{script}` (RUNS={runs}).",
           f"Fit: the quick grid and {off_name}'s ops in context; {pair_name} (both models, one run) is predicted from it.", "",
           "| run | p50 off ms, predicted / measured | p50 on ms, predicted / measured | speed-up predicted | speed-up measured | error |",
           "|---|---|---|---|---|---|", *rows, "",
           f"Worst speed-up error: {100*worst:.1f}% (target: within 10%): **{'met' if worst <= 0.10 else 'not met'}**.",
           *([note] if note else []), ""]
try:
    old = open(report).read()
except FileNotFoundError:
    old = ""
head = f"# {title} on the CPU executor: predicted vs measured\n\n"
body = old[len(head):] if old.startswith(head) else old
open(report, "w").write(head + "\n".join(section) + "\n" + body)
print("\n".join(section))
PY
