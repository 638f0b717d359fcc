"""What the trace-deriving scripts beside this file share: each kept event copied with only
the args it names, and the result written as gzip-compressed JSON that the same input always
gives byte for byte (sorted keys, no spaces, no time stamp in the gzip header)."""
import gzip
import json


def with_args(events, keep_args):
    """Copies of `events` whose args hold only the keys in `keep_args`."""
    out = []
    for e in events:
        e = dict(e)
        if "args" in e:
            e["args"] = {k: v for k, v in e["args"].items() if k in keep_args}
        out.append(e)
    return out


def write_trace(d, out):
    """Writes trace `d` to `out` (.json.gz), byte-identical for the same `d`."""
    text = json.dumps(d, separators=(",", ":"), sort_keys=True)
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as f:
        f.write(text.encode())
