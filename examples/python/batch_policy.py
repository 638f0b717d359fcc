"""A batching policy written in Python, a twin of the C++ `dynamic` batching, run against it on
the Robion serving scenario, and a variation that only a Python prototype makes cheap to try:
batches that never pad (every size from 1 to the unit's batch size is a size the plan costs).

    PYTHONPATH=build/python python3 examples/python/batch_policy.py [--quick] [--seed N]
"""
import vlasim
from esf_policy import policy_table  # the table of policies on the Robion serving scenario


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
    size = {"size": ("batch size of units that give no `batch:` of their own", 1)}
    vlasim.register_batch_policy("py_dynamic", Dynamic, params=size)
    vlasim.register_batch_policy("py_exact", Exact, params=size)
    policy_table(__doc__, "policies.batching", ["dynamic", "py_dynamic", "py_exact", "fixed"], ("dynamic", "py_dynamic"))


if __name__ == "__main__":
    main()
