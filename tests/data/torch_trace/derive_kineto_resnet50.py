#!/usr/bin/env python3
"""Derives kineto/resnet50_pt18_steps.json.gz from pytorch/kineto's
tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz (BSD-3-Clause, commit
34d6ad534a947ebd4b2173e1d4dd0072cadb0d73, git blob d3fb4076, 1,011,891 bytes): ResNet-50
training steps on a GPU recorded with PyTorch 1.8.0's Kineto profiler (every record_function
range, ProfilerStep#N included, has category "Operator"; shapes under "Input dims").

Kept: the first STEPS ProfilerStep ranges. CPU events (category Operator and Runtime) that start
inside them, and the device events (Kernel, Memcpy, Memset) whose correlation is one of the kept
Runtime calls', each unchanged but for its args, of which only Input dims, Input type,
correlation, stream, device and External id stay. Dropped: flow events, instants, metadata.

Usage: derive_kineto_resnet50.py SOURCE.json.gz OUT.json.gz [STEPS]
"""
import gzip
import json
import sys

from trace_cut import with_args, write_trace

KEEP_ARGS = {"Input dims", "Input type", "correlation", "stream", "device", "External id"}


def main(src, out, steps):
    with gzip.open(src, "rt") as f:
        d = json.load(f)
    ev = d["traceEvents"]
    step_ranges = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                         if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))[:steps]
    lo, hi = step_ranges[0][0], step_ranges[-1][1]
    keep, corr = [], set()
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in ("Operator", "Runtime"):
            continue
        if lo <= e["ts"] and e["ts"] + e["dur"] <= hi:
            keep.append(e)
            if e.get("cat") == "Runtime" and "correlation" in e.get("args", {}):
                corr.add(e["args"]["correlation"])
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("Kernel", "Memcpy", "Memset") and \
                e.get("args", {}).get("correlation") in corr:
            keep.append(e)
    d["traceEvents"] = with_args(keep, KEEP_ARGS)
    write_trace(d, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2)
