"""Predicted vs measured from a PyTorch profiler trace: the shipped trace of pi0_tiny on this
repository's 2-vCPU machine (tests/data/torch_trace) beside the prediction of the scenario that
describes that run, end to end and per stage, then per operator kind where the trace has shapes.

    PYTHONPATH=build/python python3 examples/python/trace_vs_prediction.py [TRACE] [SCENARIO]
"""
import os
import sys

import vlasim

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def main():
    trace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "torch_trace",
                                                                "pi0_tiny_cpu_shapes.json.gz")
    scenario = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "scenarios", "trace", "pi0_tiny_cpu.yaml")
    c = vlasim.compare_trace(scenario, trace)
    print(c["markdown"].split("\n\n")[0])  # what the measured side is
    print()
    print(f"{'':>10} {'predicted ms':>13} {'measured ms':>12} {'error':>8}")
    for model in c["models"]:
        rows = [("end to end", model["end_to_end"]["latency_s"]["mean"])]
        rows += [(s["stage"], s["mean_s"]) for s in model["stages"]]
        for name, e in rows:
            print(f"{name:>10} {e['predicted'] * 1e3:>13.2f} {e['measured'] * 1e3:>12.2f} {e['error']:>+8.1%}")
    ops = c["operators"]
    if ops["count"]:
        print(f"\n{ops['count']} operators matched in the trace: MAPE {ops['mape']:.1%}, "
              f"time-weighted error {ops['weighted_error']:+.1%}")


if __name__ == "__main__":
    main()
