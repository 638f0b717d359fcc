#!/usr/bin/env bash
# Outside test of the GPU cost models against the end-to-end pi0.5 latencies ApxInf's README
# publishes (test data, never fitted; reports/validate_papers.md): pi0.5 bf16, two 224x224
# views, 10 prompt tokens, chunk 10, 10 flow steps, batch 1, CUDA Graph replay, on an RTX 4090,
# a Jetson AGX Thor and a Jetson AGX Orin. Each cost model predicts the sum of the ops of one
# request (`vlasim roofline`), with the card's graph and with ApxInf's fusions (Q|K|V and
# gate|up GEMMs, epilogues, RMSNorm and RoPE folds); `kernel+measured` gives the kernel model
# the GPU's own measured GEMM times (ApxInf's kernel tuning reports, vendored in
# data/gpu_profiles: kernel-level data, not the end-to-end figures).
# Usage: scripts/apxinf_e2e.sh [BUILD_DIR] (default build). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
vlasim="$(pwd)/$build/vlasim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=data/gpu_profiles/apxinf/configs/pi05
# gpu|tactics file|published P50 ms (ApxInf README, commit fbe4b09)
gpus="rtx4090|rtx4090_sm89_bf16_v2_v3_h10_tactics.json|36.77
jetson-agx-thor|thor_sm110_bf16_v2_v3_h10_tactics.json|72.454
jetson-agx-orin-64gb|orin_sm87_bf16_v2_v3_h10_tactics.json|165.665"
echo "| GPU | published | graph | roofline | shaped | kernel | kernel+measured | GEMMs measured |"
echo "|---|---:|---|---:|---:|---:|---:|---:|"
while IFS='|' read -r gpu file pub; do
  "$vlasim" import apxinf "$d/$file" --device "$gpu" -o "$tmp/$gpu.json" -q
  for graph in card fused; do
    passes=""
    [ "$graph" = fused ] && passes="    passes: [qkv_fuse, gateup_fuse, epilogue_fuse, rmsnorm_fold, rope_fold]"
    row="| $gpu | $pub ms | $graph |"
    for model in roofline shaped kernel "{name: kernel, params: {measured: $gpu.json}}"; do
      cat > "$tmp/s.yaml" <<YAML
name: pi05-$gpu-apxinf
seed: 1
hardware:
  devices:
    - {name: gpu0, catalog: $gpu, graph_capture: true}
models:
  - name: pi05
    card: pi05
    views: 2
    prompt: 10
    chunk: 10
    steps: 10
    dtype: bf16
$passes
    placement:
      - {stages: [vision, prefix, action], device: gpu0}
workload:
  - {name: robot, model: pi05, count: 1, rate_hz: 1, deadline_ms: 1000, duration_s: 2}
policies:
  queue: fifo
  pipeline: serial
  cost_model: $model
YAML
      "$vlasim" roofline "$tmp/s.yaml" -o "$tmp/r" -q
      # roofline.csv's columns by their header names.
      cols='NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }'
      row+=$(awk -F, -v pub="$pub" "$cols"' { s += $c["seconds"] }
        END { printf " %.2f (%+.1f%%) |", s * 1e3, 100 * (s * 1e3 / pub - 1) }' "$tmp/r/roofline.csv")
      measured=$(awk -F, "$cols"' $c["class"] == "gemm" { m += $c["measured_ops"]; n += $c["ops"] }
        END { printf "%d of %d", m, n }' "$tmp/r/roofline.csv")
    done
    echo "$row $measured |"
  done
done <<< "$gpus"
