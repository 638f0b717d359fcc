"""scripts/suite_marks.py: which validation-suite runs the machine disturbed (issue 32)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import suite_marks  # noqa: E402


def calibrate_log(*latencies_ms):
    # The line calibrate --in-context prints per scenario model.
    return "".join(f"in context s  100 requests: ops 9.000 ms, segments 9.500 ms, latency {l:.3f} ms\n"
                   for l in latencies_ms)


class SuiteMarks(unittest.TestCase):
    def run_dir(self, before, after, marked=False, target=0.03):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        if before is not None:
            open(os.path.join(d, "calibrate.log"), "w").write(calibrate_log(*before))
        if after is not None:
            open(os.path.join(d, "calibrate_after.log"), "w").write(calibrate_log(*after))
        json.dump({"marked": marked, "target": target}, open(os.path.join(d, "drift.json"), "w"))
        return d

    def test_a_steady_run_is_not_marked(self):
        self.assertEqual(suite_marks.reasons(self.run_dir([20.0], [20.4])), [])

    def test_the_sentinels_mark_is_kept(self):
        self.assertEqual(suite_marks.reasons(self.run_dir([20.0], [20.0], marked=True)), ["sentinel"])

    def test_the_scenarios_own_alone_latency_moving_past_the_target_marks_it(self):
        self.assertEqual(suite_marks.reasons(self.run_dir([20.0], [21.0])), ["own drift"])
        self.assertEqual(suite_marks.reasons(self.run_dir([20.0], [19.0])), ["own drift"])
        self.assertEqual(suite_marks.reasons(self.run_dir([20.0], [21.0], marked=True)), ["sentinel", "own drift"])

    def test_the_drift_json_target_decides(self):
        self.assertEqual(suite_marks.reasons(self.run_dir([20.0], [21.0], target=0.10)), [])

    def test_every_model_of_a_scenario_counts(self):
        d = self.run_dir([10.0, 30.0], [10.0, 32.0])
        self.assertAlmostEqual(suite_marks.own_drift(d), 0.05)

    def test_a_calibration_that_timed_nothing_gives_no_drift_and_no_mark(self):
        d = self.run_dir([20.0], None)
        self.assertIsNone(suite_marks.own_drift(d))
        self.assertEqual(suite_marks.reasons(d), [])

    def profile(self, d, *kernel_ms):
        # The sentinel a calibration writes into its profile: (seconds since its start, kernel s).
        json.dump({"sentinel": [[2.0 * i, 1e-3 * k] for i, k in enumerate(kernel_ms)]},
                  open(os.path.join(d, "profile.json"), "w"))

    def test_a_calibration_whose_sentinel_moved_past_the_target_marks_the_run(self):
        d = self.run_dir([20.0], [20.1])
        # the samples in between share the cores with the calibration: only its two ends count
        self.profile(d, 1.22, 2.9, 1.3, 1.283)
        self.assertAlmostEqual(suite_marks.calibration_drift(d), 1.283 / 1.22 - 1)
        self.assertEqual(suite_marks.reasons(d), ["calibration drift"])
        self.profile(d, 1.30, 1.22)
        self.assertEqual(suite_marks.reasons(d), ["calibration drift"])

    def test_a_steady_calibration_leaves_the_run_unmarked(self):
        d = self.run_dir([20.0], [20.1])
        self.profile(d, 1.22, 2.9, 1.25)
        self.assertEqual(suite_marks.reasons(d), [])

    def test_a_calibration_with_one_sentinel_sample_or_no_profile_gives_no_drift(self):
        d = self.run_dir([20.0], [20.1])
        self.assertIsNone(suite_marks.calibration_drift(d))
        self.profile(d, 1.22)
        self.assertIsNone(suite_marks.calibration_drift(d))
        self.assertEqual(suite_marks.reasons(d), [])

    def trace(self, d, *segments):
        # The measured trace compare writes: each segment (name, [run ms ...]) on its own unit,
        # its runs one per 10 ms in order.
        ev = [{"name": name, "cat": "compute", "ph": "X", "pid": 0, "tid": unit, "ts": 1e4 * i, "dur": 1e3 * ms}
              for unit, (name, runs) in enumerate(segments) for i, ms in enumerate(runs)]
        ev.append({"name": "copy", "cat": "transfer", "ph": "X", "pid": 0, "tid": 9, "ts": 0, "dur": 1e9})
        os.makedirs(os.path.join(d, "execute"))
        json.dump({"traceEvents": ev}, open(os.path.join(d, "execute", "trace.json"), "w"))

    def test_a_slowdown_inside_the_run_marks_it_though_both_ends_agree(self):
        d = self.run_dir([20.0], [20.1])
        steady = [20.0 + 0.4 * (i % 5) for i in range(100)]
        self.trace(d, ("a", steady), ("b", steady[:60] + [26.0] * 20 + steady[80:]))
        self.assertAlmostEqual(suite_marks.in_run_drift(d), 26.0 / 20.8 - 1)
        self.assertEqual(suite_marks.reasons(d), ["in-run drift"])

    def test_a_steady_run_and_its_run_to_run_variation_leave_it_unmarked(self):
        d = self.run_dir([20.0], [20.1])
        # +-10% between runs, the same mix in every fifth; a transfer of any length is not judged
        self.trace(d, ("a", [18.0, 20.0, 22.0, 19.0, 21.0] * 20))
        self.assertAlmostEqual(suite_marks.in_run_drift(d), 0.0)
        self.assertEqual(suite_marks.reasons(d), [])

    def test_a_segment_with_too_few_runs_per_fifth_is_not_judged(self):
        d = self.run_dir([20.0], [20.1])
        self.trace(d, ("rare", [20.0] * 40 + [30.0] * 9))
        self.assertIsNone(suite_marks.in_run_drift(d))
        self.assertEqual(suite_marks.reasons(d), [])


if __name__ == "__main__":
    unittest.main()
