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


if __name__ == "__main__":
    unittest.main()
