#!/usr/bin/env python3
"""How far each unmeasured catalog figure behind a missed paper figure must move to meet it.

validate-papers (reports/validate_papers.md) misses Orion on the L20 out of sample and
Diffusion Policy on the Ascend 310P; both rest on a figure nobody has measured (the L20's fp32
GEMM fraction, taken from the RTX 4090; the 310P's fp32 rate, estimated from its vector
lanes). This script simulates each figure over values of that one catalog figure (a copy of
the catalog, everything else as shipped, the shaped model at the stated parameters) and prints
a Markdown table: the predicted figure at each value, and the value that meets the published
figure (linear interpolation between the two values around it). A simulation: the same on any
host. Needs python3-yaml.

  scripts/papers_sensitivity.py [VLASIM]      (default build/vlasim)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("papers_sensitivity.py: needs python3-yaml (apt-get install python3-yaml)")

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VLASIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "build", "vlasim")

# (figure, published, scenario, shaped params, catalog entry, key path in the entry, values,
#  metric, extra scenario edits)
STUDIES = [
    ("orion_native (out of sample: the pi0-only fit)", 521, "orion_native_l20.yaml",
     {"host_op_us": 25, "eff_scale": 1.1}, "l20", ["kernels", "gemm_fp32"],
     [0.67, 0.6, 0.55, 0.5, 0.45], "per_frame_ms"),
    ("orion_native (in sample: the whole fit set)", 521, "orion_native_l20.yaml",
     {"host_op_us": 25, "eff_scale": 0.9}, "l20", ["kernels", "gemm_fp32"],
     [0.67, 0.6, 0.55, 0.5], "per_frame_ms"),
    ("dp_ascend_native", 1853, "diffusion_policy_ascend310p.yaml",
     {"host_op_us": 25, "eff_scale": 0.9}, "ascend-310p", ["tflops_fp32"],
     [1.1, 2.0, 3.0, 4.0, 6.0], "alone_ms"),
]


def simulate(catalog, scenario, params, metric, tmp):
    with open(os.path.join(HERE, "scenarios", "papers", scenario)) as f:
        s = yaml.safe_load(f)
    s.setdefault("policies", {})["cost_model"] = {"name": "shaped", "params": params}
    path = os.path.join(tmp, "scenario.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(s, f)
    out = os.path.join(tmp, "out")
    subprocess.run([VLASIM, "--catalog", catalog, "simulate", path, "-q", "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    r = json.load(open(os.path.join(out, "report.json")))
    if metric == "alone_ms":
        return r["models"][0]["predicted_alone_s"] * 1e3
    return 1e3 / r["throughput_hz"]


def main():
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        catalog = os.path.join(tmp, "catalog")
        for fig, published, scenario, params, entry, key, values, metric in STUDIES:
            rows = []
            for v in values:
                shutil.rmtree(catalog, ignore_errors=True)
                shutil.copytree(os.path.join(HERE, "sim", "catalog"), catalog)
                gpus = os.path.join(catalog, "gpus.yaml")
                with open(gpus) as f:
                    c = yaml.safe_load(f)
                node = c[entry]
                for k in key[:-1]:
                    node = node[k]
                node[key[-1]] = v
                with open(gpus, "w") as f:
                    yaml.safe_dump(c, f)
                rows.append((v, simulate(catalog, scenario, params, metric, tmp)))
            need = "outside the values tried"
            for (v0, t0), (v1, t1) in zip(rows, rows[1:]):
                if (t0 - published) * (t1 - published) <= 0 and t0 != t1:
                    need = f"{v0 + (published - t0) * (v1 - v0) / (t1 - t0):.3g}"
                    break
            p = ", ".join(f"{k} {v}" for k, v in params.items())
            lines += [f"**{fig}**, published {published} ms; {entry} `{'.'.join(key)}` (shipped "
                      f"{rows[0][0]}), shaped model at {p}:", "",
                      "| " + ".".join(key) + " | predicted ms | error |", "|---|---|---|"]
            lines += [f"| {v} | {t:.1f} | {100 * (t / published - 1):+.1f}% |" for v, t in rows]
            lines += ["", f"Meets {published} ms at {'.'.join(key)} = {need}.", ""]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
