#!/usr/bin/env bash
# V-AEFusion on this machine's CPU (issue 14): is the predicted speed-up the measured one?
# Calibrates scenarios/validation/v_aefusion_off.yaml only (the fit: the quick grid and that
# scenario's ops in context: the VLM on one core, the action expert on the other), then runs
# v_aefusion_pair.yaml with that profile (`vlasim compare`): the model with and without
# V-AEFusion in one run, requests interleaved, so both see the same machine. Adds a section to
# reports/v_aefusion.md (newest first): the host, each model's p50 latency predicted and
# measured, the speed-up (p50 without / p50 with) predicted and measured and their ratio
# (target: within 10%).
# RUNS (default 2) repeats the whole check. Builds nothing: it expects build/vlasim (or
# $VLASIM). REPORT overrides the report's path.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
runs=${RUNS:-2}
report=${REPORT:-$here/reports/v_aefusion.md}
out=out/v_aefusion
[[ -x $vlasim ]] || { echo "v_aefusion_check: $vlasim not found; run scripts/setup.sh first" >&2; exit 1; }
command -v python3 >/dev/null || { echo "v_aefusion_check: python3 is needed for the report" >&2; exit 1; }
mkdir -p "$out"
"$vlasim" list host > "$out/host.txt"
date_start=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq 1 "$runs"); do
  echo "== V-AEFusion check $i of $runs (load $(cut -d' ' -f1 /proc/loadavg))"
  "$vlasim" calibrate scenarios/validation/v_aefusion_off.yaml --grid quick --in-context --context-requests 60 \
    --context-seconds 20 -q -o "$out/profile$i.json" > "$out/calibrate$i.log" 2>&1
  "$vlasim" --profile "$out/profile$i.json" compare scenarios/validation/v_aefusion_pair.yaml -q -o "$out/pair$i" \
    2> "$out/compare$i.err"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out" "$runs" "$report" "$date_start" "$load_start" "$load_end" <<'PY'
import json, re, sys
out, runs, report, date, load_start, load_end = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
host = open(f"{out}/host.txt").read().strip()
rows, worst = [], 0.0
for i in range(1, runs + 1):
    p50 = {}
    models = {m["name"]: m for m in json.load(open(f"{out}/pair{i}/compare.json"))["models"]}
    for s, name in (("off", "plain"), ("on", "fused")):
        c = models[name]["end_to_end"]["latency_s"]["p50"]
        p50[s] = (c["predicted"], c["measured"])
    sp_pred = p50["off"][0] / p50["on"][0]
    sp_meas = p50["off"][1] / p50["on"][1]
    err = sp_pred / sp_meas - 1
    worst = max(worst, abs(err))
    rows.append(f"| {i} | {1e3*p50['off'][0]:.2f} / {1e3*p50['off'][1]:.2f} | {1e3*p50['on'][0]:.2f} / "
                f"{1e3*p50['on'][1]:.2f} | {sp_pred:.3f}x | {sp_meas:.3f}x | {100*err:+.1f}% |")
cpu = next((l.split(":", 1)[1].strip() for l in host.splitlines() if l.strip().startswith("cpu:")), "host")
section = [f"## {date}: {cpu}", "",
           "```", host, "```", "",
           f"Load average at start {load_start}, at end {load_end}. `scripts/v_aefusion_check.sh` (RUNS={runs}).",
           "Fit: the quick grid and v_aefusion_off.yaml's ops in context; v_aefusion_pair.yaml (both models, one run, "
           "5 of 10 flow steps stale) is predicted from it.", "",
           "| run | p50 off ms, predicted / measured | p50 on ms, predicted / measured | speed-up predicted | speed-up measured | error |",
           "|---|---|---|---|---|---|", *rows, "",
           f"Worst speed-up error: {100*worst:.1f}% (target: within 10%): **{'met' if worst <= 0.10 else 'not met'}**.", ""]
try:
    old = open(report).read()
except FileNotFoundError:
    old = ""
head = "# V-AEFusion on the CPU executor: predicted vs measured\n\n"
body = old[len(head):] if old.startswith(head) else old
open(report, "w").write(head + "\n".join(section) + "\n" + body)
print("\n".join(section))
PY
