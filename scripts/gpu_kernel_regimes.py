#!/usr/bin/env python3
"""Measured regimes of the vendored GPU kernel times (data/gpu_profiles), for
reports/gpu_cost_model_notes.md: per GPU and token range, the GEMM time fitted as
latency + bytes / bandwidth (weighted least squares on relative error), and the rate
(bytes per second, per SM per clock) of norms and elementwise ops at >= 2048 tokens.
Shapes as sim/gpu_import.h builds them (fp16/bf16; GEMM bytes = 2 (MK + KN + MN); norm and
elementwise bytes = 2 x read + write of T x width). Clocks: datasheet boost clocks (H100 SXM
1980 MHz, A100 SXM 1410 MHz, A40 1740 MHz, Jetson AGX Orin 1300 MHz, Thor 1570 MHz).
Usage: python3 scripts/gpu_kernel_regimes.py"""
import csv, glob, json, os, statistics as st

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "gpu_profiles")
# SMs, DRAM bytes/s (catalog) and the datasheet boost clock (Hz).
GPUS = {"h100": (132, 3350e9, 1.98e9), "a100": (108, 2039e9, 1.41e9), "a40": (84, 696e9, 1.74e9),
        "orin": (16, 204.8e9, 1.3e9), "thor": (20, 273e9, 1.57e9)}


def load():
    rows = []
    for g in ("h100", "a100", "a40"):
        for f in sorted(glob.glob(f"{ROOT}/vidur/data/profiling/compute/{g}/*/*/mlp.csv")):
            for r in csv.DictReader(open(f)):
                T, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
                nh, nkv, E, ff = int(r["n_head"]), int(r["n_kv_head"]), int(r["n_embd"]), int(r["n_expanded_embd"])
                gated = r["use_gated_mlp"] in ("True", "true", "1")
                hd = E // nh

                def add(op, kind, m, n, k):
                    col = f"time_stats.{op}.median"
                    if col in r:
                        rows.append(dict(gpu=g, kind=kind, m=m, n=n, k=k, t=float(r[col]) * 1e-3))
                add("attn_pre_proj", "gemm", T, (nh + 2 * nkv) * hd // tp, E)
                add("attn_post_proj", "gemm", T, E, nh * hd // tp)
                add("mlp_up_proj", "gemm", T, (2 * ff if gated else ff) // tp, E)
                add("mlp_down_proj", "gemm", T, E, ff // tp)
                add("input_layernorm", "norm", T, E, 0)
                add("post_attention_layernorm", "norm", T, E, 0)
                add("mlp_act", "act", T, ff // tp, 0)
                add("add", "add", T, E, 0)
    for g, f in (("orin", "orin_sm87"), ("thor", "thor_sm110")):
        d = json.load(open(f"{ROOT}/apxinf/configs/pi05/{f}_bf16_v2_v3_h10_tactics.json"))
        for r in d["records"]:
            k = r["key"]
            rows.append(dict(gpu=g, kind="gemm", m=k["m"], n=k["n"], k=k["k"], t=r["milliseconds"] * 1e-3))
    merged = {}
    for r in rows:
        merged.setdefault((r["gpu"], r["kind"], r["m"], r["n"], r["k"]), []).append(r)
    out = []
    for v in merged.values():
        r = dict(v[0])
        r["t"] = st.median(x["t"] for x in v)
        m, n, k = r["m"], r["n"], r["k"]
        r["bytes"] = 2 * (m * k + k * n + m * n) if r["kind"] == "gemm" else 2 * m * n * 2
        out.append(r)
    return out


def linfit(xs, ys, ws):
    W = sum(ws)
    mx = sum(w * x for w, x in zip(ws, xs)) / W
    my = sum(w * y for w, y in zip(ws, ys)) / W
    b = sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys)) / sum(w * (x - mx) ** 2 for w, x in zip(ws, xs))
    return my - b * mx, b


def main():
    rs = load()
    print("GEMM time = latency + bytes / bandwidth, per token range (M)\n")
    print("| GPU | M | n | latency us | GB/s | of datasheet bw | median abs err |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for g, (sms, bw, clk) in GPUS.items():
        for lo, hi in ((1, 16), (17, 64), (65, 128), (129, 256), (257, 512)):
            v = [r for r in rs if r["gpu"] == g and r["kind"] == "gemm" and lo <= r["m"] <= hi]
            if len(v) < 3:
                continue
            a, b = linfit([r["bytes"] for r in v], [r["t"] for r in v], [1 / r["t"] ** 2 for r in v])
            err = st.median(abs((a + b * r["bytes"]) / r["t"] - 1) for r in v)
            print(f"| {g} | {lo}-{hi} | {len(v)} | {a * 1e6:.2f} | {1 / b / 1e9:.0f} | {1 / b / bw:.2f} | {100 * err:.1f}% |")
    print("\nNorms and elementwise ops at >= 2048 tokens: median rate\n")
    print("| GPU | op | GB/s | of datasheet bw | bytes per SM per clock |")
    print("|---|---|---:|---:|---:|")
    for g, (sms, bw, clk) in GPUS.items():
        for kind in ("norm", "add", "act"):
            v = [r["bytes"] / r["t"] for r in rs if r["gpu"] == g and r["kind"] == kind and r["m"] >= 2048]
            if v:
                rate = st.median(v)
                print(f"| {g} | {kind} | {rate / 1e9:.0f} | {rate / bw:.2f} | {rate / sms / clk:.2f} |")


if __name__ == "__main__":
    main()
