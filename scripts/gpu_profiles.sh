#!/usr/bin/env bash
# Rebuilds every table derived from the vendored measured GPU kernel times
# (data/gpu_profiles/README.md): one vlasim profile per GPU (vlasim import) under
# BUILD_DIR/gpu_profiles/, and reports/gpu_cost_model.md and .csv (vlasim gpu-eval, leave one
# GPU out), and sim/kernel_fit/kernel_model.csv (the kernel cost model's parameters, fitted on
# every GPU). Usage: scripts/gpu_profiles.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
vlasim="$build/vlasim"
out="$build/gpu_profiles"
mkdir -p "$out"
d=data/gpu_profiles
for pair in h100:h100-sxm a100:a100-sxm-80gb a40:a40; do
  "$vlasim" import vidur "$d/vidur/data/profiling/compute/${pair%%:*}" --device "${pair#*:}" -o "$out/vidur-${pair#*:}.json"
done
"$vlasim" import apxinf "$d/apxinf/configs/pi05/orin_sm87_bf16_v2_v3_h10_tactics.json" \
  --device jetson-agx-orin-64gb -o "$out/apxinf-jetson-agx-orin-64gb.json"
"$vlasim" import apxinf "$d/apxinf/configs/pi05/thor_sm110_bf16_v2_v3_h10_tactics.json" \
  --device jetson-agx-thor -o "$out/apxinf-jetson-agx-thor.json"
"$vlasim" import apxinf "$d/apxinf/configs/pi05/rtx4090_sm89_bf16_v2_v3_h10_tactics.json" \
  --device rtx4090 -o "$out/apxinf-rtx4090.json"
"$vlasim" gpu-eval "$d" -o reports --fit-out sim/kernel_fit/kernel_model.csv
# The software stack model on real Kineto traces, each GPU left out (reports/gpu_stack.md), and
# the stack fitted on every trace as the `stack` registry's entries read it.
"$vlasim" gpu-eval "$d" --traces data/gpu_traces -o reports --stack-out sim/kernel_fit/stack_model.csv
