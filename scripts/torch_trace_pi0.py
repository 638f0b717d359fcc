#!/usr/bin/env python3
"""Records a PyTorch profiler trace of a pi0-shaped model, the way a user profiles their own
model for `vlasim import trace` and `vlasim compare --trace` (README: "Check a prediction
against your own PyTorch run").

The model follows a vlasim card's shapes (default models/cards/pi0_tiny.yaml): a ViT per camera
view and a projector (stage "vision"), a Gemma-style decoder over the image tokens (stage
"prefix", keeping its K/V), and the pi0 action expert run `steps` times (stage "action"),
cross-attending to the prefix K/V. Weights are random: time, not accuracy, is measured.

What vlasim reads from the trace:
  - one record_function range per inference ("inference"), repeated `--inferences` times;
  - inside it one range per stage, named after vlasim's stages: "vision", "prefix", "action";
  - with torch.profiler (PyTorch built with Kineto): record_shapes=True gives each op its
    input shapes, and on a GPU each kernel is tied to the op that launched it, so
    `vlasim import trace` can match ops to the card's graph and write a profile.
PyTorch without Kineto (Debian's python3-torch 1.13) falls back to the legacy profiler
(torch.autograd.profiler, use_kineto=False): op names and durations only, stage level.

With --timing-out FILE.json it also times the same inference without the profiler (the
latency a user of eager PyTorch sees: --timing-runs runs, each synchronised) and, on a GPU,
replayed from a CUDA Graph captured once (torch.cuda.CUDAGraph), and writes both as JSON:
{"eager_ms": {"p50", "mean", "min", "runs"}, "graph_ms": {...} or {"error": why}, "torch", ...}.

Usage: torch_trace_pi0.py [--card models/cards/pi0_tiny.yaml] [--device cpu|cuda]
                          [--dtype fp32|bf16|fp16] [--inferences 5] [--warmup 2] [--views 2]
                          [--chunk N] [--steps N] [--threads N] [--timing-out T.json]
                          [--timing-runs 20] -o TRACE.json[.gz]
"""
import argparse
import contextlib
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import yaml


def component(card, type_):
    for c in card["components"]:
        if c["type"] == type_:
            return c
    sys.exit("card has no %s component" % type_)


def rms_norm(x, w):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def attention(q, k, v):
    """q [b, h, L, d], k/v [b, h, S, d]."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(s, dim=-1), v)


def rope(x):
    """Rotary embedding on [b, h, L, d] (half-split form)."""
    d = x.shape[-1]
    pos = torch.arange(x.shape[-2], dtype=torch.float32, device=x.device)
    inv = 1.0 / (10000 ** (torch.arange(0, d // 2, dtype=torch.float32, device=x.device) / (d // 2)))
    ang = torch.outer(pos, inv).to(x.dtype)
    c, s = torch.cos(ang), torch.sin(ang)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class Lin(torch.nn.Linear):
    pass


class ViTBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        w, h, hd = c["width"], c["heads"], c["head_dim"]
        self.h, self.hd = h, hd
        self.n1, self.n2 = torch.nn.LayerNorm(w), torch.nn.LayerNorm(w)
        self.q, self.k, self.v = Lin(w, h * hd), Lin(w, h * hd), Lin(w, h * hd)
        self.o = Lin(h * hd, w)
        self.up, self.down = Lin(w, c["mlp"]), Lin(c["mlp"], w)

    def forward(self, x):  # [views, tokens, width]
        b, t, _ = x.shape
        y = self.n1(x)
        q, k, v = (p(y).view(b, t, self.h, self.hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = attention(q, k, v).transpose(1, 2).reshape(b, t, self.h * self.hd)
        x = x + self.o(a)
        return x + self.down(F.gelu(self.up(self.n2(x)), approximate="tanh"))


class GemmaBlock(torch.nn.Module):
    def __init__(self, c, width):
        super().__init__()
        self.h, self.kvh, self.hd = c["heads"], c["kv_heads"], c["head_dim"]
        self.n1 = torch.nn.Parameter(torch.ones(width))
        self.n2 = torch.nn.Parameter(torch.ones(width))
        self.q = Lin(width, self.h * self.hd, bias=False)
        self.k = Lin(width, self.kvh * self.hd, bias=False)
        self.v = Lin(width, self.kvh * self.hd, bias=False)
        self.o = Lin(self.h * self.hd, width, bias=False)
        self.gate = Lin(width, c["mlp"], bias=False)
        self.up = Lin(width, c["mlp"], bias=False)
        self.down = Lin(c["mlp"], width, bias=False)

    def forward(self, x, kv_prefix=None):
        """x [1, tokens, width]; kv_prefix: (k, v) of the prefix to attend to as well.
        Returns the output and this block's own (k, v)."""
        b, t, _ = x.shape
        y = rms_norm(x, self.n1)
        q = rope(self.q(y).view(b, t, self.h, self.hd).transpose(1, 2))
        k = rope(self.k(y).view(b, t, self.kvh, self.hd).transpose(1, 2))
        v = self.v(y).view(b, t, self.kvh, self.hd).transpose(1, 2)
        own = (k, v)
        if kv_prefix is not None:
            k = torch.cat([kv_prefix[0], k], dim=2)
            v = torch.cat([kv_prefix[1], v], dim=2)
        rep = self.h // self.kvh
        a = attention(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1))
        x = x + self.o(a.transpose(1, 2).reshape(b, t, self.h * self.hd))
        y = rms_norm(x, self.n2)
        return x + self.down(F.gelu(self.gate(y), approximate="tanh") * self.up(y)), own


class Pi0(torch.nn.Module):
    def __init__(self, card):
        super().__init__()
        vit, proj = component(card, "vit"), component(card, "projector")
        dec, ex = component(card, "decoder"), component(card, "expert")
        self.patch, self.img = vit["patch"], vit["image_size"]
        tokens = (self.img // self.patch) ** 2
        self.patch_embed = torch.nn.Conv2d(3, vit["width"], self.patch, self.patch)
        self.pos = torch.nn.Parameter(torch.zeros(tokens, vit["width"]))
        self.vit = torch.nn.ModuleList(ViTBlock(vit) for _ in range(vit["depth"]))
        self.vit_norm = torch.nn.LayerNorm(vit["width"])
        dims = proj["dims"]
        self.proj = torch.nn.ModuleList(Lin(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dec = torch.nn.ModuleList(GemmaBlock(dec, dec["width"]) for _ in range(dec["depth"]))
        self.kv_only_last = dec.get("kv_only_last", False)
        w = ex["width"]
        self.state_proj = Lin(ex["state_dim"], w)
        self.action_in = Lin(ex["action_dim"], w)
        self.time_in, self.time_out = Lin(2 * w, w), Lin(w, w)
        self.ex = torch.nn.ModuleList(GemmaBlock(ex, w) for _ in range(ex["depth"]))
        self.ex_norm = torch.nn.Parameter(torch.ones(w))
        self.action_out = Lin(w, ex["action_dim"])
        self.w = w

    def forward(self, images, state, noise, steps):
        with torch.profiler.record_function("vision"):
            x = self.patch_embed(images).flatten(2).transpose(1, 2) + self.pos
            for blk in self.vit:
                x = blk(x)
            x = self.vit_norm(x)
            for p in self.proj:
                x = p(x)
        with torch.profiler.record_function("prefix"):
            x = x.reshape(1, -1, x.shape[-1])
            kvs = []
            for blk in self.dec:
                x, kv = blk(x)
                kvs.append(kv)
        with torch.profiler.record_function("action"):
            a = noise
            dt = -1.0 / steps
            for s in range(steps):
                t = 1.0 + s * dt
                st = self.state_proj(state)
                emb = torch.full((1, a.shape[1], self.w), t, dtype=a.dtype, device=a.device)
                h = self.time_out(F.silu(self.time_in(torch.cat([self.action_in(a), emb], dim=-1))))
                h = torch.cat([st, h], dim=1)
                for i, blk in enumerate(self.ex):
                    kv = kvs[-1] if self.kv_only_last else kvs[i]
                    h, _ = blk(h, kv)
                v = self.action_out(rms_norm(h, self.ex_norm)[:, 1:])
                a = a + dt * v
        return a


def write_kineto_form(prof, path):
    """The legacy profiler's events as Kineto's JSON: ops ("ns::op" names) as cpu_op with
    "Input Dims", other names (record_function) as user_annotation. Times are the profiler's
    own (us); nothing is added or estimated."""
    ev = []
    for e in prof.function_events:
        op = "::" in e.name
        args = {"Input Dims": [list(s) for s in e.input_shapes]} if op else {}
        ev.append({"ph": "X", "cat": "cpu_op" if op else "user_annotation", "name": e.name, "pid": 0,
                   "tid": e.thread, "ts": e.time_range.start, "dur": e.time_range.end - e.time_range.start,
                   "args": args})
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "record_shapes": 1, "traceEvents": ev}, f)


def stats_ms(times_s):
    ms = [1000.0 * t for t in times_s]
    return {"p50": statistics.median(ms), "mean": statistics.fmean(ms), "min": min(ms), "runs": len(ms)}


def time_runs(fn, runs, sync):
    """Wall time of each of `runs` calls of fn, each ended by sync()."""
    out = []
    for _ in range(runs):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return out


def timing(m, images, state, noise, steps, dev, runs):
    """Eager latency and, on CUDA, CUDA-Graph replay latency of one inference (no profiler)."""
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    res = {"eager_ms": stats_ms(time_runs(lambda: m(images, state, noise, steps), runs, sync))}
    if dev.type != "cuda":
        res["graph_ms"] = {"error": "CUDA Graphs need a CUDA device"}
        return res
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                m(images, state, noise, steps)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            m(images, state, noise, steps)
        g.replay()
        res["graph_ms"] = stats_ms(time_runs(g.replay, runs, sync))
    except Exception as e:  # a capture the model's ops refuse is a result, not a crash
        res["graph_ms"] = {"error": "%s: %s" % (type(e).__name__, e)}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--card", default=os.path.join(os.path.dirname(__file__), "..", "models", "cards", "pi0_tiny.yaml"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--inferences", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--views", type=int)
    ap.add_argument("--chunk", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kineto-form", action="store_true",
                    help="without Kineto: write the legacy profiler's events (with their input shapes) as Kineto "
                         "cpu_op / user_annotation events instead of its own legacy export, which drops the shapes")
    ap.add_argument("--timing-out", help="also time eager and CUDA-Graph inferences without the profiler: JSON here")
    ap.add_argument("--timing-runs", type=int, default=20)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    card = yaml.safe_load(open(a.card))
    d = card["defaults"]
    views, chunk, steps = a.views or d["views"], a.chunk or d["chunk"], a.steps or d["steps"]
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    dev = torch.device(a.device)
    # Built on the device where torch allows it (torch >= 2.0): a 3B-parameter model initialised
    # on the host first would take minutes of CPU time.
    with (dev if hasattr(dev, "__enter__") else contextlib.nullcontext()):
        m = Pi0(card)
    m = m.to(dev, dtype).eval()
    ex = component(card, "expert")
    img = component(card, "vit")["image_size"]
    images = torch.randn(views, 3, img, img, device=dev, dtype=dtype)
    state = torch.randn(1, ex.get("state_tokens", 1), ex["state_dim"], device=dev, dtype=dtype)
    noise = torch.randn(1, chunk, ex["action_dim"], device=dev, dtype=dtype)

    def run():
        with torch.profiler.record_function("inference"):
            m(images, state, noise, steps)
        if dev.type == "cuda":
            torch.cuda.synchronize()

    with torch.no_grad():
        for _ in range(a.warmup):
            run()
        kineto = torch.autograd.profiler.kineto_available()
        if kineto:
            acts = [torch.profiler.ProfilerActivity.CPU]
            if dev.type == "cuda":
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            prof = torch.profiler.profile(activities=acts, record_shapes=True)
        else:  # Kineto-less build: the legacy profiler (names and durations only)
            prof = torch.autograd.profiler.profile(record_shapes=True, use_kineto=False)
        with prof:
            for _ in range(a.inferences):
                run()
        if a.timing_out:
            t = timing(m, images, state, noise, steps, dev, a.timing_runs)
            t.update({"torch": torch.__version__, "device": torch.cuda.get_device_name(dev) if dev.type == "cuda"
                      else "cpu", "dtype": a.dtype, "card": card["name"], "views": views, "chunk": chunk,
                      "steps": steps})
            with open(a.timing_out, "w") as f:
                json.dump(t, f, indent=1)
            print("timing: eager p50 %.3f ms, graph %s" % (t["eager_ms"]["p50"], "p50 %.3f ms" % t["graph_ms"]["p50"]
                  if "p50" in t["graph_ms"] else t["graph_ms"]["error"]))
    out = a.out[:-3] if a.out.endswith(".gz") else a.out
    if a.kineto_form and not kineto:
        write_kineto_form(prof, out)
    else:
        prof.export_chrome_trace(out)
    if out != a.out:
        with open(out, "rb") as f, gzip.GzipFile(a.out, "wb", compresslevel=9, mtime=0) as g:
            shutil.copyfileobj(f, g)
        os.remove(out)
    print("wrote %s (%s%s profiler, torch %s, %s %s, %d inferences of %s: %d views, chunk %d, %d steps)"
          % (a.out, "Kineto" if kineto else "legacy", " in Kineto form" if a.kineto_form and not kineto else "",
             torch.__version__, a.device, a.dtype, a.inferences,
             card["name"], views, chunk, steps))


if __name__ == "__main__":
    main()
