"""The slowdown of an async split's segments when the other core group runs, measured against the
engine's, from one validation-suite run (issue 32; the suite's interference table).

A segment's runs are set in two classes: those the other core group kept busy for most of their
window (overlapped) and those it left mostly idle (apart). A run's window is the segment's alone
time in the plan from the run's start, not the run's own span (a run slow for another reason would
stretch into more of the other group's work).

Which class a measured run falls in is decided by the overlap the simulation gave the same request
(the same arrivals, the plan's times and the calibrated variation's draws), not by the run's own
overlap. The run's own overlap follows from the machine's own speed: when the host slows for a few
seconds, the busier group's queue grows and the two groups overlap more, and one stage slowed by a
hiccup starts the next stage late, into the other group's next frame, while the hiccup slows that
run too. Both put runs slow for reasons other than interference among the overlapped ones (the
second stage of split3_async read x1.066 and x1.364 that way, on a machine whose co-run pass
measured x1.000). The simulation's overlap of a request is set by the arrivals, which the machine
cannot move, so the two classes see the same machine. The classes' mean overlap in the measured run
(which a schedule disturbed by the machine dilutes) enters the engine's figure at those overlaps.

  segment_runs(trace_path, windows)  per unit: (segment name, {request: (overlap, duration_us, start_us)})
  segments(run_dir)                  one dict per (unit, segment) of an async split run directory
"""
import json
import os
import statistics

# Overlapped: the other group busy for more than HI of the run's window; apart: less than LO.
HI, LO = 0.7, 0.3
# A median of fewer runs in either class is a few draws of the run-to-run variation, not a slowdown.
MIN_RUNS = 5
WITHIN = 0.05


def _load(path):
    with open(path) as f:
        return json.load(f)


def _events(trace_path):
    return [e for e in _load(trace_path)["traceEvents"] if e.get("ph") == "X"]


def segment_runs(trace_path, windows):
    """Per unit (the trace's tid): (segment name, {request: (overlap, duration_us, start_us)}), where
    overlap is the share of the run's window [start, start + window) during which any run of the
    other units was going. windows: unit -> window (us); a unit without one uses the median of its
    runs' durations. Runs of zero duration are left out."""
    return _segment_runs(_events(trace_path), windows)


def _segment_runs(ev, windows):
    by = {}
    for e in ev:
        by.setdefault(e["tid"], []).append(e)
    out = {}
    for tid, lst in by.items():
        other = [e for t2, l2 in by.items() if t2 != tid for e in l2]
        w = windows.get(tid) or statistics.median(e["dur"] for e in lst)
        def busy(s0):
            return sum(max(0, min(s0 + w, o["ts"] + o["dur"]) - max(s0, o["ts"])) for o in other) / w
        out[tid] = (lst[0]["name"], {e["args"]["request"]: (busy(e["ts"]), e["dur"], e["ts"])
                                     for e in lst if e["dur"] > 0})
    return out


def started_beside(ev, tid):
    """Durations (us) of unit tid's runs in the trace events ev by the other units' state when each
    began: (busy, idle). Busy: a run of theirs already going that covers at least half of this one;
    idle: none going."""
    mine = [e for e in ev if e["tid"] == tid and e["dur"] > 0]
    other = [e for e in ev if e["tid"] != tid]
    busy, idle = [], []
    for e in mine:
        s0, d = e["ts"], e["dur"]
        going = [o for o in other if o["ts"] <= s0 < o["ts"] + o["dur"]]
        if not going:
            idle.append(d)
        elif sum(min(s0 + d, o["ts"] + o["dur"]) - s0 for o in going) >= 0.5 * d:
            busy.append(d)
    return busy, idle


def contrast(runs, classed_by):
    """runs: {request: (overlap, duration, start)}; classed_by: {request: overlap} deciding each
    run's class (requests missing from it are left out). Returns (overlapped, apart, slowdown):
    the two classes as lists of (own overlap, duration), and the median overlapped duration over
    the median apart one, None with fewer than MIN_RUNS in either class."""
    hi = [(o, d) for r, (o, d, _) in runs.items() if r in classed_by and classed_by[r] > HI]
    lo = [(o, d) for r, (o, d, _) in runs.items() if r in classed_by and classed_by[r] < LO]
    if len(hi) < MIN_RUNS or len(lo) < MIN_RUNS:
        return hi, lo, None
    return hi, lo, statistics.median(d for _, d in hi) / statistics.median(d for _, d in lo)


def mean_overlap(v):
    return statistics.mean(o for o, _ in v) if v else 0.0


def segments(run_dir):
    """One dict per (unit, segment) of the run directory (compare's simulate/ and execute/ traces
    and drift.json), in unit order:
      unit, segment, alone_s (the plan's alone time, 0 if unknown),
      measured: (overlapped, apart, slowdown), measured runs classed by the simulation's overlap
                of the same request;
      by_own:   the same, classed by the measured run's own overlap (biased; shown beside);
      predicted: simulated runs classed by their own overlap;
      model: (slowdown with the other group busy all through, measured in the co-run pass?) or None;
      at_overlaps: the engine's slowdown at the measured classes' mean overlaps,
                (1 + (m - 1) x overlapped mean) / (1 + (m - 1) x apart mean), or None;
      within: |measured - at_overlaps| <= WITHIN, None when either is missing;
      started_busy, started_idle: measured durations (us) by the other group's state at the start."""
    dj = os.path.join(run_dir, "drift.json")
    corun = {(r["unit"], r["segment"]): r for r in _load(dj).get("corun", [])} \
        if os.path.exists(dj) else {}
    windows = {u: r["alone_s"] * 1e6 for (u, _), r in corun.items() if r.get("alone_s", 0) > 0}
    exe_events = _events(os.path.join(run_dir, "execute", "trace.json"))
    exe = _segment_runs(exe_events, windows)
    sim = segment_runs(os.path.join(run_dir, "simulate", "trace.json"), windows)
    rows = []
    for tid in sorted(exe):
        name, exe_runs = exe[tid]
        sim_runs = sim.get(tid, (name, {}))[1]
        sim_class = {r: o for r, (o, _, _) in sim_runs.items()}
        own_class = {r: o for r, (o, _, _) in exe_runs.items()}
        measured = contrast(exe_runs, sim_class)
        c = corun.get((tid, name))
        model = (c["slowdown"], bool(c.get("measured", False))) if c else None
        at = None
        if model and measured[1]:
            m = max(1.0, model[0])
            at = (1 + (m - 1) * mean_overlap(measured[0])) / (1 + (m - 1) * mean_overlap(measured[1]))
        busy, idle = started_beside(exe_events, tid)
        rows.append({
            "unit": tid, "segment": name, "alone_s": c.get("alone_s", 0.0) if c else 0.0,
            "measured": measured, "by_own": contrast(exe_runs, own_class),
            "predicted": contrast(sim_runs, sim_class), "model": model, "at_overlaps": at,
            "within": None if measured[2] is None or at is None else abs(measured[2] - at) <= WITHIN,
            "started_busy": busy, "started_idle": idle})
    return rows
