"""scripts/interference.py: the suite's measured slowdown of an async split's segments beside the
other core group (issue 32), on synthetic two-stage pipelines whose truth is known."""
import json
import os
import random
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import interference  # noqa: E402

A_US, B_US, PERIOD_US = 12800.0, 15800.0, 20500.0


def arrivals(n, seed):
    rng = random.Random(seed)
    return [k * PERIOD_US + rng.uniform(-0.3, 0.3) * PERIOD_US for k in range(n)]


def pipeline(arr, a_dur, b_dur):
    """An async two-stage pipeline: unit 0 runs request k's first stage when it arrives and unit 0
    is free, unit 1 its second stage when the first is done and unit 1 is free. a_dur(k) and
    b_dur(k, start, a_runs) give the durations (us); a_runs is unit 0's list of (start, end).
    Returns (a_runs, b_runs)."""
    a_runs, end = [], 0.0
    for k, t in enumerate(arr):
        s = max(t, end)
        end = s + a_dur(k)
        a_runs.append((s, end))
    b_runs, end = [], 0.0
    for k, (_, a_end) in enumerate(a_runs):
        s = max(a_end, end)
        end = s + b_dur(k, s, a_runs)
        b_runs.append((s, end))
    return a_runs, b_runs


def overlap(s, w, runs):
    return sum(max(0.0, min(s + w, e) - max(s, o)) for o, e in runs) / w


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def write_trace(path, a_runs, b_runs):
    ev = [{"name": "m vision-prefix", "ph": "X", "pid": 0, "tid": 0, "ts": s, "dur": e - s,
           "args": {"request": k}} for k, (s, e) in enumerate(a_runs)]
    ev += [{"name": "m prefix-action", "ph": "X", "pid": 0, "tid": 1, "ts": s, "dur": e - s,
            "args": {"request": k}} for k, (s, e) in enumerate(b_runs)]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_json(path, {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 0}] + ev})


class Interference(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(lambda: shutil.rmtree(self.root))

    def run_dir(self, executed, simulated, model_b=1.0):
        d = os.path.join(self.root, f"run{len(os.listdir(self.root))}")
        write_trace(os.path.join(d, "execute", "trace.json"), *executed)
        write_trace(os.path.join(d, "simulate", "trace.json"), *simulated)
        corun = [{"unit": 0, "segment": "m vision-prefix", "slowdown": 1.0, "measured": True, "alone_s": A_US / 1e6},
                 {"unit": 1, "segment": "m prefix-action", "slowdown": model_b, "measured": True,
                  "alone_s": B_US / 1e6}]
        write_json(os.path.join(d, "drift.json"), {"corun": corun})
        return d

    def simulated(self, arr):
        rng = random.Random(7)
        return pipeline(arr, lambda k: A_US * rng.uniform(0.99, 1.01),
                        lambda k, s, a: B_US * rng.uniform(0.99, 1.01))

    def test_hiccups_that_delay_the_second_stage_are_not_read_as_interference(self):
        # No interference at all: a hiccup slows a first stage by 80% and the same request's
        # second stage by 40%; the late first stage starts the second into the next frame's.
        arr = arrivals(900, 1)
        rng = random.Random(2)
        hiccup = {k for k in range(len(arr)) if rng.random() < 0.08}
        executed = pipeline(arr, lambda k: A_US * (1.8 if k in hiccup else 1.0) * rng.uniform(0.98, 1.02),
                            lambda k, s, a: B_US * (1.4 if k in hiccup else 1.0) * rng.uniform(0.98, 1.02))
        rows = {r["unit"]: r for r in interference.segments(self.run_dir(executed, self.simulated(arr)))}
        b = rows[1]
        self.assertAlmostEqual(b["measured"][2], 1.0, delta=0.02)
        self.assertTrue(b["within"])
        self.assertEqual(b["at_overlaps"], 1.0)

    def test_slow_periods_of_the_host_are_not_read_as_interference(self):
        # The host runs 25% slower for a third of the run: the queue grows, both groups overlap
        # more and every run is slower; none is slowed by the other group. Classed by their own
        # overlap, the slow stretch's runs gather among the overlapped ones.
        arr = arrivals(900, 3)
        rng = random.Random(4)
        slow = lambda k: 1.25 if 300 <= k < 600 else 1.0
        executed = pipeline(arr, lambda k: A_US * slow(k) * rng.gauss(1, 0.03),
                            lambda k, s, a: B_US * slow(k) * rng.gauss(1, 0.03))
        rows = {r["unit"]: r for r in interference.segments(self.run_dir(executed, self.simulated(arr)))}
        for u in (0, 1):
            self.assertGreater(rows[u]["by_own"][2], 1.05, f"unit {u}: the bias this classing removes")
            self.assertAlmostEqual(rows[u]["measured"][2], 1.0, delta=0.02, msg=f"unit {u}")
            self.assertTrue(rows[u]["within"], f"unit {u}")

    def test_a_real_slowdown_beside_the_other_group_is_measured(self):
        # The second stage runs 30% slower for the share of it the other group is busy.
        arr = arrivals(900, 4)
        executed = pipeline(arr, lambda k: A_US, lambda k, s, a: B_US * (1 + 0.3 * overlap(s, B_US, a)))
        sim = self.simulated(arr)
        engine_right = {r["unit"]: r for r in interference.segments(self.run_dir(executed, sim, model_b=1.3))}[1]
        engine_wrong = {r["unit"]: r for r in interference.segments(self.run_dir(executed, sim, model_b=1.0))}[1]
        self.assertGreater(engine_right["measured"][2], 1.08)
        self.assertTrue(engine_right["within"], engine_right)
        self.assertFalse(engine_wrong["within"], engine_wrong)

    def test_too_few_runs_in_a_class_give_no_slowdown(self):
        # Arrivals far apart: the groups never overlap, so the overlapped class is empty.
        arr = [k * 3 * PERIOD_US for k in range(40)]
        sim = pipeline(arr, lambda k: A_US, lambda k, s, a: B_US)
        rows = interference.segments(self.run_dir(sim, sim))
        for r in rows:
            self.assertIsNone(r["measured"][2])
            self.assertIsNone(r["within"])

    def test_runs_are_classed_by_the_simulated_overlap_of_the_same_request(self):
        arr = arrivals(200, 5)
        sim = self.simulated(arr)
        d = self.run_dir(sim, sim)
        sim_runs = interference.segment_runs(os.path.join(d, "simulate", "trace.json"), {0: A_US, 1: B_US})
        b = {r["unit"]: r for r in interference.segments(d)}[1]
        hi = sum(1 for o, _, _ in sim_runs[1][1].values() if o > interference.HI)
        lo = sum(1 for o, _, _ in sim_runs[1][1].values() if o < interference.LO)
        self.assertEqual((len(b["measured"][0]), len(b["measured"][1])), (hi, lo))
        self.assertGreater(hi, interference.MIN_RUNS)


if __name__ == "__main__":
    unittest.main()
