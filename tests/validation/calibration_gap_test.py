"""scripts/calibration_gap.py: the in-context calibration's op times against the run's (issue 32)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import calibration_gap  # noqa: E402

SIG_A = "gemm/linear/bf16/m=1"
SIG_B = "attention/self_attention/bf16/q=64"


def calibrate_log(*ops_ms):
    # The line calibrate --in-context prints per scenario model.
    return "".join(f"in context s  100 requests: ops {x:.3f} ms, segments 9.500 ms, latency 9.900 ms\n"
                   for x in ops_ms)


class CalibrationGap(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(lambda: shutil.rmtree(self.root))

    def run_dir(self, name, before, run_ops_ms, after=None, table=None):
        """A run directory: calibration logs (None: none), compare.json with ops of the given
        measured times (ms), each (stage, predicted ms, measured ms); table: signature -> ms."""
        d = os.path.join(self.root, name)
        os.makedirs(d)
        if before is not None:
            open(os.path.join(d, "calibrate.log"), "w").write(calibrate_log(*before))
        if after is not None:
            open(os.path.join(d, "calibrate_after.log"), "w").write(calibrate_log(*after))
        ops = [{"stage": s, "predicted_s": p / 1e3, "measured_s": m / 1e3} for s, p, m in run_ops_ms]
        json.dump({"operators": {"ops": ops}}, open(os.path.join(d, "compare.json"), "w"))
        if table is not None:
            t = {sig: {"median_s": ms / 1e3, "source": "in-context"} for sig, ms in table.items()}
            json.dump({"sections": [{"dtype": "bf16", "threads": 2, "table": t}]},
                      open(os.path.join(d, "profile.json"), "w"))
        return d

    def test_gap_is_the_calibrations_op_total_over_the_runs(self):
        d = self.run_dir("a", [6.0, 4.6], [("v", 1, 4.0), ("a", 1, 6.0)], after=[10.0])
        before, after = calibration_gap.gap(d)
        self.assertAlmostEqual(before, 0.06)
        self.assertAlmostEqual(after, 0.0)

    def test_a_missing_log_or_run_gives_no_gap(self):
        d = self.run_dir("a", None, [("v", 1, 4.0)], after=[4.4])
        self.assertEqual(calibration_gap.gap(d)[0], None)
        self.assertAlmostEqual(calibration_gap.gap(d)[1], 0.1)
        os.remove(os.path.join(d, "compare.json"))
        self.assertEqual(calibration_gap.gap(d), (None, None))

    def test_sign_test_is_exact_and_two_sided(self):
        self.assertAlmostEqual(calibration_gap.sign_test([0.01] * 10)[0], 2 / 1024)
        self.assertAlmostEqual(calibration_gap.sign_test([-0.01] * 10)[0], 2 / 1024)
        p, k, n = calibration_gap.sign_test([0.01, -0.02, 0.0, 0.03])
        self.assertEqual((k, n), (2, 3))
        self.assertAlmostEqual(p, 1.0)
        self.assertEqual(calibration_gap.sign_test([]), (1.0, 0, 0))

    def test_summary_counts_every_run_of_the_class_attempts_included(self):
        for i, b in enumerate([10.5, 10.3, 10.2, 9.9]):
            self.run_dir(f"s{i}" + (".attempt1" if i % 2 else ""), [b], [("v", 1, 10.0)])
        s = calibration_gap.summary(self.root)
        m, p, k, n = s["before"]
        self.assertAlmostEqual(m, 0.025)
        self.assertEqual((k, n), (3, 4))
        self.assertIsNone(s["after"])

    def test_by_signature_divides_out_each_runs_overall_gap(self):
        # The calibration 10% slower overall, but signature B 21% slower and A 5%: B stands out
        # by +10% of the run's overall ratio, A by -4.5%.
        table = {SIG_A: 1.05, SIG_B: 1.21}
        ops = [("action", 1.05, 1.0), ("action", 1.05, 1.0), ("vision", 1.21, 1.0)]
        self.run_dir("r", [3.31], ops, table=table)
        shifts = calibration_gap.by_signature(self.root)
        overall = (2 * 1.05 + 1.21) / 3
        self.assertAlmostEqual(shifts[("vision", SIG_B)][0], 1.21 / overall - 1)
        self.assertAlmostEqual(shifts[("action", SIG_A)][0], 1.05 / overall - 1)

    def test_by_signature_leaves_out_ops_whose_figure_two_signatures_share(self):
        table = {SIG_A: 1.0, SIG_B: 1.0}
        self.run_dir("r", [2.0], [("action", 1.0, 1.1), ("vision", 1.0, 0.9)], table=table)
        self.assertEqual(calibration_gap.by_signature(self.root), {})

    def test_the_command_reports_and_refuses_a_missing_directory(self):
        self.run_dir("r", [10.2], [("v", 1, 10.0)], after=[10.1])
        import io
        from contextlib import redirect_stdout, redirect_stderr
        buf = io.StringIO()
        with redirect_stdout(buf):
            self.assertEqual(calibration_gap.main(["x", self.root]), 0)
        self.assertIn("op total +2.00% (median over 1 runs), slower than the run in 1 of 1", buf.getvalue())
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(calibration_gap.main(["x", os.path.join(self.root, "none")]), 2)
        self.assertIn("no such directory", err.getvalue())


if __name__ == "__main__":
    unittest.main()
