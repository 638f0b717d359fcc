#!/usr/bin/env python3
"""Figures of the traces in this folder, computed independently of vlasim's reader
(sim/measured/torch_trace.cc) by brute force over Python's json module, for tests/sim/torch_trace_test.cc
to check the reader against. Regenerate with:
    python3 tests/data/torch_trace/figures.py > tests/data/torch_trace/figures.json

Per trace:
  events        elements of traceEvents (or of the top-level list)
  ops, ranges   complete ("X") events of category cpu_op and user_annotation (legacy traces,
                without categories: names with "::" and the others). PyTorch 1.8/1.9 traces
                (category "Operator" for both): a range when named ProfilerStep#N, or when its
                name has no "::" and its "Input Dims" ("Input dims" in 1.8.0) is absent or [];
                an op otherwise. Categories are compared in lower case (1.8/1.9: Kernel,
                Memcpy, Memset, Runtime)
  kernels, copies, sets, and *_us
                "X" events of category kernel, gpu_memcpy, gpu_memset: count, summed duration
  streams       distinct args.stream over those
  launched_us   device time whose launch call (cuda_runtime / cuda_driver / runtime event of equal
                args.correlation) lies inside some cpu_op on the call's pid/tid
  inflight, inflight_us
                device events in flight when the profiler started: no call of their
                correlation, starting before the earliest device event on their stream that a
                call's correlation carries (on a stream without one: before the earliest call
                whose correlation some device event carries), with a correlation below every
                call's; count, summed duration
                (any other device event without a call would make the trace unreadable)
  class_us      (traces with kernels and Input Dims) device time by what vlasim would match its
                launching op as: the outermost cpu_op around the launch call (earliest start,
                longest first), classed by name and Input Dims as the forms documented for
                trace_op_key in sim/measured/torch_trace.h (gemm: linear, addmm, mm, matmul, patch
                conv2d; attention: 4-D scaled_dot_product_attention; norm: layer_norm,
                rms_norm, group_norm; eltwise: gelu, silu, add, mul, sub, softmax; embedding),
                each only when its sizes are consistent and positive; "none" for any other
                op; device time with no launching op is left out (launched_us is the total)
  inferences    ranges named "inference"; stage_ms: per stage the mean over inferences of
                (last end - first start) of the ranges of that name inside it; inference_ms
                the mean inference range duration (these traces have no kernels)
  top_op_ms     summed duration of the cpu ops that start after every earlier op on their
                thread has ended, and inside an inference range
"""
import glob
import gzip
import json
import os

here = os.path.dirname(os.path.abspath(__file__))


def load(path):
    with gzip.open(path, "rt") as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def prod(v):
    """Product of the sizes, -1 when one is negative."""
    p = 1
    for x in v:
        if x < 0:
            return -1
        p *= x
    return p


def op_class(name, dims):
    """What trace_op_key makes of an op, by its first word; written from the key forms, not the code."""
    b = name.split("::")[-1].strip("_")
    d = dims or []
    a = [x if isinstance(x, list) else [] for x in d]

    def at(i):
        return a[i] if i < len(a) else []

    if b == "linear" and len(at(0)) >= 1 and len(at(1)) == 2 and at(0)[-1] == at(1)[1]:
        return "gemm" if min(prod(at(0)[:-1]), at(1)[0], at(1)[1]) > 0 else "none"
    if b == "addmm" and len(at(1)) == 2 and len(at(2)) == 2 and at(1)[1] == at(2)[0]:
        return "gemm" if min(at(1)[0], at(2)[1], at(1)[1]) > 0 else "none"
    if b in ("mm", "matmul") and len(at(0)) >= 2 and len(at(1)) == 2 and at(0)[-1] == at(1)[0]:
        return "gemm" if min(prod(at(0)[:-1]), at(1)[1], at(1)[0]) > 0 else "none"
    if b in ("conv2d", "convolution") and len(at(0)) == 4 and len(at(1)) == 4:
        x, w = at(0), at(1)
        if prod(w) <= 0 or min(x) < 0 or x[2] % w[2] or x[3] % w[3]:
            return "none"
        return "gemm" if min(x[0] * (x[2] // w[2]) * (x[3] // w[3]), w[0], prod(w[1:])) > 0 else "none"
    if b == "scaled_dot_product_attention" and len(at(0)) == 4 and len(at(1)) == 4:
        return "attention" if at(0)[0] * at(0)[1] > 0 and min(at(0)) > 0 and min(at(1)) > 0 else "none"
    if not a or not at(0):
        return "none"
    if b in ("layer_norm", "rms_norm", "group_norm"):
        return "norm" if min(at(0)) > 0 else "none"
    if b in ("gelu", "silu", "add", "mul", "sub", "softmax"):
        return "eltwise" if max(prod(x) for x in a if x) > 0 else "none"
    if b == "embedding" and len(at(0)) == 2 and len(a) >= 2:
        return "embedding" if min(at(1) + [at(0)[1]]) > 0 else "none"
    return "none"


def figures(path):
    ev = load(path)
    out = {"events": len(ev)}
    x = [dict(e, cat=e["cat"].lower()) if "cat" in e else e
         for e in ev if isinstance(e, dict) and e.get("ph") == "X"]
    for e in x:  # 1.8.0's "Input dims"
        if "Input dims" in e.get("args", {}):
            e["args"] = dict(e["args"], **{"Input Dims": e["args"]["Input dims"]})
    kineto = any("cat" in e for e in x)

    def old_range(e):
        return e["name"].startswith("ProfilerStep#") or (
            "::" not in e["name"] and not e.get("args", {}).get("Input Dims"))
    if kineto:
        ops = [e for e in x if e.get("cat") == "cpu_op" or (e.get("cat") == "operator" and not old_range(e))]
        ranges = [e for e in x if e.get("cat") == "user_annotation" or (e.get("cat") == "operator" and old_range(e))]
    else:
        ops = [e for e in x if "::" in e["name"]]
        ranges = [e for e in x if "::" not in e["name"]]
    out["ops"], out["ranges"] = len(ops), len(ranges)
    for key, cats in (("kernels", ("kernel",)), ("copies", ("gpu_memcpy", "memcpy")), ("sets", ("gpu_memset", "memset"))):
        dev = [e for e in x if e.get("cat") in cats]
        out[key] = len(dev)
        out[key + "_us"] = sum(e["dur"] for e in dev)
    dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")]
    out["streams"] = len({e["args"].get("stream") for e in dev})
    calls = {e["args"]["correlation"]: e for e in x
             if e.get("cat") in ("cuda_runtime", "cuda_driver", "runtime") and "correlation" in e.get("args", {})}
    by_thread_ops = {}
    for o in ops:
        by_thread_ops.setdefault((o["pid"], o["tid"]), []).append(o)

    def around(c):
        return [o for o in by_thread_ops.get((c["pid"], c["tid"]), []) if o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]
    launched = 0.0
    for d in dev:
        c = calls.get(d["args"]["correlation"])
        if c and around(c):
            launched += d["dur"]
    out["launched_us"] = launched
    dev_corrs = {d["args"]["correlation"] for d in dev}
    launching = [c["ts"] for k, c in calls.items() if k in dev_corrs]
    first = min(launching) if launching else None
    low = min(calls) if calls else None
    first_on = {}
    for d in dev:
        if d["args"]["correlation"] in calls:
            s = d["args"].get("stream")
            first_on[s] = min(first_on.get(s, d["ts"]), d["ts"])
    early = [d for d in dev if d["args"]["correlation"] not in calls and first is not None and
             d["ts"] < first_on.get(d["args"].get("stream"), first) and d["args"]["correlation"] < low]
    out["inflight"] = len(early)
    out["inflight_us"] = sum(d["dur"] for d in early)
    if dev and any("Input Dims" in o.get("args", {}) for o in ops):
        by_class = {}
        for d in dev:
            c = calls.get(d["args"]["correlation"])
            out_ops = around(c) if c else []
            if not out_ops:
                continue
            top = min(out_ops, key=lambda o: (o["ts"], -o["dur"]))
            k = op_class(top["name"], top["args"].get("Input Dims"))
            by_class[k] = by_class.get(k, 0.0) + d["dur"]
        out["class_us"] = by_class
    inf = [r for r in ranges if r["name"] == "inference"]
    if inf:
        out["inferences"] = len(inf)
        out["inference_ms"] = sum(r["dur"] for r in inf) / len(inf) / 1e3
        stage = {}
        for s in ("vision", "prefix", "action"):
            spans = []
            for i in inf:
                inside = [r for r in ranges if r["name"] == s and r["tid"] == i["tid"] and
                          i["ts"] <= r["ts"] and r["ts"] + r["dur"] <= i["ts"] + i["dur"]]
                if inside:
                    spans.append(max(r["ts"] + r["dur"] for r in inside) - min(r["ts"] for r in inside))
            stage[s] = sum(spans) / len(spans) / 1e3
        out["stage_ms"] = stage
        # top-level: it starts when every op that started before it on its thread has ended (a
        # running maximum of ends, not a nesting stack; legacy times are whole microseconds, so
        # a child may overhang its parent's end by one)
        top = 0.0
        by_thread = {}
        for o in ops:
            by_thread.setdefault((o["pid"], o["tid"]), []).append(o)
        for lst in by_thread.values():
            lst.sort(key=lambda o: (o["ts"], -o["dur"]))
            reach = -1.0
            for o in lst:
                end = o["ts"] + o["dur"]
                if o["ts"] >= reach:
                    if any(i["ts"] <= o["ts"] <= i["ts"] + i["dur"] for i in inf):
                        top += o["dur"]
                reach = max(reach, end)
        out["top_op_ms"] = top / 1e3
    return out


def main():
    res = {}
    for p in sorted(glob.glob(os.path.join(here, "*.json.gz")) + glob.glob(os.path.join(here, "hta", "*.json.gz")) +
                    glob.glob(os.path.join(here, "tracelens", "*.json.gz")) +
                    glob.glob(os.path.join(here, "kineto", "*.json.gz"))):
        res[os.path.relpath(p, here)] = figures(p)
    print(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
