"""A queue policy written in Python, an ESF twin (earliest SLO first over model queues), run
against the C++ `esf` on the Robion serving scenario, and a variation of it that only a Python
prototype makes cheap to try: ESF that lets a model's head wait while its slack exceeds the
other heads' estimates.

    PYTHONPATH=build/python python3 examples/python/esf_policy.py [--quick] [--seed N]
"""
import argparse
import os
import time

import vlasim

HERE = os.path.dirname(os.path.abspath(__file__))
ROBION = os.path.join(HERE, "..", "..", "scenarios", "systems", "robion_serving_h100.yaml")


def heads(queue):
    """Index of each model's oldest item (ties: lower request id)."""
    head = {}
    for i, w in enumerate(queue):
        h = head.get(w.model)
        if h is None or (w.ready, w.request) < (queue[h].ready, queue[h].request):
            head[w.model] = i
    return head


class Esf:
    """earliest SLO first over model queues (the C++ esf, in Python)"""

    def pick(self, v):
        q = v.queue
        return min(heads(q).values(), key=lambda i: (q[i].deadline, q[i].ready, q[i].request))


class SlackEsf:
    """ESF by slack: deadline minus the item's own estimated time"""

    def pick(self, v):
        q = v.queue
        return min(heads(q).values(), key=lambda i: (q[i].deadline - q[i].estimate, q[i].ready, q[i].request))


def policy_table(doc, key, policies, twin):
    """The Robion serving scenario (2 s of requests with --quick) simulated under each of
    `policies` set at `key`, one line each; exits 1 unless twin = (C++ name, Python name) give
    the same report."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s of requests (CI)")
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args()
    s = vlasim.load(ROBION)
    if a.quick:
        s.set("workload.0.duration_s", 2).set("workload.1.duration_s", 2)
    results = {}
    title = key.split(".")[-1].replace("queue", "queue policy")
    print(f"{title:>14} {'p50 ms':>8} {'p99 ms':>8} {'deadlines':>9} {'wall s':>7}")
    for policy in policies:
        s.set(key, policy)
        t0 = time.monotonic()
        r = vlasim.simulate(s, seed=a.seed, requests=False)
        wall = time.monotonic() - t0
        results[policy] = r
        print(f"{policy:>14} {r['latency']['p50_s'] * 1e3:>8.2f} {r['latency']['p99_s'] * 1e3:>8.2f} "
              f"{r['deadline_attainment']:>9.1%} {wall:>7.2f}")
    same = results[twin[0]] == results[twin[1]]
    print(f"{twin[1]} gives the C++ {twin[0]}'s report:", "yes" if same else "NO")
    if not same:
        raise SystemExit(1)


def main():
    vlasim.register_queue_policy("py_esf", Esf)
    vlasim.register_queue_policy("py_slack_esf", SlackEsf)
    policy_table(__doc__, "policies.queue", ["esf", "py_esf", "py_slack_esf", "fifo"], ("esf", "py_esf"))


if __name__ == "__main__":
    main()
