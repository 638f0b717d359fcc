#!/usr/bin/env bash
# Device check of the CUDA executor (issue 12), for a session lent a GPU machine: builds the
# CUDA parts from this tree (Release, sm_90 + PTX), runs the CUDA tests (every op kind of
# pi0_tiny against the float64 reference, fp32 / bf16 / every graph pass) and the pi0
# benchmark (2 views, empty prompt, chunk 63, 10 steps), and writes reports/gpu_executor.md
# with the device, the tests' errors and the timings. Its outputs also go to $OUT when set
# (the device tool's folder that comes back).
#   scripts/gpu_check.sh            # on the GPU machine, from the repository root
# Also `vlasim compare` of pi0 (2 views) on the GPU present: GPU streams run on the cuda
# executor, a CUDA stream each (a captured CUDA Graph per segment where the device has
# graph_capture), predicted by the shaped model; then `vlasim calibrate` of the GPU (every op of
# pi0, no grid: its shapes are all the compares need; on the whole GPU and on the SMs of a two-stream split, each limit a
# green context) and `vlasim compare` of pi0 whole and split, predicted from that profile; and
# the two streams at once (issue 30: frames back to back, so a VLM segment and an action-expert
# segment run concurrently), without and with the SM split, measured against predicted under
# the `blocks` GPU sharing model, `fluid` predicted beside.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build-gpu}
out=${OUT:-$here/out/gpu_check}
mkdir -p "$out"
start=$SECONDS
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
  --format=csv > "$out/device.csv" || echo "no nvidia-smi" > "$out/device.csv"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVLASIM_WITH_CUDA=ON -DVLASIM_BUILD_TESTS=ON \
      -DVLASIM_BUILD_BENCHMARKS=ON > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target cuda_probe_test bench_cuda vlasim > "$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log"; exit 1; }
built=$SECONDS
set +e
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$build/tests/cuda/cuda_probe_test" --gtest_output="json:$out/cuda_tests.json" \
  > "$out/cuda_tests.txt" 2>&1
tests_rc=$?
"$build/benchmarks/executors/bench_cuda" --benchmark_format=json --benchmark_out="$out/bench_cuda.json" \
  --benchmark_out_format=json > "$out/bench_cuda.txt" 2>&1
bench_rc=$?
# pi0 2 views on the GPU present (the realtime scenario retargeted): predicted (shaped model,
# graph replay off: the executor launches each kernel) beside measured by `vlasim compare`.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in *H200*) entry=h200-sxm ;; *H100*) entry=h100-sxm ;; *A100*) entry=a100-sxm-80gb ;; *) entry=rtx4090 ;; esac
sed -e "s/catalog: rtx4090/catalog: $entry/" -e "s/duration_s: 10/duration_s: 3/" \
    -e "s/graph_capture: true/graph_capture: false/" -e "s/^  queue: \(.*\)$/  queue: \1\n  cost_model: shaped/" \
    "$here/scenarios/systems/realtime_pi0_4090.yaml" > "$out/pi0_gpu.yaml"
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 timeout 240 "$build/vlasim" compare "$out/pi0_gpu.yaml" -q -o "$out/compare" \
  > "$out/compare.txt" 2>&1
compare_rc=$?
cp "$out/compare/compare.md" "$out/compare.md" 2>/dev/null || true
# The two-stream SM split: the VLM on 96 SMs from the GPU's front, the action expert on 32 from
# its end (green contexts; no SM shared).
sed -e "s/streams: \[{name: vlm}, {name: ae}\]/streams: [{name: vlm, sms: 96}, {name: ae, sms: 32}]/" \
    "$out/pi0_gpu.yaml" > "$out/pi0_split.yaml"
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 timeout 240 "$build/vlasim" calibrate "$out/pi0_gpu.yaml" "$out/pi0_split.yaml" \
  --device "$entry" --executor cuda --grid none --reps 5 -q -o "$out/gpu_profile.json" > "$out/calibrate.txt" 2>&1
calibrate_rc=$?
for sc in pi0_gpu pi0_split; do
  SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 timeout 150 "$build/vlasim" --profile "$out/gpu_profile.json" compare "$out/$sc.yaml" \
    -q -o "$out/compare_profiled_$sc" > "$out/compare_profiled_$sc.txt" 2>&1
  echo $? > "$out/compare_profiled_$sc.rc"
  cp "$out/compare_profiled_$sc/compare.md" "$out/compare_profiled_$sc.md" 2>/dev/null || true
done
# Two streams at once (issue 30): pi0 asked for frames faster than it runs (60 Hz, two in flight),
# so frame t+1's VLM segment runs beside frame t's action-expert segment, without an SM limit
# and with the 96/32 split (green contexts), on the cuda executor: measured against predicted
# from the GPU profile under `gpu_sharing: blocks` (the default), with `fluid` predicted beside.
for sc in pi0_gpu pi0_split; do
  sed -e "s/rate_hz: 30, jitter_ms: 0.5, deadline_ms: 33.3, duration_s: 3/rate_hz: 60, jitter_ms: 0.5, deadline_ms: 1000, duration_s: 1/" \
      "$out/$sc.yaml" > "$out/${sc}_2s.yaml"
  grep -q "rate_hz: 60" "$out/${sc}_2s.yaml" || echo "gpu_check: could not saturate $sc" >&2
  sed -e "s/^      graph_capture: false$/      graph_capture: false\n      gpu_sharing: fluid/" "$out/${sc}_2s.yaml" > "$out/${sc}_2s_fluid.yaml"
  SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 timeout 120 "$build/vlasim" --profile "$out/gpu_profile.json" compare "$out/${sc}_2s.yaml" \
    -q -o "$out/compare_2s_$sc" > "$out/compare_2s_$sc.txt" 2>&1
  echo $? > "$out/compare_2s_$sc.rc"
  cp "$out/compare_2s_$sc/compare.md" "$out/compare_2s_$sc.md" 2>/dev/null || true
  SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 timeout 60 "$build/vlasim" --profile "$out/gpu_profile.json" simulate \
    "$out/${sc}_2s_fluid.yaml" -q -o "$out/fluid_2s_$sc" > "$out/fluid_2s_$sc.txt" 2>&1 || true
done
set -e
python3 - "$out" "$here/reports/gpu_executor.md" "$tests_rc" "$bench_rc" "$((built - start))" "$((SECONDS - built))" "$compare_rc" "$calibrate_rc" <<'PY'
import json, sys, datetime, os
out, report, trc, brc, build_s, run_s, crc, calrc = sys.argv[1:9]
dev = open(os.path.join(out, "device.csv")).read().strip()
lines = [f"## {datetime.datetime.utcnow():%Y-%m-%dT%H:%MZ}", "", "```", dev, "```", "",
         f"Build {build_s} s, tests and benchmark {run_s} s; tests exit {trc}, benchmark exit {brc}.", ""]
try:
    t = json.load(open(os.path.join(out, "cuda_tests.json")))
    lines += ["| test | result | errors per stage |", "|---|---|---|"]
    for suite in t.get("testsuites", []):
        for c in suite.get("testsuite", []):
            props = ", ".join(f"{k} {v}" for k, v in c.items() if k.endswith(("_rel_err", "_ms", "_gbs")))
            res = "failed" if c.get("failures") else c.get("result", "")
            lines.append(f"| {suite['name']}.{c['name']} | {res} | {props} |")
except Exception as e:
    lines.append(f"(no test results: {e})")
lines.append("")
try:
    b = json.load(open(os.path.join(out, "bench_cuda.json")))
    lines += ["| benchmark | ms | best ms | GFLOP/s | per stage ms |", "|---|---|---|---|---|"]
    for r in b["benchmarks"]:
        if r.get("error_occurred"):
            lines.append(f"| {r['name']} | skipped: {r.get('error_message','')} | | | |")
            continue
        st = ", ".join(f"{k[:-9]} {r[k]:.2f}" for k in r if k.endswith("_stage_ms"))
        lines.append(f"| {r['name']} | {r['ms']:.2f} | {r['best_ms']:.2f} | {r['GFLOP/s']:.0f} | {st} |")
    lines += ["", "Target (issue 12): pi0 2 views, chunk 63, 10 steps, bf16, graph replay (BM_CudaPi0Bf16Graph) <= 12 ms on an H200."]
except Exception as e:
    lines.append(f"(no benchmark results: {e})")
lines += ["", f"`vlasim compare` of pi0 2 views on this GPU (exit {crc}):", ""]
cmp = os.path.join(out, "compare.md")
lines += open(cmp).read().splitlines() if os.path.exists(cmp) else [open(os.path.join(out, "compare.txt")).read()[-2000:]]
lines += ["", f"`vlasim calibrate` of this GPU (exit {calrc}): " + open(os.path.join(out, "calibrate.txt")).read()[-600:]]
for sc, what in (("pi0_gpu", "whole GPU, both streams"), ("pi0_split", "VLM on 96 SMs, action expert on 32")):
    rc = open(os.path.join(out, f"compare_profiled_{sc}.rc")).read().strip()
    lines += ["", f"`vlasim compare` from the GPU profile, {what} (exit {rc}):", ""]
    md = os.path.join(out, f"compare_profiled_{sc}.md")
    lines += open(md).read().splitlines() if os.path.exists(md) else [open(os.path.join(out, f"compare_profiled_{sc}.txt")).read()[-2000:]]
lines += ["", "Target (issue 12): after calibration, per-stage error median <= 5%, e2e p50 within 5%."]
for sc, what in (("pi0_gpu", "both streams on every SM"), ("pi0_split", "VLM on 96 SMs, action expert on 32 (green contexts)")):
    rc = open(os.path.join(out, f"compare_2s_{sc}.rc")).read().strip()
    lines += ["", f"Two streams at once (issue 30), frames back to back, {what}: `vlasim compare` from the GPU profile, "
              f"predicted under gpu_sharing blocks (exit {rc}):", ""]
    md = os.path.join(out, f"compare_2s_{sc}.md")
    lines += open(md).read().splitlines() if os.path.exists(md) else [open(os.path.join(out, f"compare_2s_{sc}.txt")).read()[-2000:]]
    try:
        r = json.load(open(os.path.join(out, f"fluid_2s_{sc}", "report.json")))
        lines += ["", f"Predicted under gpu_sharing fluid instead: throughput {r['throughput_hz']:.1f} Hz, "
                  f"latency p50 {1000 * r['latency']['p50_s']:.2f} ms."]
    except Exception as e:
        lines += ["", f"(no fluid prediction: {e})"]
head = "# CUDA executor on a GPU (scripts/gpu_check.sh)\n\n"
old = open(report).read() if os.path.exists(report) else head
if not old.startswith(head): old = head + old
open(report, "w").write(old + "\n".join(lines) + "\n")
open(os.path.join(out, "gpu_executor.md"), "w").write(head + "\n".join(lines) + "\n")
print("\n".join(lines))
PY
exit $(( tests_rc != 0 ))
