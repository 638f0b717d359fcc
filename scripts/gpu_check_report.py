#!/usr/bin/env python3
"""Writes the GPU check's report (scripts/gpu_check.sh) from the files its steps left:
  gpu_check_report.py WORK STEPS.tsv OUT.md GPU_NAME CATALOG_ENTRY
Every figure comes from a file a step wrote; a step that failed or left no file is reported as
such, never filled in. Targets (issue 42): the CUDA tests pass; pi0 bf16 graph replay <= 12 ms on
an H200; calibrated on the device, median |stage error| <= 5% and e2e p50 within 5%; from the
kernel model alone, e2e p50 within 10%; PyTorch's eager and graph latency predicted within 15%."""
import csv
import datetime
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def pct(x):
    return "n/a" if x is None else "%+.1f%%" % (100 * x)


def verdict(err, limit):
    if err is None:
        return "not measured"
    return "met" if abs(err) <= limit else "missed"


def compare_figures(d):
    """(e2e p50 error, median |stage error|, predicted p50 s, measured p50 s) of compare.json."""
    c = load(os.path.join(d, "compare.json"))
    if not c:
        return None
    p50 = c["overall"]["latency_s"]["p50"]
    return p50.get("error"), c["overall"].get("median_abs_stage_error"), p50.get("predicted"), p50.get("measured")


def tail_of(path, n=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return "(no output)"


def main():
    work, steps_tsv, out_md, gpu, entry = sys.argv[1:6]
    steps = {r["step"]: r for r in csv.DictReader(open(steps_tsv), delimiter="\t")}
    L = ["## %s: %s (catalog entry %s)" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                                             gpu or "no GPU found", entry), ""]
    manifest = os.path.join(os.environ.get("VLASIM_DATA_DIR", ""), "..", "..", "MANIFEST")
    if os.path.exists(manifest):
        L += ["Kit: " + "; ".join(l.strip() for l in open(manifest).readlines()[1:4]), ""]
    L += ["| step | exit | seconds | note |", "|---|---|---|---|"]
    L += ["| %s | %s | %s | %s |" % (k, r["exit"], r["seconds"], r["note"]) for k, r in steps.items()]
    L += ["", "```", tail_of(os.path.join(work, "device.txt"), 800).strip(), "```", ""]
    targets = []

    # The CUDA tests.
    t = load(os.path.join(work, "cuda_tests.json"))
    if t:
        rows, counts = [], {"passed": 0, "failed": 0, "skipped": 0}
        for suite in t.get("testsuites", []):
            for c in suite.get("testsuite", []):
                res = "failed" if c.get("failures") else ("skipped" if c.get("result") == "SKIPPED" else "passed")
                counts[res] += 1
                props = ", ".join("%s %s" % (k, v) for k, v in c.items() if k.endswith(("_rel_err", "_ms", "_gbs")))
                rows.append("| %s.%s | %s | %s |" % (suite["name"], c["name"], res, props))
        L += ["CUDA tests: %(passed)d passed, %(failed)d failed, %(skipped)d skipped." % counts, "",
              "| test | result | figures |", "|---|---|---|"] + rows + [""]
        ok = counts["failed"] == 0 and counts["passed"] > 0 and counts["skipped"] == 0
        targets.append(("the CUDA tests pass", "%(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts,
                        "met" if ok else "missed"))
    else:
        L += ["CUDA tests: no results (" + tail_of(os.path.join(work, "tests.txt"), 300).strip() + ")", ""]

    # bench_cuda.
    b = load(os.path.join(work, "bench_cuda.json"))
    if b:
        L += ["| benchmark (pi0, 2 views, chunk 63, 10 steps) | ms | best ms | GFLOP/s |", "|---|---|---|---|"]
        for r in b.get("benchmarks", []):
            if r.get("error_occurred"):
                L.append("| %s | skipped: %s | | |" % (r["name"], r.get("error_message", "")))
                continue
            L.append("| %s | %.2f | %.2f | %.0f |" % (r["name"], r.get("ms", float("nan")), r.get("best_ms", float("nan")),
                                                     r.get("GFLOP/s", float("nan"))))
            if "Bf16Graph" in r["name"] and "ms" in r:
                targets.append(("pi0 bf16 graph replay <= 12 ms (H200)", "%.2f ms" % r["ms"],
                                "met" if r["ms"] <= 12 else "missed"))
        L.append("")

    def compare_section(title, d, limit_p50, limit_stage, target_name):
        f = compare_figures(os.path.join(work, d))
        L.extend(["### " + title, ""])
        md = os.path.join(work, d, "compare.md")
        if f is None:
            L.extend(["No comparison: " + tail_of(os.path.join(work, d.replace("compare_", "") + ".txt"), 600).strip(), ""])
            return
        p50_err, stage_err, pred, meas = f
        L.append("e2e p50: predicted %s ms, measured %s ms (%s); median |stage error| %s." % (
            "n/a" if pred is None else "%.2f" % (1e3 * pred), "n/a" if meas is None else "%.2f" % (1e3 * meas),
            pct(p50_err), pct(stage_err)))
        L.append("")
        if os.path.exists(md):
            L.extend(open(md).read().splitlines())
            L.append("")
        if limit_p50:
            targets.append((target_name + ": e2e p50 within %d%%" % round(100 * limit_p50), pct(p50_err),
                            verdict(p50_err, limit_p50)))
        if limit_stage:
            targets.append((target_name + ": median |stage error| <= %d%%" % round(100 * limit_stage), pct(stage_err),
                            verdict(stage_err, limit_stage)))

    compare_section("pi0 on the cuda executor, predicted by the kernel model alone (held out)", "compare_kernel",
                    0.10, None, "kernel model, no device profile")

    # PyTorch beside it.
    tt = load(os.path.join(work, "torch_timing.json")) or {}
    L += ["### The same pi0 in PyTorch (scripts/torch_trace_pi0.py, bf16, no profiler)", ""]
    if tt:
        L.append("torch %s on %s." % (tt.get("torch"), tt.get("device")))
    else:
        L.append("PyTorch not measured: " + tail_of(os.path.join(work, "torch.txt"), 400).strip())
    for kind, sim in (("eager", "torch_sim_eager"), ("graph", "torch_sim_graph")):
        m = tt.get(kind + "_ms", {})
        r = load(os.path.join(work, sim, "report.json"))
        pred = None
        try:
            pred = 1e3 * r["latency"]["p50_s"]
        except (TypeError, KeyError):
            pass
        pred_s = "n/a" if pred is None else "%.2f ms" % pred
        if "p50" not in m:
            L.append("- %s: predicted p50 %s (kernel model, pi0_torch.yaml); not measured (%s)" % (
                kind, pred_s, m.get("error", "no figure")))
            targets.append(("PyTorch %s latency predicted within 15%%" % kind, "not measured", "not measured"))
            continue
        err = None if pred is None else pred / m["p50"] - 1
        L.append("- %s: measured p50 %.2f ms (min %.2f, %d runs); predicted p50 %s (%s)" % (
            kind, m["p50"], m["min"], m["runs"], pred_s, pct(err)))
        targets.append(("PyTorch %s latency predicted within 15%%" % kind, pct(err), verdict(err, 0.15)))
    L.append("")
    md = os.path.join(work, "compare_trace", "compare.md")
    L += ["`vlasim compare --trace` of pi0_torch.yaml against the Kineto trace:", ""]
    L += open(md).read().splitlines() if os.path.exists(md) else [tail_of(os.path.join(work, "trace.txt"), 600).strip()]
    L += ["", "`vlasim calibrate` on the device: " + tail_of(os.path.join(work, "calibrate.txt"), 400).strip(), ""]

    compare_section("pi0 from the device profile, whole GPU", "compare_profiled_pi0", 0.05, 0.05, "calibrated, whole GPU")
    compare_section("pi0 from the device profile, VLM on 96 SMs and action expert on 32", "compare_profiled_pi0_split",
                    0.05, 0.05, "calibrated, SM split")
    for sc, what in (("pi0_2s", "both streams on every SM"), ("pi0_split_2s", "VLM on 96 SMs, action expert on 32")):
        compare_section("Two streams at once (issues 30, 45), %s: blocks predicted against measured" % what, "compare_two_stream_" + sc,
                        None, None, "")
        for alt in ("fluid", "blocks_v1"):
            r = load(os.path.join(work, alt + "_" + sc, "report.json"))
            if r:
                L += ["Predicted under gpu_sharing %s instead: throughput %.1f Hz, p50 %.2f ms." % (
                    alt, r["throughput_hz"], 1e3 * r["latency"]["p50_s"]), ""]

    L += ["### Targets (issue 42)", "", "| target | figure | verdict |", "|---|---|---|"]
    L += ["| %s | %s | %s |" % t for t in targets] or ["| (nothing measured) | | |"]
    head = "# CUDA executor on a GPU (scripts/gpu_check.sh)\n\n"
    with open(out_md, "w") as f:
        f.write(head + "\n".join(L) + "\n")


if __name__ == "__main__":
    main()
