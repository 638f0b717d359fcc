"""scripts/pool_runs.py: the validation suite's figures pooled over several runs, on synthetic run
directories whose marks and errors are set by hand."""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import pool_runs  # noqa: E402

ISA = "avx512_core_bf16"


def compare_json(stage_errs, p50, p99):
    return {"overall": {"latency_s": {"p50": {"error": p50}, "p99": {"error": p99}}},
            "models": [{"stages": [{"mean_s": {"error": e}} for e in stage_errs]}]}


class PoolRunsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_dir(self, name, commit, scen):
        """A suite run out/<name>/<ISA>/ whose scenarios are {scenario: (marked, stage errs, p50, p99)}."""
        d = os.path.join(self.tmp, name, ISA)
        os.makedirs(d)
        with open(os.path.join(d, "run.env"), "w") as f:
            f.write(f'date_start="2026-12-06T0{len(os.listdir(self.tmp))}:00:00Z"\ncommit="{commit}"\n')
        for sc, (marked, stages, p50, p99) in scen.items():
            sd = os.path.join(d, sc)
            os.makedirs(sd)
            json.dump(compare_json(stages, p50, p99), open(os.path.join(sd, "compare.json"), "w"))
            json.dump({"marked": marked, "target": 0.03}, open(os.path.join(sd, "drift.json"), "w"))
        return os.path.join(self.tmp, name)

    def test_scenario_figure_is_median_over_its_unmarked_runs_only(self):
        a = self.run_dir("a", "c1", {"s1": (False, [0.01, -0.03, 0.02], 0.02, -0.04),
                                     "s2": (True, [0.50], 0.50, 0.50)})
        b = self.run_dir("b", "c1", {"s1": (False, [0.04], -0.06, 0.08),
                                     "s2": (False, [0.02], 0.01, 0.03)})
        c = self.run_dir("c", "c1", {"s1": (True, [0.90], 0.90, 0.90),
                                     "s2": (True, [0.70], 0.70, 0.70)})
        p = pool_runs.pool([pool_runs.load_run(pool_runs.class_dir(r, None)) for r in (a, b, c)])
        s1 = p["scenarios"]["s1"]
        self.assertEqual((s1["runs"], s1["unmarked"]), (3, 2))
        # s1's unmarked runs: median |stage| 0.02 and 0.04, |p50| 0.02 and 0.06, |p99| 0.04 and 0.08.
        self.assertAlmostEqual(s1["stage"], 0.03)
        self.assertAlmostEqual(s1["p50"], 0.04)
        self.assertAlmostEqual(s1["p99"], 0.06)
        s2 = p["scenarios"]["s2"]
        self.assertEqual(s2["unmarked"], 1)
        self.assertAlmostEqual(s2["p99"], 0.03)
        # Suite: the median over the two scenarios; the marked runs' large errors enter nowhere.
        self.assertAlmostEqual(p["suite"]["p50"], (0.04 + 0.01) / 2)
        self.assertEqual((p["covered"], p["unmarked"], p["measurements"]), (2, 3, 6))
        self.assertAlmostEqual(p["suite"]["stage"], (0.03 + 0.02) / 2)
        self.assertAlmostEqual(p["suite"]["p99"], (0.06 + 0.03) / 2)
        self.assertIs(p["met"], True)
        # Each unmarked measurement once: |p50| 0.02, 0.06, 0.01.
        self.assertAlmostEqual(p["by_measurement"]["p50"], 0.02)

    def test_met_follows_the_targets(self):
        good = self.run_dir("g", "c1", {"s1": (False, [0.01], 0.02, 0.05), "s2": (False, [0.02], -0.03, -0.08)})
        p = pool_runs.pool([pool_runs.load_run(pool_runs.class_dir(good, None))])
        self.assertIs(p["met"], True)
        bad = self.run_dir("h", "c1", {"s1": (False, [0.01], 0.02, 0.15), "s2": (False, [0.02], -0.03, -0.12)})
        p = pool_runs.pool([pool_runs.load_run(pool_runs.class_dir(bad, None))])
        self.assertIs(p["met"], False)

    def test_no_unmarked_run_gives_no_figure(self):
        r = self.run_dir("m", "c1", {"s1": (True, [0.01], 0.0, 0.0)})
        p = pool_runs.pool([pool_runs.load_run(pool_runs.class_dir(r, None))])
        self.assertIsNone(p["met"])
        self.assertIsNone(p["suite"]["stage"])
        self.assertIn("no scenario unmarked", pool_runs.markdown([pool_runs.load_run(pool_runs.class_dir(r, None))], p))

    def test_attempts_are_not_pooled(self):
        r = self.run_dir("t", "c1", {"s1": (False, [0.01], 0.01, 0.01), "s1.attempt1": (False, [0.5], 0.5, 0.5)})
        run = pool_runs.load_run(pool_runs.class_dir(r, None))
        self.assertEqual([s["name"] for s in run["scenarios"]], ["s1"])

    def test_different_commits_are_named(self):
        a = self.run_dir("a", "c1", {"s1": (False, [0.01], 0.01, 0.01)})
        b = self.run_dir("b", "c2", {"s1": (False, [0.01], 0.01, 0.01)})
        runs = [pool_runs.load_run(pool_runs.class_dir(r, None)) for r in (a, b)]
        p = pool_runs.pool(runs)
        self.assertEqual(p["commits"], ["c1", "c2"])
        self.assertIn("different code (c1, c2)", pool_runs.markdown(runs, p))

    def test_bad_inputs_exit_nonzero_naming_the_path(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(pool_runs.main([os.path.join(self.tmp, "nowhere")]), 1)
        self.assertIn("nowhere: no such directory", err.getvalue())
        r = self.run_dir("x", "c1", {"s1": (False, [0.01], 0.01, 0.01)})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(pool_runs.main(["--class", "avx2", r]), 1)
        self.assertIn("no run of host class avx2", err.getvalue())
        with open(os.path.join(r, ISA, "s1", "compare.json"), "w") as f:
            f.write('{"overall": {}}')
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(pool_runs.main([r]), 1)
        self.assertIn("s1/compare.json: not a compare.json", err.getvalue())

    def test_a_run_given_twice_is_refused(self):
        r = self.run_dir("d", "c1", {"s1": (False, [0.01], 0.01, 0.01)})
        with self.assertRaisesRegex(ValueError, "would count twice"):
            pool_runs.load_runs([r, os.path.join(r, ISA)])
        copy = os.path.join(self.tmp, "d_copy")
        shutil.copytree(r, copy)
        with self.assertRaisesRegex(ValueError, "d_copy: the same run as"):
            pool_runs.load_runs([r, copy])


if __name__ == "__main__":
    unittest.main()
