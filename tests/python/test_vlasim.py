"""The Python module vlasim: scenarios loaded, edited and simulated as the command does, the
registries, a card's graph, errors as vlasim.ConfigError, the GIL released, Ctrl-C.
Run from the source tree with PYTHONPATH=<build>/python (ctest python_test sets it);
VLASIM_BIN names the command to compare with."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

import vlasim
from vlasim import _vlasim

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
DEFAULT = os.path.join(SRC, "scenarios", "default.yaml")
VLASIM_BIN = os.environ.get("VLASIM_BIN", os.path.join(SRC, "build", "vlasim"))

SMALL = """\
name: small
seed: 3
hardware:
  devices:
    - name: cpu0
      catalog: epyc-2vcpu
      core_groups: [{name: all, cores: 2}]
models:
  - name: pi0s
    card: pi0_small
    views: 1
    prompt: 0
    dtype: fp32
    placement:
      - {stages: [vision, prefix, action], device: cpu0.all}
workload:
  - {name: camera, model: pi0s, rate_hz: 2, deadline_ms: 900, duration_s: 5}
policies:
  queue: fifo
  pipeline: serial
"""


def small_dict():
    return {
        "name": "small", "seed": 3,
        "hardware": {"devices": [{"name": "cpu0", "catalog": "epyc-2vcpu",
                                  "core_groups": [{"name": "all", "cores": 2}]}]},
        "models": [{"name": "pi0s", "card": "pi0_small", "views": 1, "prompt": 0, "dtype": "fp32",
                    "placement": [{"stages": ["vision", "prefix", "action"], "device": "cpu0.all"}]}],
        "workload": [{"name": "camera", "model": "pi0s", "rate_hz": 2, "deadline_ms": 900, "duration_s": 5}],
        "policies": {"queue": "fifo", "pipeline": "serial"},
    }


def without_file(report):
    return {k: v for k, v in report.items() if k != "file"}


class SimulateLikeTheCommand(unittest.TestCase):
    def test_default_scenario_report_and_requests_equal_the_commands_files(self):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([VLASIM_BIN, "simulate", DEFAULT, "-q", "-o", out], check=True)
            with open(os.path.join(out, "report.json")) as f:
                report_file = f.read()
            with open(os.path.join(out, "requests.csv")) as f:
                csv_file = f.read()
        raw = _vlasim.simulate(vlasim.load(DEFAULT)._core)
        self.assertEqual(raw.report_json, report_file)
        self.assertEqual(raw.requests_csv, csv_file)
        r = vlasim.simulate(DEFAULT)
        self.assertEqual(r, json.loads(report_file))
        self.assertGreater(r["throughput_hz"], 0)

    def test_requests_are_a_record_array_with_requests_csv_columns(self):
        r = vlasim.simulate(SMALL)
        header = _vlasim.simulate(vlasim.load(SMALL)._core).requests_csv.splitlines()[0].split(",")
        self.assertIsInstance(r.requests, np.recarray)
        self.assertEqual(list(r.requests.dtype.names), header)
        self.assertEqual(len(r.requests), r["requests"])
        self.assertEqual(int(r.requests.met.sum()),
                         round(r["deadline_attainment"] * r["requests"]))
        finished = r.requests.latency_s[~np.isnan(r.requests.latency_s)]
        self.assertAlmostEqual(float(finished.max()), r["latency"]["max_s"], places=9)
        self.assertEqual(set(r.requests.model), {"pi0s"})

    def test_a_seed_given_replaces_the_scenarios_own(self):
        self.assertEqual(vlasim.simulate(SMALL)["seed"], 3)
        self.assertEqual(vlasim.simulate(SMALL, seed=11)["seed"], 11)


class Loading(unittest.TestCase):
    def test_file_string_and_dict_give_the_same_report(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(SMALL)
        try:
            from_file = vlasim.simulate(vlasim.load(f.name))
        finally:
            os.unlink(f.name)
        from_text = vlasim.simulate(vlasim.load(SMALL))
        from_dict = vlasim.simulate(vlasim.load(small_dict()))
        self.assertEqual(without_file(from_file), without_file(from_text))
        self.assertEqual(without_file(from_text), without_file(from_dict))
        self.assertEqual(from_text["file"], "")

    def test_set_changes_the_scenario_that_is_simulated(self):
        s = vlasim.load(SMALL)
        before = vlasim.simulate(s)["requests"]
        s.set("workload.0.rate_hz", 4)
        self.assertIn("rate_hz: 4", s.yaml())
        self.assertEqual(vlasim.simulate(s)["requests"], 2 * before)

    def test_copy_is_independent(self):
        s = vlasim.load(SMALL)
        t = s.copy().set("workload.0.duration_s", 1)
        self.assertIn("duration_s: 5", s.yaml())
        self.assertIn("duration_s: 1", t.yaml())


class Errors(unittest.TestCase):
    def test_a_bad_value_in_text_names_line_and_key(self):
        bad = SMALL.replace("rate_hz: 2", "rate_hz: -2")
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.load(bad)
        e = cm.exception
        self.assertEqual(e.file, "<string>")
        self.assertEqual(e.line, 17)
        self.assertEqual(e.key, "workload[0].rate_hz")
        self.assertIsInstance(e, ValueError)

    def test_a_bad_value_in_a_dict_names_its_key(self):
        d = small_dict()
        d["policies"]["queue"] = "no_such_policy"
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.load(d)
        self.assertEqual(cm.exception.file, "<dict>")
        self.assertIn("queue", cm.exception.key)
        self.assertIn("esf", str(cm.exception))  # the valid names are listed
        self.assertGreater(cm.exception.line, 0)

    def test_a_missing_file_names_the_file(self):
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.load("no/such/scenario.yaml")
        self.assertEqual(cm.exception.file, "no/such/scenario.yaml")

    def test_a_set_that_breaks_the_scenario_raises_and_leaves_it_as_it_was(self):
        s = vlasim.load(SMALL)
        text = s.yaml()
        with self.assertRaises(vlasim.ConfigError) as cm:
            s.set("workload.0.rate_hz", -1)
        self.assertIn("rate_hz", cm.exception.key)
        with self.assertRaises(vlasim.ConfigError):
            s.set("workload.7.rate_hz", 1)
        self.assertEqual(s.yaml(), text)

    def test_malformed_yaml_raises_config_error_with_a_line(self):
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.load("name: x\nmodels: [\n")
        self.assertGreater(cm.exception.line, 0)

    def test_an_unknown_card_raises_config_error_listing_cards(self):
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.graph("no_such_card")
        self.assertIn("pi0_small", str(cm.exception))

    def test_a_wrong_python_type_raises_type_error(self):
        with self.assertRaises(TypeError):
            vlasim.load(42)
        with self.assertRaises(TypeError):
            vlasim.load(SMALL).set("workload.0.rate_hz", [1, 2])


class RegistriesAndGraphs(unittest.TestCase):
    def test_registries_list_policies_and_cost_models_with_parameters(self):
        reg = vlasim.registries()
        self.assertIn("esf", [e["name"] for e in reg["queue_policies"]])
        self.assertIn("roofline", [e["name"] for e in reg["cost_models"]])
        self.assertIn("pi0_small", reg["cards"])
        params = [p for e in reg["cost_models"] for p in e["params"]]
        self.assertTrue(params and all({"name", "default", "description"} <= set(p) for p in params))

    def test_graph_ops_add_up_to_the_graph(self):
        g = vlasim.graph("pi0_small")
        ops = g["ops"]
        self.assertGreater(len(ops), 10)
        self.assertAlmostEqual(float(ops.flops.sum()) / g["flops"], 1.0, places=9)
        gemm = ops[ops.kind == "gemm"]
        self.assertTrue(len(gemm) and np.all(gemm.m > 0))

    def test_graph_shape_options_change_the_graph(self):
        self.assertGreater(vlasim.graph("pi0_small", views=3)["flops"], vlasim.graph("pi0_small", views=1)["flops"])


LONG = SMALL.replace("duration_s: 5", "duration_s: 500000")  # about 4 s of wall time: stopped early


class LongRuns(unittest.TestCase):
    def test_the_gil_is_released_while_simulating(self):
        ticks = []
        done = threading.Event()

        def tick():
            while not done.is_set():
                ticks.append(time.monotonic())
                time.sleep(0.005)

        s = vlasim.load(LONG)
        t = threading.Thread(target=tick)
        t.start()
        time.sleep(0.02)
        t0 = time.monotonic()
        r = vlasim.simulate(s, max_wall_s=0.5, requests=False)
        t1 = time.monotonic()
        done.set()
        t.join()
        during = [x for x in ticks if t0 < x < t1]
        self.assertIn("max_wall_s", r["partial"])
        self.assertGreater(len(during), 20, f"{len(during)} ticks in {t1 - t0:.2f} s of simulation")

    def test_ctrl_c_stops_a_run_with_a_partial_report(self):
        code = (
            "import os, signal, threading, time, vlasim\n"
            f"s = vlasim.load({LONG!r})\n"
            "threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
            "t0 = time.monotonic()\n"
            "try:\n"
            "    vlasim.simulate(s, requests=False)\n"
            "    print('finished')\n"
            "except KeyboardInterrupt as e:\n"
            "    print(type(e).__name__, e.report['partial'], e.report['requests'] > 0, time.monotonic() - t0 < 3)\n"
        )
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout.strip(), "Interrupted KeyboardInterrupt True True", p.stderr)


ROBION = os.path.join(SRC, "scenarios", "systems", "robion_serving_h100.yaml")


class EsfInPython:
    """The C++ esf (scheduler/policy.cc EarliestSloFirst): the model whose oldest item has the
    earliest deadline; ties: the older head, then the lower request id."""
    picks = 0

    def pick(self, v):
        EsfInPython.picks += 1
        q = v.queue
        head = {}
        for i, w in enumerate(q):
            h = head.get(w.model)
            if h is None or (w.ready, w.request) < (q[h].ready, q[h].request):
                head[w.model] = i
        return min(head.values(), key=lambda i: (q[i].deadline, q[i].ready, q[i].request))


def short_robion():
    s = vlasim.load(ROBION)
    s.set("workload.0.duration_s", 2).set("workload.1.duration_s", 2)
    return s


class PythonPolicies(unittest.TestCase):
    def test_a_python_esf_gives_the_same_report_and_requests_as_the_cpp_esf_on_robion(self):
        vlasim.register_queue_policy("py_esf", EsfInPython)
        s = short_robion()
        cpp = _vlasim.simulate(s._core, 5)
        s.set("policies.queue", "py_esf")
        EsfInPython.picks = 0
        py = _vlasim.simulate(s._core, 5)
        self.assertGreater(EsfInPython.picks, 100)
        self.assertEqual(py.report_json, cpp.report_json)
        self.assertEqual(py.requests_csv, cpp.requests_csv)

    def test_a_python_policy_drives_the_schedule(self):
        vlasim.register_queue_policy("py_newest_first", lambda v: len(v.queue) - 1)
        s = short_robion()
        esf = vlasim.simulate(s)
        s.set("policies.queue", "py_newest_first")
        newest = vlasim.simulate(s)
        self.assertEqual(esf["requests"], newest["requests"])
        self.assertNotEqual(esf["latency"], newest["latency"])

    def test_the_registry_lists_a_python_policy(self):
        vlasim.register_queue_policy("py_first", lambda v: 0, "always the oldest")
        entry = [e for e in vlasim.registries()["queue_policies"] if e["name"] == "py_first"]
        self.assertEqual(entry[0]["description"], "[python] always the oldest")

    def test_an_exception_in_pick_is_raised_by_simulate(self):
        def broken(v):
            raise ZeroDivisionError("policy bug")
        vlasim.register_queue_policy("py_broken", broken)
        s = short_robion()
        s.set("policies.queue", "py_broken")
        with self.assertRaisesRegex(ZeroDivisionError, "policy bug"):
            vlasim.simulate(s)
        s.set("policies.queue", "esf")
        self.assertGreater(vlasim.simulate(s)["finished"], 0)  # the error does not stay behind

    def test_a_pick_outside_the_queue_raises_index_error(self):
        vlasim.register_queue_policy("py_out_of_range", lambda v: len(v.queue))
        s = short_robion()
        s.set("policies.queue", "py_out_of_range")
        with self.assertRaisesRegex(IndexError, "py_out_of_range"):
            vlasim.simulate(s)

    def test_a_pick_that_is_not_an_int_raises_type_error(self):
        vlasim.register_queue_policy("py_float", lambda v: 0.0)
        s = short_robion()
        s.set("policies.queue", "py_float")
        with self.assertRaises(TypeError):
            vlasim.simulate(s)

    def test_a_built_in_name_is_refused(self):
        with self.assertRaises(ValueError):
            vlasim.register_queue_policy("esf", EsfInPython)


class ModelTools(unittest.TestCase):
    def test_leaderboard_rows_are_the_commands_csv(self):
        lb = vlasim.leaderboard("pi0_small", devices=["h100-sxm", "rtx4090"])
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([VLASIM_BIN, "leaderboard", "pi0_small", "--devices", "h100-sxm,rtx4090", "-q", "-o", out],
                           check=True)
            with open(os.path.join(out, "leaderboard.csv")) as f:
                self.assertEqual(lb["csv"], f.read())
        self.assertEqual(sorted(lb["rows"].device), ["h100-sxm", "rtx4090"])
        self.assertTrue(np.all(lb["rows"].latency_s > 0))

    def test_roofline_shares_add_up_to_one(self):
        r = vlasim.roofline("pi0_small", device="h100-sxm")
        self.assertAlmostEqual(float(r["rows"].share.sum()), 1.0, places=6)
        self.assertIn("gemm", set(r["rows"]["class"]))

    def test_an_unknown_device_raises_config_error_naming_it(self):
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.leaderboard("pi0_small", devices=["no_such_gpu"])
        self.assertEqual(cm.exception.key, "--devices")


class RealRuns(unittest.TestCase):
    def test_execute_runs_the_workload_here_and_reports_as_simulate_does(self):
        s = vlasim.load(SMALL).set("workload.0.duration_s", 1)
        r = vlasim.execute(s, warmup=1)
        predicted = vlasim.simulate(s)
        self.assertEqual(r["mode"], "execute")
        self.assertEqual(r.failed, 0)
        self.assertEqual((r["requests"], r["finished"]), (predicted["requests"], predicted["finished"]))
        self.assertEqual(list(r.requests.dtype.names), list(predicted.requests.dtype.names))
        self.assertTrue(np.all(r.requests.latency_s > 0))
        self.assertTrue(r.devices)

    def test_compare_gives_the_commands_comparison_of_both_runs(self):
        s = vlasim.load(SMALL).set("workload.0.duration_s", 1)
        c = vlasim.compare(s, warmup=1)
        self.assertEqual(c["vlasim_compare"], 1)
        self.assertEqual(c["predicted"]["mode"], "simulate")
        self.assertEqual(c["measured"]["mode"], "execute")
        self.assertEqual(c["predicted"], vlasim.simulate(s))
        self.assertIn("overall", c)
        self.assertIn("|", c["markdown"])

    def test_compare_trace_gives_the_commands_compare_json(self):
        scenario = os.path.join(SRC, "scenarios", "trace", "pi0_tiny_cpu.yaml")
        trace = os.path.join(SRC, "tests", "data", "torch_trace", "pi0_tiny_cpu_shapes.json.gz")
        c = vlasim.compare_trace(scenario, trace)
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([VLASIM_BIN, "compare", scenario, "--trace", trace, "-q", "-o", out], check=True,
                           stderr=subprocess.DEVNULL)
            with open(os.path.join(out, "compare.json")) as f:
                expected = json.load(f)
        self.assertEqual({k: v for k, v in c.items() if k not in ("markdown", "predicted")}, expected)
        self.assertTrue(c["markdown"].startswith("Measured side: PyTorch trace"))

    def test_a_missing_trace_raises_config_error_naming_it(self):
        scenario = os.path.join(SRC, "scenarios", "trace", "pi0_tiny_cpu.yaml")
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.compare_trace(scenario, "no/such/trace.json")
        self.assertIn("no/such/trace.json", str(cm.exception))

    def test_calibrate_writes_and_returns_a_profile_of_the_scenarios_ops(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "small.yaml")
            with open(path, "w") as f:
                f.write(SMALL)
            out = os.path.join(d, "profile.json")
            p = vlasim.calibrate([path], out=out, grid="none", reps=1)
            self.assertTrue(os.path.isfile(out))
        self.assertEqual(p["catalog_device"], "epyc-2vcpu")
        self.assertTrue(p["sections"])

    def test_a_bad_calibrate_option_raises_config_error_naming_it(self):
        with self.assertRaises(vlasim.ConfigError) as cm:
            vlasim.calibrate([], out=os.path.join(tempfile.gettempdir(), "unused.json"), grid="bogus")
        self.assertEqual(cm.exception.key, "--grid")

    def test_a_python_policy_drives_the_real_runtime(self):
        calls = []

        def oldest(v):
            calls.append(len(v.queue))
            return 0
        vlasim.register_queue_policy("py_oldest_runtime", oldest)
        busy = SMALL.replace("pipeline: serial", "pipeline: {name: async, params: {depth: 4}}")
        # Ten requests within 50 ms: they queue on any host (a pi0_small inference takes more
        # than 5 ms), so the policy is asked to pick among several.
        s = vlasim.load(busy).set("workload.0.rate_hz", 200).set("workload.0.duration_s", 0.05)
        s.set("policies.queue", "py_oldest_runtime")
        r = vlasim.execute(s, warmup=1)
        self.assertEqual(r["finished"], r["requests"])
        self.assertTrue(calls and max(calls) > 1, calls)

    def test_an_unknown_executor_raises_config_error(self):
        with self.assertRaises(vlasim.ConfigError):
            vlasim.execute(vlasim.load(SMALL).set("workload.0.duration_s", 1), executor="no_such_executor")


if __name__ == "__main__":
    unittest.main()
