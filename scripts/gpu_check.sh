#!/usr/bin/env bash
# The GPU check (issues 12, 30, 42) in one command on a lent GPU machine, from a kit built here
# by scripts/gpu_kit.sh (that machine has a driver, CUDA 13 and PyTorch, none of vlasim's Debian
# dependencies):
#   scripts/gpu_check.sh --kit out/gpu_kit.tar.gz   # or a kit folder; results in $OUT
#   scripts/gpu_check.sh                            # builds the kit here first (out/gpu_kit)
# Steps, most important first, each under its own timeout and all within GPU_CHECK_BUDGET_S
# (default 450 s; a step that would start with under 20 s left is skipped and says so):
#   device     nvidia-smi: name, driver, memory, clocks
#   tests      the CUDA tests (every op kind of pi0_tiny against the float64 reference)
#   bench      bench_cuda: pi0 bf16/fp32, eager and graph replay (issue 12's target)
#   kernel     `vlasim compare` of scenarios/gpu_check/pi0.yaml on the cuda executor, predicted
#              by the kernel model alone (held out: no H200 in its fit)
#   torch      the same pi0 in PyTorch (scripts/torch_trace_pi0.py): eager and CUDA-Graph
#              latency without the profiler, and a Kineto trace
#   torch_sim  pi0_torch.yaml simulated eager and with graph replay (kernel model), beside them
#   trace      `vlasim compare --trace` of pi0_torch.yaml against that trace
#   calibrate  `vlasim calibrate` of pi0 and pi0_split on the cuda executor (a device profile)
#   profiled   `vlasim compare` of pi0 and pi0_split from that profile
#   two_stream pi0_2s and pi0_split_2s (issues 30, 45) from the profile, blocks measured against
#              predicted, fluid and blocks_v1 (issue 30's) predicted beside
# $OUT (default out/gpu_check) receives at most 8 files: gpu_executor.md (the report, also
# appended to reports/gpu_executor.md when the check runs in a checkout), steps.tsv (each
# step's exit status and seconds), device.txt, torch_timing.json and gpu_check.tar.gz (every
# other file). Exit 0 when every step passed, else 1.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kit=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --kit) kit=${2:?--kit needs a kit folder or .tar.gz}; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (usage: scripts/gpu_check.sh [--kit KIT])" >&2; exit 2 ;;
  esac
done
out=${OUT:-$here/out/gpu_check}
mkdir -p "$out"
budget=${GPU_CHECK_BUDGET_S:-450}
start=$SECONDS
if [[ -z $kit ]]; then
  kit=$here/out/gpu_kit
  bash "$here/scripts/gpu_kit.sh" "$kit" || exit 1
  start=$SECONDS  # the budget is the check's, not the build's
fi
if [[ -f $kit && $kit == *.tar.gz ]]; then
  unpack=$(mktemp -d "${TMPDIR:-/tmp}/vlasim-kit.XXXXXX")
  tar -C "$unpack" -xzf "$kit" || { echo "gpu_check: cannot unpack $kit" >&2; exit 1; }
  kit=$(find "$unpack" -mindepth 2 -maxdepth 2 -name env.sh -printf '%h\n' | head -1)
fi
[[ -f $kit/env.sh ]] || { echo "gpu_check: $kit is not a kit from scripts/gpu_kit.sh (no env.sh)" >&2; exit 2; }
kit=$(cd "$kit" && pwd)
# shellcheck source=/dev/null
. "$kit/env.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/vlasim-gpu-check.XXXXXX")
trap 'rm -rf "$work" ${unpack:+"$unpack"}' EXIT   # everything worth keeping is archived in $OUT
printf 'step\texit\tseconds\tnote\n' > "$out/steps.tsv"

# step NAME TIMEOUT CMD...: runs CMD (output in $work/NAME.txt) under min(TIMEOUT, what is left
# of the budget less 20 s); records its exit status (124: timed out; "skipped": no time left).
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - (SECONDS - start) - 20)) t0=$SECONDS rc
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    printf '%s\tskipped\t0\tno time left in the %s s budget\n' "$name" "$budget" >> "$out/steps.tsv"
    echo "== $name: skipped (budget spent)"
    return 1
  fi
  echo "== [$((SECONDS - start)) s] $name (at most $limit s)"
  # Through bash, so that CMD may be one of this script's (exported) functions.
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" > "$work/$name.txt" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$( ((rc == 124 || rc == 137)) && echo "timed out after $limit s")" \
    >> "$out/steps.tsv"
  tail -3 "$work/$name.txt" | sed 's/^/   /'
  return $rc
}

device_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,clocks.max.mem,power.limit \
    --format=csv || return 1
  nvidia-smi -q -d CLOCK,PERFORMANCE | head -60
}
export -f device_info
step device 20 device_info
cp "$work/device.txt" "$out/device.txt"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in
  *H200*) entry=h200-sxm ;; *H100*) entry=h100-sxm ;; *A100*) entry=a100-sxm-80gb ;; *4090*) entry=rtx4090 ;;
  *) entry=h200-sxm ;;
esac
echo "== GPU: ${gpu:-none found}; catalog entry $entry; kit $kit; cuBLASLt ${VLASIM_KIT_CUBLAS_DIR:-not found}"
for f in pi0 pi0_split pi0_2s pi0_split_2s pi0_torch; do
  sed -e "s/catalog: h200-sxm/catalog: $entry/" "$kit/scenarios/gpu_check/$f.yaml" > "$work/$f.yaml"
done
sed -e "s/^      graph_capture: false$/      graph_capture: true/" "$work/pi0_torch.yaml" > "$work/pi0_torch_graph.yaml"

step tests 120 cuda_probe_test --gtest_output="json:$work/cuda_tests.json"
step bench 120 bench_cuda --benchmark_format=json --benchmark_out="$work/bench_cuda.json" --benchmark_out_format=json
step kernel 120 vlasim compare "$work/pi0.yaml" -q -o "$work/compare_kernel"
py=$(command -v python3 || echo python3)
step torch 150 "$py" "$kit/scripts/torch_trace_pi0.py" --card "$VLASIM_DATA_DIR/cards/pi0.yaml" --device cuda \
  --dtype bf16 --views 2 --chunk 50 --steps 10 --inferences 5 --warmup 3 --timing-runs 20 \
  --timing-out "$work/torch_timing.json" -o "$work/torch_pi0.json.gz"
torch_sim() {
  vlasim simulate "$work/pi0_torch.yaml" -q -o "$work/torch_sim_eager" &&
    vlasim simulate "$work/pi0_torch_graph.yaml" -q -o "$work/torch_sim_graph"
}
export -f torch_sim
export work
step torch_sim 60 torch_sim
[[ -f $work/torch_pi0.json.gz ]] &&
  step trace 60 vlasim compare "$work/pi0_torch.yaml" --trace "$work/torch_pi0.json.gz" -q -o "$work/compare_trace"
step calibrate 150 vlasim calibrate "$work/pi0.yaml" "$work/pi0_split.yaml" --device "$entry" --executor cuda \
  --grid none --reps 5 -q -o "$work/gpu_profile.json"
for sc in pi0 pi0_split; do
  [[ -f $work/gpu_profile.json ]] &&
    step "profiled_$sc" 60 vlasim --profile "$work/gpu_profile.json" compare "$work/$sc.yaml" -q -o "$work/compare_profiled_$sc"
done
for sc in pi0_2s pi0_split_2s; do
  [[ -f $work/gpu_profile.json ]] || continue
  step "two_stream_$sc" 60 vlasim --profile "$work/gpu_profile.json" compare "$work/$sc.yaml" -q -o "$work/compare_two_stream_$sc"
  for alt in fluid blocks_v1; do  # the models the measurement is to tell apart from blocks (issue 45)
    sed -e "s/^      graph_capture: true$/      graph_capture: true\n      gpu_sharing: $alt/" "$work/$sc.yaml" > "$work/${sc}_$alt.yaml"
    step "${alt}_$sc" 30 vlasim --profile "$work/gpu_profile.json" simulate "$work/${sc}_$alt.yaml" -q -o "$work/${alt}_$sc"
  done
done
[[ -f $work/torch_timing.json ]] && cp "$work/torch_timing.json" "$out/"

python3 "$here/scripts/gpu_check_report.py" "$work" "$out/steps.tsv" "$out/gpu_executor.md" "$gpu" "$entry" \
  > "$work/report.txt" 2>&1 || { cat "$work/report.txt"; echo "gpu_check: the report could not be written" >&2; }
cat "$out/gpu_executor.md" 2>/dev/null | head -80
# Into the checkout's report too, when there is one (the kit's own copy of this script has none).
if [[ -d $here/reports && -f $out/gpu_executor.md && -n $gpu ]]; then
  { [[ -f $here/reports/gpu_executor.md ]] || echo "# CUDA executor on a GPU (scripts/gpu_check.sh)"
    echo; tail -n +2 "$out/gpu_executor.md"; } >> "$here/reports/gpu_executor.md"
fi
tar -C "$work" -czf "$out/gpu_check.tar.gz" . 2>/dev/null
failed=$(awk -F'\t' 'NR > 1 && $2 != 0' "$out/steps.tsv" | wc -l)
echo "gpu_check: $failed step(s) did not pass, $((SECONDS - start)) s (steps.tsv); results in $out"
((failed == 0))
