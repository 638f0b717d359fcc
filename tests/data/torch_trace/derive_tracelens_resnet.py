#!/usr/bin/env python3
"""Derives tracelens/resnet_act_checkpoint_rank0_cut.json.gz from AMD-AGI/TraceLens's
tests/traces/mi300/resnet_act_checkpoint.json.gz (MIT, commit
171dd74721ca1ec45709e5805b68ae1f65e27811; 1,160,542 bytes, git blob 02488a34).

Kept unchanged: every complete ("X") event that vlasim reads (cpu_op, user_annotation, kernel,
gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver) with its name, times, pid, tid and category,
and the file's metadata (deviceProperties, distributedInfo, ...). Dropped: the 34,405
python_function events, flow events ("s"/"f"), metadata ("M") and instant events, and of each
event's args all but Input Dims, Input type, correlation, stream, External id. Device and launch
events are not touched: the 968 device events of the step before the trace stay as recorded.

Usage: derive_tracelens_resnet.py SOURCE.json.gz OUT.json.gz
"""
import gzip
import json
import sys

from trace_cut import with_args, write_trace

KEEP_CATS = {"cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver"}
KEEP_ARGS = {"Input Dims", "Input type", "correlation", "stream", "External id"}


def main(src, out):
    with gzip.open(src, "rt") as f:
        d = json.load(f)
    d["traceEvents"] = with_args((e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") in KEEP_CATS),
                                 KEEP_ARGS)
    write_trace(d, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
