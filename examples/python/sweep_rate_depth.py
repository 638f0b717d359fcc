"""Rate x pipeline depth on the default scenario: p99 latency and throughput of each pair,
printed as a table and, where matplotlib is installed, plotted to sweep_rate_depth.png.

    PYTHONPATH=build/python python3 examples/python/sweep_rate_depth.py [--quick] [--out DIR]
"""
import argparse
import os

import vlasim

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "scenarios", "default.yaml")


def scenario_at(text, depth):
    """The default scenario under a cross-frame pipeline of `depth` requests in flight (1: serial)."""
    pipeline = "serial" if depth == 1 else "{name: async, params: {depth: %d}}" % depth
    return vlasim.load(text.replace("pipeline: serial", "pipeline: " + pipeline), name=DEFAULT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s of requests and fewer values (CI)")
    ap.add_argument("--out", default=".", help="folder for the plot")
    a = ap.parse_args()
    with open(DEFAULT) as f:
        text = f.read()
    rates = [5, 40] if a.quick else [5, 10, 20, 30, 40, 50]
    depths = [1, 2] if a.quick else [1, 2, 3, 4]
    rows = []
    for depth in depths:
        s = scenario_at(text, depth)
        if a.quick:
            s.set("workload.0.duration_s", 2)
        for rate in rates:
            s.set("workload.0.rate_hz", rate)
            r = vlasim.simulate(s, requests=False)
            rows.append((depth, rate, r["latency"]["p99_s"] * 1e3, r["throughput_hz"], r["deadline_attainment"]))
    print(f"{'depth':>5} {'rate Hz':>8} {'p99 ms':>9} {'thr Hz':>8} {'deadlines':>9}")
    for depth, rate, p99, thr, att in rows:
        print(f"{depth:>5} {rate:>8g} {p99:>9.1f} {thr:>8.2f} {att:>9.1%}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    fig, ax = plt.subplots()
    for depth in depths:
        pts = [(rate, p99) for d, rate, p99, _, _ in rows if d == depth]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"depth {depth}")
    ax.set_xlabel("camera rate (Hz)")
    ax.set_ylabel("p99 latency (ms)")
    ax.set_title("default scenario: rate x pipeline depth")
    ax.legend()
    path = os.path.join(a.out, "sweep_rate_depth.png")
    fig.savefig(path)
    print("wrote", path)


if __name__ == "__main__":
    main()
