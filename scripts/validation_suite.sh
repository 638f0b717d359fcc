#!/usr/bin/env bash
# The full predicted-vs-measured validation suite (a benchmark; the short version is the
# test gate tests/validation/). Builds nothing: it expects build/vlasim (or $VLASIM).
#
#   1. calibrates this machine: the full shape grid plus every suite scenario in context
#      (vlasim calibrate --grid full --in-context), into out/validation/<class>/profile.json,
#      with the machine's steadiness (--steadiness, STEADINESS_SECONDS, default 30) in its host entry,
#      and with INSTALL_PROFILE=1 installs it as scenarios/validation/profile.json (the
#      default the suite's scenarios name, for users; made by this script, never edited by hand);
#   2. for every scenario of scenarios/validation/: calibrates it in context once more on top of
#      that profile (--base; up to 300 requests / 12 s, for the run-to-run variation's tail),
#      right before measuring it, into out/validation/<class>/<name>/profile.json
#      (this machine's speed drifts by 10-15% over minutes with the load of the host, so the
#      calibration must be as close in time to the measurement as it can be), then runs
#      `vlasim compare` with it into out/validation/<name>/, and calibrates once more after it
#      to see how far the machine's speed drifted meanwhile (the report's "drift" column); a run
#      the machine disturbed (scripts/suite_marks.py) is measured again, up to RETRIES times
#      more (default 2);
#   3. writes reports/validation.md: the machine, its load before and after, the oneDNN
#      version, the date, and per scenario the errors against the targets.
#
# The report keeps one section per host class (oneDNN's effective ISA, which sets the dtype
# `auto` picks; scenarios with an explicit dtype the CPU cannot run are skipped and listed); on
# a CPU above AVX2 the suite runs a second time with ONEDNN_MAX_CPU_ISA=AVX2 for the AVX2
# class (AVX2_LEG=0 skips it). Outputs go to out/validation/<class>/.
#
# It runs in wall-clock time on this machine's cores (about 12 minutes on 2 cores): run it on a
# machine as quiet as you can get; the report states the load. Needs python3 for the report.
# REPORT_ONLY=1 only rewrites the report from the last run (e.g. after editing
# reports/validation_notes.md, whose text the report includes). SCENARIOS="a b" runs only
# those scenarios of scenarios/validation/ (a partial run: write it to another REPORT).
# POOL="DIR ..." adds a section pooling this run's unmarked scenarios with those of other runs
# of the same class kept aside (copies of out/validation; scripts/pool_runs.py).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
vlasim=${VLASIM:-$here/build/vlasim}
report=${REPORT:-$here/reports/validation.md}
grid=${GRID:-full}
# 1: also install this run's profile as scenarios/validation/profile.json, the one the suite's
# scenarios name (the bf16 AVX-512 reference machine's as shipped); off by default, since one
# host class's profile cannot stand for another's.
install_profile=${INSTALL_PROFILE:-0}
# In-context requests right before each scenario: enough for the tail of the run-to-run
# variation the profiled model draws segment times from (its p99 needs a few hundred).
context_requests=${CONTEXT_REQUESTS:-300}
# How many times more a scenario the machine disturbed is calibrated and measured (RETRIES=0:
# never): on a VM whose speed moves by 10-40% over minutes, most runs are otherwise marked.
retries=${RETRIES:-2}
context_seconds=${CONTEXT_SECONDS:-12}
# Seconds of the base calibration's steadiness measurement (calibrate --steadiness: how far this
# machine moves the same memory-bound and core-bound work by itself, in 2-s windows; 0: none).
steadiness_seconds=${STEADINESS_SECONDS:-30}
if [[ ! -x $vlasim ]]; then
  echo "validation_suite: $vlasim not found; build first (cmake -S . -B build && cmake --build build)" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "validation_suite: python3 is needed for the report" >&2; exit 1; }

# The host class: oneDNN's effective ISA here (ONEDNN_MAX_CPU_ISA caps it), which also sets
# the dtype `auto` picks. Scenarios whose explicit dtype this CPU cannot run are skipped.
host_txt=$("$vlasim" list host)
host_isa=$(sed -n 's/.*effective isa \([a-z0-9_]*\).*/\1/p' <<<"$host_txt")
auto_dtype=$(sed -n 's/.*dtype auto: //p' <<<"$host_txt")
bf16=$(grep -q "bf16: no" <<<"$host_txt" && echo 0 || echo 1)
isa_cap=${ONEDNN_MAX_CPU_ISA:-}
out=${OUT_DIR:-$here/out/validation/$host_isa}
scenarios=() skipped=()
for s in scenarios/validation/*.yaml; do
  # SCENARIOS="split3_async rate_95pct" runs only those (a partial run; its report section says so).
  if [[ -n ${SCENARIOS:-} && " $SCENARIOS " != *" $(basename "$s" .yaml) "* ]]; then continue; fi
  if [[ $bf16 == 0 ]] && grep -q "^ *dtype: bf16" "$s"; then skipped+=("$(basename "$s" .yaml)"); else scenarios+=("$s"); fi
done
if [[ -n $isa_cap && $host_isa != avx2 ]]; then
  echo "validation_suite: ONEDNN_MAX_CPU_ISA=$isa_cap left oneDNN at ISA $host_isa; only the AVX2 cap is a host class here" >&2
  exit 1
fi
echo "== host class $host_isa${isa_cap:+ (ONEDNN_MAX_CPU_ISA=$isa_cap)}, dtype auto = $auto_dtype${skipped:+; skipping ${skipped[*]} (bf16 cannot run here)}"
mkdir -p "$out"
if [[ ${REPORT_ONLY:-0} != 1 ]]; then
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The code the run measures, read at its start (scripts/pool_runs.py names the commits it
# pools): HEAD, "-dirty" when tracked files differed from it, "unknown" outside a checkout.
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown ]] && ! git -C "$here" diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
t0=$(date +%s)

echo "== calibrating ($grid grid + ${#scenarios[@]} scenarios in context); load $load_start"
"$vlasim" calibrate "${scenarios[@]}" --grid "$grid" --in-context --steadiness "$steadiness_seconds" -q \
  -o "$out/profile.json" | tee "$out/calibrate.log"
if [[ $install_profile == 1 ]]; then cp "$out/profile.json" scenarios/validation/profile.json; fi

for s in "${scenarios[@]}"; do
  name=$(basename "$s" .yaml)
  rm -rf "$out/$name" "$out/$name".attempt*
  for (( attempt = 1; ; attempt++ )); do
    echo "== $name (load $(cut -d' ' -f1 /proc/loadavg))$( (( attempt > 1 )) && echo ", attempt $attempt")"
    mkdir -p "$out/$name"
    cut -d' ' -f1-3 /proc/loadavg > "$out/$name/load_before"
    "$vlasim" calibrate "$s" --base "$out/profile.json" --in-context --context-requests "$context_requests" \
      --context-seconds "$context_seconds" -q -o "$out/$name/profile.json" | tee "$out/$name/calibrate.log"
    "$vlasim" --profile "$out/$name/profile.json" compare "$s" -q -o "$out/$name"
    # The same in-context measurement once more, after: how far the machine's speed drifted
    # while the scenario was measured (not used for the prediction).
    "$vlasim" calibrate "$s" --base "$out/profile.json" --in-context --context-corun-seconds 0 -q \
      -o "$out/$name/profile_after.json" \
      > "$out/$name/calibrate_after.log"
    cut -d' ' -f1-3 /proc/loadavg > "$out/$name/load_after"
    echo "$attempt" > "$out/$name/attempts"
    # A run the machine disturbed (scripts/suite_marks.py: the sentinel over the run or over its
    # calibration, the scenario's own alone latency moved, or its segments changed speed within
    # the run) is measured again, up to $retries more times; the report keeps the first
    # undisturbed attempt, else the last, and says how many were made.
    why=$(python3 "$here/scripts/suite_marks.py" "$out/$name")
    if [[ -z $why ]] || (( attempt > retries )); then break; fi
    echo "   disturbed ($why): measuring $name again"
    mv "$out/$name" "$out/$name.attempt$attempt"
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed=$(( $(date +%s) - t0 ))

printf 'load_start="%s"\nload_end="%s"\ndate_start="%s"\nelapsed="%s"\ngrid="%s"\nretries_run="%s"\ncommit="%s"\n' \
  "$load_start" "$load_end" "$date_start" "$elapsed" "$grid" "$retries" "$commit" > "$out/run.env"
fi
# REPORT_ONLY=1 rewrites the report from the last run's files in $out.
[[ -f $out/run.env ]] || { echo "validation_suite: no run of host class $host_isa in $out to report" >&2; exit 1; }
source "$out/run.env"

cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
# Family and model tell the generation where the model name does not (a VM's "AMD EPYC").
cpu_family=$(lscpu | sed -n 's/^CPU family:[[:space:]]*//p' | head -1)
cpu_model=$(lscpu | sed -n 's/^Model:[[:space:]]*//p' | head -1)
[[ -n $cpu_family && -n $cpu_model ]] && cpu="$cpu (family $cpu_family, model $cpu_model)"
ncpu=$(nproc)
onednn=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["made_with"]["libraries"].get("onednn","?"))' "$out/profile.json")

SUITE_HERE=$here SUITE_RETRIES=${retries_run:-0} SUITE_POOL=${POOL:-} python3 - "$out" "$report" "$cpu" "$ncpu" "$onednn" "$date_start" "$load_start" "$load_end" "$elapsed" "$grid" \
  "$host_isa" "$auto_dtype" "$isa_cap" "${skipped[*]:-}" "${scenarios[@]}" <<'EOF'
import json, math, os, re, sys, statistics
sys.path.insert(0, os.path.join(os.environ["SUITE_HERE"], "scripts"))
import calibration_gap
import interference
import pool_runs
import suite_marks
out, report, cpu, ncpu, onednn, date, load_start, load_end, elapsed, grid, host_isa, auto_dtype, isa_cap, skipped = sys.argv[1:15]
scenarios = sys.argv[15:]
T_STAGE, T_P50, T_P99 = (pool_runs.TARGETS[k] for k in ("stage", "p50", "p99"))

def pct(x, signed=True):
    if x is None or (isinstance(x, float) and math.isnan(x)): return "n/a"
    return f"{100*x:+.1f}%" if signed else f"{100*x:.1f}%"

def med(v):
    return statistics.median(v) if v else None

def ok(x, bound):
    return x is not None and abs(x) <= bound

prof = json.load(open(os.path.join(out, "profile.json")))
rows, misses = [], []
all_stage, all_p50, all_p99 = [], [], []
drows, marked, quiet_stage, quiet_p50, quiet_p99 = [], [], [], [], []
for path in scenarios:
    name = os.path.splitext(os.path.basename(path))[0]
    c = json.load(open(os.path.join(out, name, "compare.json")))
    lb = open(os.path.join(out, name, "load_before")).read().split()[0]
    # The run's marks and the drifts they were judged on, read once. Own drift (the first table's
    # drift column) is n/a when a calibration timed no request (a loaded machine can leave it
    # none in its budget).
    why, drift, ir, cd = suite_marks.marks(os.path.join(out, name))
    la = open(os.path.join(out, name, "load_after")).read().split()[0]
    o = c["overall"]
    med_stage, p50, p99 = pool_runs.scenario_errors(c)
    thr = o["throughput_hz"]["error"]
    tost = all(m.get("tested") and m["tost"]["equivalent"] for m in c["models"])
    ratios = ", ".join(f'{m["tost"]["ratio"]:.3f}' for m in c["models"] if m.get("tested"))
    ks = ", ".join(f'{m["ks"]["p"]:.2g}' for m in c["models"] if m.get("tested"))
    meas_p50 = o["latency_s"]["p50"]["measured"]
    missed = [n for n, good in (("stage", ok(med_stage, T_STAGE)), ("p50", ok(p50, T_P50)),
                                ("p99", ok(p99, T_P99)), ("TOST", tost)) if not good]
    met = not missed
    if med_stage is not None: all_stage.append(med_stage)
    if p50 is not None: all_p50.append(abs(p50))
    if p99 is not None: all_p99.append(abs(p99))
    rows.append(f"| {name} | {1e3*meas_p50:.1f} | {pct(med_stage, False)} | {pct(p50)} | {pct(p99)} | {pct(thr)} | "
                f"{'equivalent' if tost else 'not shown'} ({ratios}) | {ks} | {lb} / {la} | {pct(drift)} | {'yes' if met else '**no**: ' + ', '.join(missed)} |")
    if not met: misses.append(name)
    # The drift sentinel over the measurement and the sensitivity (compare's drift.json; absent
    # in runs before issue 32).
    dj = os.path.join(out, name, "drift.json")
    if os.path.exists(dj):
        d = json.load(open(dj))
        sc = d["speed_change"]
        oc, st = d["measurement"].get("others_cpu"), d["measurement"].get("steal")
        load = f"{100*oc:.1f}% / {100*st:.1f}%" if oc is not None and st is not None else "n/a"
        af = os.path.join(out, name, "attempts")
        attempts = open(af).read().strip() if os.path.exists(af) else "1"
        drows.append(f"| {name} | {pct(d['measurement']['drift'])} | {pct(cd)} | {pct(sc)} | {load} | {pct(drift)} | {pct(ir, False)} | "
                     f"{d['sensitivity']['p50_elasticity']:.2f} | {100*d['sensitivity']['utilisation']:.0f}% | {attempts} | "
                     + (f"**marked** ({', '.join(why)})" if why else "no") + " |")
        if not why:
            if med_stage is not None: quiet_stage.append(med_stage)
            if p50 is not None: quiet_p50.append(abs(p50))
            if p99 is not None: quiet_p99.append(abs(p99))
        else:
            marked.append(name)

header = ["# Validation suite: predicted against measured\n",
          "Made by `scripts/validation_suite.sh` (do not edit by hand): the profiled cost model, "
          "calibrated on this machine (shape grid plus every suite scenario in context, then "
          "each scenario in context again right before it is measured), "
          "predicts each scenario of `scenarios/validation/`; the real oneDNN runtime measures it "
          "in wall-clock time (`vlasim compare`). Per-scenario reports: `out/validation/<class>/<name>/compare.md`. "
          "One section per host class (oneDNN's effective ISA, which sets the dtype `auto` picks); a run "
          "replaces its own class's section and keeps the others.\n"]
cls = host_isa
lines = [f"<!-- class:{cls} -->", f"## Host class {cls} (dtype auto = {auto_dtype})\n"]
if isa_cap:
    lines.append(f"oneDNN capped with ONEDNN_MAX_CPU_ISA={isa_cap} on a CPU that runs more: this is how an {cls} host behaves.\n")
if skipped:
    lines.append(f"Skipped (an explicit dtype this CPU cannot run): {skipped}.\n")
if os.environ.get("SCENARIOS"):
    lines.append(f"Partial run: only {os.environ['SCENARIOS']} (`SCENARIOS=...`); the suite medians below are over these.\n")
lines.append("| | |\n|---|---|")
lines.append(f"| machine | {cpu}, {ncpu} logical CPUs |")
lines.append(f"| oneDNN | {onednn}, effective ISA {host_isa}{' (capped: ONEDNN_MAX_CPU_ISA=' + isa_cap + ')' if isa_cap else ''} |")
lines.append(f"| dtype auto | {auto_dtype} |")
lines.append(f"| date | {date} |")
lines.append(f"| load average (1, 5, 15 min) | start {load_start}; end {load_end} |")
lines.append(f"| calibration load average | {prof['made_with']['load_average']} |")
stead = prof.get("host", {}).get("steadiness")
if stead:
    over = max(stead["memory_spread"], stead["core_spread"]) > T_STAGE
    lines.append(f"| steadiness (calibrate --steadiness: one core, nothing else running, {stead['windows']} windows of "
                 f"{stead['window_s']:g} s; largest window median over the smallest) | memory speed moved "
                 f"{100*stead['memory_spread']:.1f}%, core speed {100*stead['core_spread']:.1f}%"
                 + (f": over the {100*T_STAGE:.0f}% stage target, so errors that small cannot be told from the machine"
                    if over else "") + " |")
else:
    lines.append("| steadiness | not measured (runs before calibrate --steadiness, or STEADINESS_SECONDS=0) |")
lines.append(f"| wall time | {elapsed} s |\n")
lines.append(f"Targets: median |per-stage error| <= {100*T_STAGE:.0f}%, |end-to-end p50 error| <= {100*T_P50:.0f}%, "
             f"|p99 error| <= {100*T_P99:.0f}%, TOST equivalence (mean latency ratio within 1 +- 0.1, alpha 0.05) "
             "on every scenario. Errors are (predicted - measured) / measured. KS p: two-sample "
             "Kolmogorov-Smirnov on the latency distributions (not a target; the simulator's only "
             "noise is the calibrated run-to-run variation, so a few percent of drift in the machine's "
             "speed separates distributions of a few hundred samples). "
             "Drift: the scenario's alone latency measured in context right after the run against right "
             "before it (the prediction uses only the one before); beyond a few percent the machine itself "
             "changed speed while the scenario was measured.\n")
lines.append("| scenario | measured p50 (ms) | median stage error | p50 error | p99 error | throughput error | TOST (mean ratio) | KS p | load before / after | drift | targets met |")
lines.append("|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|")
lines += rows
lines.append("")
lines.append(f"Over the suite: median of the scenarios' median stage errors {pct(med(all_stage), False)}, "
             f"median |p50 error| {pct(med(all_p50), False)}, median |p99 error| {pct(med(all_p99), False)}; "
             f"targets met on {len(rows) - len(misses)} of {len(rows)} scenarios"
             + (f" (not: {', '.join(misses)})." if misses else "."))
lines.append("")
if drows:
    lines.append("### The machine's own speed (drift sentinel) and the sensitivity to service time\n")
    lines.append("Sentinel: a fixed 96^3 fp32 matrix product timed before, every 2 s during and after each "
                 "calibration and measurement (`vlasim compare`'s drift.json). Drift: its time at the end of the "
                 "measurement over the start; calibration drift: the same over the calibration the prediction "
                 "uses (the scenario's profile.json); speed change: its time before and after the measurement over "
                 "its time before and after the calibration (samples taken during either share the cores with "
                 f"the work, so they time its load, not the machine; > 0: the machine was slower when measured). A run beyond {100*0.03:.0f}% "
                 "in any of the three, or one whose CPUs other processes or the hypervisor used for more than 5% of their "
                 "time (others / steal: /proc/stat over the measurement, less vlasim's own CPU time; n/a in runs "
                 "before this column), is marked; so is one whose own alone latency, measured in context right "
                 "before and right after it (own drift, the first table's drift column), moved beyond 3%: the "
                 "sentinel's kernel stays in the core's caches and misses a change in memory or cache speed; and so is one "
                 "whose own segments changed speed within the run (in-run drift: the largest over the smallest median "
                 "of a segment's measured runs in the run's five fifths, beyond the target plus "
                 f"{100*suite_marks.IN_RUN_NOISE:.0f} points for the noise of such medians; the scenarios are stationary, "
                 "so only the machine moves them), which both ends of the run can miss when the machine slows for a "
                 "few seconds in between. A marked "
                 "run is measured again (calibration, run, calibration after) up to RETRIES more times "
                 f"(this run: {os.environ.get('SUITE_RETRIES', '?')}); the tables keep the first unmarked attempt, "
                 "else the last (attempts), and a run still marked is left out of the medians below "
                 "(scripts/suite_marks.py decides; no reason looks at the prediction's error). Elasticity: d(p50)/p50 over "
                 "d(service)/service, from re-simulating with every service time x(1 -+ 2%): the factor by which "
                 "the queueing multiplies a service-time error (calibration noise, the machine's drift).\n")
    lines.append("| scenario | sentinel drift | calibration drift | speed change since calibration | others / steal | own drift | in-run drift | p50 elasticity | busiest unit | attempts | marked |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    lines += drows
    lines.append("")
    lines.append(f"Over the {len(quiet_stage)} scenarios not marked: median stage error {pct(med(quiet_stage), False)}, "
                 f"median |p50 error| {pct(med(quiet_p50), False)}, median |p99 error| {pct(med(quiet_p99), False)}"
                 + (f" (marked: {', '.join(marked)})." if marked else "."))
    lines.append("")
# POOL="DIR ...": other runs of this class (their out/validation copies) pooled with this one.
pool_dirs = os.environ.get("SUITE_POOL", "").split()
if pool_dirs:
    try:
        pooled = pool_runs.load_runs([out] + pool_dirs, host_isa)
    except (ValueError, OSError) as e:
        sys.exit(f"validation_suite: POOL: {e}")
    lines.append("### Pooled over runs\n")
    lines.append("The unmarked scenarios of several runs of the suite on this machine (this one and `POOL`'s; "
                 "scripts/pool_runs.py): each run keeps a different few, and one run's medians over its few are "
                 "mostly that run's noise. What is kept is decided as above, never by the error.\n")
    lines.append(pool_runs.markdown(pooled, pool_runs.pool(pooled)))
gap = calibration_gap.summary(out)
if gap["before"] or gap["after"]:
    lines.append("### The calibration against the run, the same ops\n")
    lines.append("Sum of the op medians in the in-context calibration (right before the run, which the prediction "
                 "uses, and right after it) over the sum in the run, over every run of this class, attempts and "
                 "marked runs included: the machine's drift moves it either way, a bias of the calibration one way "
                 "(scripts/calibration_gap.py; `--by-op` gives it per op signature). Sign test: two-sided, against "
                 "a median of 0.\n")
    lines.append("| calibration | median op total over the run's | slower than the run | sign test p |")
    lines.append("|---|---:|---:|---:|")
    for name, label in (("before", "right before (the prediction's)"), ("after", "right after")):
        if gap[name]:
            m, p, k, n = gap[name]
            lines.append(f"| {label} | {pct(m)} | {k} of {n} | {p:.2g} |")
    lines.append("")

# Interference between the two 1-core groups, measured within each run: a segment's runs the
# other group kept busy for most of their window (overlapped) against its runs it left mostly
# idle (apart), both from the same measurement (scripts/interference.py). A measured run's class
# is the overlap the simulation gave the same request, which the arrivals set and the machine's
# own speed cannot move: classed by their own overlap, runs a slow host or a hiccup of the first
# stage delayed landed among the overlapped ones (split3_async's second stage read x1.066 and
# x1.364 where the co-run pass measured x1.000).
HI, LO, MIN_RUNS = interference.HI, interference.LO, interference.MIN_RUNS
def overlap_table(name):
    rows = []
    for r in interference.segments(os.path.join(out, name)):
        hi, lo, meas = r["measured"]
        if not hi: continue
        s_hi, s_lo, pred = r["predicted"]
        o_hi, o_lo, own = r["by_own"]
        c, at_ov = r["model"], r["at_overlaps"]
        mean_ov = interference.mean_overlap
        med_ms = lambda v: f"{statistics.median(d for _, d in v) / 1e3:.2f}" if v else "-"
        few = f"n/a (fewer than {MIN_RUNS} runs in a class)"
        within = (few if meas is None else "n/a" if at_ov is None else
                  ("yes" if r["within"] else "no") + f" ({100 * (meas - at_ov):+.1f} points)")
        median_n = lambda v: f"{statistics.median(v) / 1e3:.2f} ({len(v)})" if v else "- (0)"
        rows.append(f"| {name} | {r['segment']} (unit {r['unit']}) | {len(hi)} / {len(lo)} | {len(s_hi)} / {len(s_lo)} | "
                    f"{100 * mean_ov(hi):.0f}% / {100 * mean_ov(lo):.0f}% | "
                    + (f"{r['alone_s'] * 1e3:.2f}" if r["alone_s"] > 0 else "n/a")
                    + f" | {med_ms(hi)} / {med_ms(lo)} | "
                    + (f"x{meas:.3f}" if meas else few) + " | " + (f"x{pred:.3f}" if pred else few) + " | "
                    + (f"x{c[0]:.3f} ({'measured' if c[1] else 'bandwidth'})" if c else "n/a") + " | "
                    + (f"x{at_ov:.3f}" if at_ov else "n/a") + f" | {within} | "
                    + (f"x{own:.3f} ({len(o_hi)} / {len(o_lo)})" if own else f"n/a ({len(o_hi)} / {len(o_lo)})") + " | "
                    + f"{median_n(r['started_busy'])} / {median_n(r['started_idle'])} |")
    return rows
irows = []
for path in scenarios:
    name = os.path.splitext(os.path.basename(path))[0]
    if name.endswith("_async"): irows += overlap_table(name)
if irows:
    lines.append("### Interference between the two core groups\n")
    lines.append("Async split scenarios, per segment: its runs the other core group kept busy for more than "
                 f"{100 * HI:.0f}% of their window (overlapped) against its runs it kept busy for less than {100 * LO:.0f}% "
                 "(apart), in the same measurement, so the machine's drift and the calibration's error cancel. A run's "
                 "window is its segment's alone time in the plan (the in-context time measured right before the run), "
                 "from the run's start. A measured run's class is the overlap the simulation gave the same request (same "
                 "arrivals), which the machine's own speed cannot move; the mean overlap columns are the measured runs' "
                 "own. Classed by its own overlap instead (the column before the last), a run slow for another reason "
                 "lands among the overlapped ones: when the host slows for a few seconds the busier group's queue grows "
                 "and the groups overlap more, and a first stage slowed by a hiccup starts the second late, into the "
                 "other group's next frame, while the hiccup slows that run too (scripts/interference.py). Measured "
                 "slowdown: median overlapped time / median apart time; predicted: the same of the simulated runs, from "
                 "the engine's co-run model (measured co-run figures from the host entry, else its loaded bandwidth; "
                 "`vlasim list host`).\n")
    h = prof.get("host")
    if h:
        g1 = h["groups"][0]
        lines.append(f"Host entry of the calibration (`vlasim --profile {out}/profile.json list host`): a {g1['cores']}-core "
                     f"group moves {g1['alone_bw']/1e9:.2f} GB/s alone and {g1['loaded_bw']/1e9:.2f} GB/s with every other CPU "
                     f"streaming; all CPUs together {h['node_bw']/1e9:.2f} GB/s; LLC {h['llc_bytes']/2**20:.0f} MiB"
                     + (" (implausible: more than 64 MiB per CPU sharing it, so not used)"
                        if h['llc_bytes'] / max(1, h['llc_shared_cpus']) > 64 * 2**20 else "")
                     + f"; {len(h.get('corun', []))} measured co-run slowdown(s).\n")
    else:
        lines.append("The profile has no host entry: the catalog CPU's figures made the prediction.\n")
    lines.append("Model slowdown: the engine's for that segment with the other group busy all through (overlap 100%): "
                 "measured, the host entry's co-run slowdown of that segment beside that co-runner (calibrate "
                 "--in-context's co-run pass, in the calibration right before the run); bandwidth, memory share of its "
                 "time x alone/loaded bandwidth of the host entry where none was measured. The engine slows a run only "
                 "while the other group runs, about 1 + (model - 1) x its overlap, so at the measured overlaps its "
                 "slowdown is (1 + (model - 1) x overlapped mean) / (1 + (model - 1) x apart mean), free of the "
                 "simulated schedule and of the calibrated run-to-run variation's draws; within 5%: the measured "
                 f"slowdown against it. With fewer than {MIN_RUNS} runs in either class no slowdown is given. Started "
                 "beside busy / idle: the measured runs' median (ms, runs) by the other group's state when the run began "
                 "(a run of it already going that covers at least half of this one, or none going).\n")
    lines.append("| scenario | segment | measured runs, overlapped / apart | simulated runs, overlapped / apart | mean overlap, overlapped / apart (measured) | alone in the plan (ms) | measured median, overlapped / apart (ms) | measured slowdown | predicted slowdown | model slowdown, other group busy | model at the measured overlaps | within 5% | measured slowdown, classed by the run's own overlap (runs) | started beside busy / idle, measured median (ms, runs) |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    lines += irows
    lines.append("")
lines.append(f"<!-- /class:{cls} -->\n")
# Keep the other host classes' sections of the existing report.
sections = {}
if os.path.exists(report):
    for m in re.finditer(r"<!-- class:([^ ]+) -->\n.*?<!-- /class:\1 -->\n", open(report).read(), re.S):
        sections[m.group(1)] = m.group(0)
sections[cls] = "\n".join(lines) + "\n"
text = "\n".join(header) + "\n" + "\n".join(sections[k] for k in sorted(sections))
notes = os.path.join(os.path.dirname(report), "validation_notes.md")
if os.path.exists(notes) and os.path.basename(report) == "validation.md":
    text += ("\n## Why targets are missed, and what the figures rest on\n\n"
             "(From `reports/validation_notes.md`, written by hand from the runs; the tables above are the runs'.)\n\n"
             + open(notes).read().rstrip() + "\n")
open(report, "w").write(text)
print(f"wrote {report}")
EOF
# The weak path too: on a CPU stronger than AVX2, the suite once more with oneDNN capped at AVX2
# (fp32), into its own class section (AVX2_LEG=0 skips it).
if [[ -z $isa_cap && $host_isa != @(avx2|avx|sse41|unknown) && ${AVX2_LEG:-1} == 1 && ${REPORT_ONLY:-0} != 1 ]]; then
  ONEDNN_MAX_CPU_ISA=AVX2 OUT_DIR= INSTALL_PROFILE=0 bash "$here/scripts/validation_suite.sh"
fi
