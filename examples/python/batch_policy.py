"""A batching policy written in Python, a twin of the C++ `dynamic` batching, run against it on
the Robion serving scenario, and a variation that only a Python prototype makes cheap to try:
batches that never pad (every size from 1 to the unit's batch size is a size the plan costs).

    PYTHONPATH=build/python python3 examples/python/batch_policy.py [--quick] [--seed N]
"""
import argparse
import os
import time

import vlasim

HERE = os.path.dirname(os.path.abspath(__file__))
ROBION = os.path.join(HERE, "..", "..", "scenarios", "systems", "robion_serving_h100.yaml")


def kind(w):
    """What items must share to run as one batch: the plan, and the kind (or the segment)."""
    return w.plan, (w.kind if w.kind >= 0 else w.segment)


class Dynamic:
    """dynamic batching (the C++ dynamic, in Python)"""

    def __init__(self, size=1):
        self.default_size = size

    def form(self, v, lead, max_batch):
        # The lead, then the others of its kind earliest deadline first; run at the smallest
        # of sizes() that holds them (by default 1, 2, 4, ... and max_batch: dynamic's).
        q = v.queue
        rest = sorted((i for i, w in enumerate(q) if i != lead and kind(w) == kind(q[lead])),
                      key=lambda i: (q[i].deadline, q[i].ready, q[i].request))
        return [lead] + rest[:max_batch - 1]


class Exact(Dynamic):
    """dynamic batching that never pads: a batch runs at its own size"""

    def sizes(self, max_batch):
        return list(range(1, max_batch + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s of requests (CI)")
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args()
    size = {"size": ("batch size of units that give no `batch:` of their own", 1)}
    vlasim.register_batch_policy("py_dynamic", Dynamic, params=size)
    vlasim.register_batch_policy("py_exact", Exact, params=size)
    s = vlasim.load(ROBION)
    if a.quick:
        s.set("workload.0.duration_s", 2).set("workload.1.duration_s", 2)
    results = {}
    print(f"{'batching':>11} {'p50 ms':>8} {'p99 ms':>8} {'deadlines':>9} {'wall s':>7}")
    for policy in ["dynamic", "py_dynamic", "py_exact", "fixed"]:
        s.set("policies.batching", policy)
        t0 = time.monotonic()
        r = vlasim.simulate(s, seed=a.seed, requests=False)
        wall = time.monotonic() - t0
        results[policy] = r
        print(f"{policy:>11} {r['latency']['p50_s'] * 1e3:>8.2f} {r['latency']['p99_s'] * 1e3:>8.2f} "
              f"{r['deadline_attainment']:>9.1%} {wall:>7.2f}")
    same = results["dynamic"] == results["py_dynamic"]
    print("py_dynamic gives the C++ dynamic's report:", "yes" if same else "NO")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
