#!/usr/bin/env bash
# The time-slicing figures the vLLM-Omni-like baseline rests on (issue 45 item 6;
# reports/robion.md): its stage processes time-slice the GPU (no MPS) in slices of the catalog's
# time_slice_us (2000) with context_switch_us (50) of idle GPU at each switch; neither is
# measured on an H100. Capacity (n pi0 + n SmolVLA robots at 98%) of robion_vllm_omni_h100.yaml
# (shaped cost model, as scripts/cosched_grids.sh runs it) over a grid of both, seed 2, beside
# Robion's capacity, so the range of Robion / vLLM-Omni-like they give is read off.
# A simulation: the same on any host. Prints a Markdown table; files in out/cosched_slices/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/cosched_slices
mkdir -p "$out"
ONLY='^$' MODELS=blocks bash "$here/scripts/cosched_grids.sh" > /dev/null  # the scenarios only
base=$here/out/cosched/vllm_omni_blocks.yaml
grep -q "gpu_sharing: blocks$" "$base" || { echo "cosched_slices: no gpu_sharing line in $base" >&2; exit 1; }
cap() {
  local line
  line=$("$vlasim" sweep "$1" --set 'workload.0.count+workload.1.count=1:30' --goal capacity --slo 0.98 -q \
    -o "$2" 2>&1 | grep -m1 '^capacity' || true)
  case "$line" in *" = "*) line=${line##*= }; echo "${line%% *}" ;; *) echo "${line:-?}" ;; esac
}
robion=$(cap "$here/out/cosched/serving_blocks.yaml" "$out/serving")
slices="500 1000 2000 4000 8000"
switches="10 25 50 100 200"
printf '| context switch us \\ time slice us |'; for t in $slices; do printf ' %s |' "$t"; done; echo
printf '|---|'; for t in $slices; do printf -- '---|'; done; echo
for c in $switches; do
  printf '| %s |' "$c"
  for t in $slices; do
    f="$out/omni_${t}_$c.yaml"
    sed "s/gpu_sharing: blocks$/gpu_sharing: {name: blocks, params: {time_slice_us: $t, context_switch_us: $c}}/" "$base" > "$f"
    printf ' %s |' "$(cap "$f" "$out/grid_${t}_$c")"
  done
  echo
done
echo
echo "Robion (serving_blocks.yaml) at the same load: $robion"
