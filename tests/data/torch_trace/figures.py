#!/usr/bin/env python3
"""Figures of the traces in this folder, computed independently of vlasim's reader
(sim/torch_trace.cc) by brute force over Python's json module, for tests/sim/torch_trace_test.cc
to check the reader against. Regenerate with:
    python3 tests/data/torch_trace/figures.py > tests/data/torch_trace/figures.json

Per trace:
  events        elements of traceEvents (or of the top-level list)
  ops, ranges   complete ("X") events of category cpu_op and user_annotation (legacy traces,
                without categories: names with "::" and the others)
  kernels, copies, sets, and *_us
                "X" events of category kernel, gpu_memcpy, gpu_memset: count, summed duration
  streams       distinct args.stream over those
  launched_us   device time whose launch call (cuda_runtime / cuda_driver event of equal
                args.correlation) lies inside some cpu_op on the call's pid/tid
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


def figures(path):
    ev = load(path)
    out = {"events": len(ev)}
    x = [e for e in ev if isinstance(e, dict) and e.get("ph") == "X"]
    kineto = any("cat" in e for e in x)
    if kineto:
        ops = [e for e in x if e.get("cat") == "cpu_op"]
        ranges = [e for e in x if e.get("cat") == "user_annotation"]
    else:
        ops = [e for e in x if "::" in e["name"]]
        ranges = [e for e in x if "::" not in e["name"]]
    out["ops"], out["ranges"] = len(ops), len(ranges)
    for key, cat in (("kernels", "kernel"), ("copies", "gpu_memcpy"), ("sets", "gpu_memset")):
        dev = [e for e in x if e.get("cat") == cat]
        out[key] = len(dev)
        out[key + "_us"] = sum(e["dur"] for e in dev)
    dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    out["streams"] = len({e["args"].get("stream") for e in dev})
    calls = {e["args"]["correlation"]: e for e in x
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    launched = 0.0
    for d in dev:
        c = calls.get(d["args"]["correlation"])
        if c and any(o["pid"] == c["pid"] and o["tid"] == c["tid"] and o["ts"] <= c["ts"] <= o["ts"] + o["dur"]
                     for o in ops):
            launched += d["dur"]
    out["launched_us"] = launched
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
    for p in sorted(glob.glob(os.path.join(here, "*.json.gz")) + glob.glob(os.path.join(here, "hta", "*.json.gz"))):
        res[os.path.relpath(p, here)] = figures(p)
    print(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
