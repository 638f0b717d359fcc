#!/usr/bin/env python3
"""Measured regimes of the vendored GPU kernel times (data/gpu_profiles), for
reports/gpu_cost_model_notes.md: per GPU and token range, the GEMM time fitted as
latency + bytes / bandwidth (weighted least squares on relative error), and the rate
(bytes per second, per SM per clock) of norms and elementwise ops at >= 2048 tokens.
Shapes as sim/measured/gpu_import.h builds them (fp16/bf16; GEMM bytes = 2 (MK + KN + MN); norm and
elementwise bytes = 2 x read + write of T x width). Clocks: datasheet boost clocks (H100 SXM
1980 MHz, A100 SXM 1410 MHz, A40 1740 MHz, Jetson AGX Orin 1300 MHz, Thor 1570 MHz).

With --forms: norm and elementwise forms compared leave one GPU out (fit on two of H100, A100,
A40 by log-error least squares, each GPU weighted equally; predict the third), the error of the
shipped form by token range, and the per-GPU rate at large token counts. Forms: "dram" t = L +
bytes / (b bw); "sm" t = L + ceil(rows / SMs) row_bytes / r + bytes / (copy bw) (copy = the
catalog's cited streaming-copy fraction kernels.memory: H100 0.87, A100 0.81, A40 0.85); "sm x
clock" the same with r per SM per clock; "per kernel": separate L and r for each kernel (RMSNorm,
LayerNorm; add, SiLU-and-mul, GELU).
Usage: python3 scripts/gpu_kernel_regimes.py [--forms]"""
import csv, glob, json, math, os, statistics as st, sys

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


COPY = {"h100": 0.87, "a100": 0.81, "a40": 0.85}  # catalog kernels.memory (cited copy fractions)


def vector_ops():
    """Norm and elementwise samples as vlasim import builds them (equal shapes merged at the median)."""
    m = {}
    for g in ("h100", "a100", "a40"):
        for f in sorted(glob.glob(f"{ROOT}/vidur/data/profiling/compute/{g}/*/*/mlp.csv")):
            for r in csv.DictReader(open(f)):
                T, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
                E, ff = int(r["n_embd"]), int(r["n_expanded_embd"])
                gated = r["use_gated_mlp"] in ("True", "true", "1")
                for op, cls, fn, w, inp in (("input_layernorm", "norm", "rms" if gated else "ln", E, 1),
                                            ("post_attention_layernorm", "norm", "rms" if gated else "ln", E, 1),
                                            ("mlp_act", "elementwise", "silu" if gated else "gelu", ff // tp, 2 if gated else 1),
                                            ("add", "elementwise", "add", E, 2)):
                    c = f"time_stats.{op}.median"
                    if r.get(c):
                        m.setdefault((g, cls, fn, T, w, inp), []).append(float(r[c]) * 1e-3)
    out = []
    for (g, cls, fn, T, w, inp), v in m.items():
        weights = w * 2 * (2 if fn == "ln" else 1) if cls == "norm" else 0
        out.append(dict(gpu=g, cls=cls, fn=fn, rows=T, bytes=T * w * 2 * (inp + 1) + weights, t=st.median(v)))
    return out


def nelder_mead(fn, x0, iters=400):
    n = len(x0)
    s = [list(x0)] + [[x0[j] + (0.5 if j == i else 0) for j in range(n)] for i in range(n)]
    v = [fn(x) for x in s]
    for _ in range(iters):
        o = sorted(range(n + 1), key=lambda i: v[i])
        s, v = [s[i] for i in o], [v[i] for i in o]
        c = [sum(s[i][j] for i in range(n)) / n for j in range(n)]
        at = lambda a: [c[j] + a * (s[n][j] - c[j]) for j in range(n)]
        xr = at(-1)
        fr = fn(xr)
        if fr < v[0]:
            xe = at(-2)
            fe = fn(xe)
            s[n], v[n] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < v[n - 1]:
            s[n], v[n] = xr, fr
        else:
            xc = at(0.5)
            fc = fn(xc)
            if fc < v[n]:
                s[n], v[n] = xc, fc
            else:
                for i in range(1, n + 1):
                    s[i] = [s[0][j] + 0.5 * (s[i][j] - s[0][j]) for j in range(n)]
                    v[i] = fn(s[i])
    return s[min(range(n + 1), key=lambda i: v[i])]


def form_dram(r, g, x):
    sms, bw, clk = GPUS[g]
    return math.exp(x[0]) * 1e-6 + r["bytes"] / (math.exp(x[1]) * bw)


def form_sm(clock):
    def f(r, g, x):
        sms, bw, clk = GPUS[g]
        rate = math.exp(x[1]) * (clk if clock else 1e9)
        return (math.exp(x[0]) * 1e-6 + math.ceil(r["rows"] / sms) * (r["bytes"] / r["rows"]) / rate
                + r["bytes"] / (COPY[g] * bw))
    return f


def per_kernel(form, n):
    fns = {}

    def f(r, g, x):
        i = fns.setdefault(r["fn"], len(fns))
        return form(r, g, x[i * n:(i + 1) * n])
    return f


def held_out(rows, form, x0):
    """{gpu: (median |err|, time-weighted, bias, errors, samples)}, each GPU predicted by a fit on the others."""
    out = {}
    for held in ("h100", "a100", "a40"):
        fit = [r for r in rows if r["gpu"] != held]
        count = {}
        for r in fit:
            count[r["gpu"]] = count.get(r["gpu"], 0) + 1

        def loss(x):
            s = 0
            for r in fit:
                p = form(r, r["gpu"], x)
                if not p > 0:
                    return 1e30
                s += math.log(p / r["t"]) ** 2 / count[r["gpu"]]
            return s
        x = nelder_mead(loss, nelder_mead(loss, x0))
        test = [r for r in rows if r["gpu"] == held]
        errs = [form(r, held, x) / r["t"] - 1 for r in test]
        tw = sum(abs(form(r, held, x) - r["t"]) for r in test) / sum(r["t"] for r in test)
        out[held] = (st.median(abs(e) for e in errs), tw, st.median(errs), errs, test)
    return out


def forms():
    rows = vector_ops()
    for cls in ("norm", "elementwise"):
        pts = [r for r in rows if r["cls"] == cls]
        nk = len(set(r["fn"] for r in pts))
        print(f"\n{cls}: held-out median |err| / time-weighted / bias\n")
        print("| form | H100 | A100 | A40 |\n|---|---|---|---|")
        x_dram, x_sm, x_clk = [math.log(4), math.log(0.6)], [math.log(4), math.log(10)], [math.log(4), math.log(5)]
        results = {}
        for name, form, x0 in (("dram (shipped before)", form_dram, x_dram),
                               ("sm", form_sm(False), x_sm),
                               ("sm, per kernel", per_kernel(form_sm(False), 2), x_sm * nk),
                               ("sm x clock", form_sm(True), x_clk),
                               ("sm x clock, per kernel", per_kernel(form_sm(True), 2), x_clk * nk)):
            res = held_out(pts, form, x0)
            results[name] = res
            print(f"| {name} | " + " | ".join(
                f"{100 * res[g][0]:.1f} / {100 * res[g][1]:.1f} / {100 * res[g][2]:+.1f}" for g in ("h100", "a100", "a40")) + " |")
        for name in ("dram (shipped before)", "sm"):
            print(f"\n{cls}, form {name}: held-out median signed error by token range and kernel\n")
            fns = sorted(set(r["fn"] for r in pts))
            print("| GPU | tokens | " + " | ".join(fns) + " |\n|---|---|" + "---|" * len(fns))
            for g in ("h100", "a100", "a40"):
                errs, test = results[name][g][3], results[name][g][4]
                for lo, hi in ((1, 64), (65, 256), (257, 1024), (1025, 4096)):
                    cells = []
                    for fn in fns:
                        e = [x for x, r in zip(errs, test) if lo <= r["rows"] <= hi and r["fn"] == fn]
                        cells.append(f"{100 * st.median(e):+.0f}%" if e else "-")
                    print(f"| {g} | {lo}-{hi} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    forms() if "--forms" in sys.argv[1:] else main()
