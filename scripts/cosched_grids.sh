#!/usr/bin/env bash
# Robion's engines under the GPU sharing models (issues 30, 45; reports/robion.md): capacity
# (robots at 98% deadline attainment) of every engine, each scenario as shipped with
# `cost_model: shaped`, under `gpu_sharing: fluid` (the model before issue 30), `blocks_v1`
# (issue 30's: kernels take SMs in launch order, partitions isolate, processes time-slice unless
# MPS) and `blocks` (issue 45's, the default: blocks not preempted, wave tails, memory-bound
# kernels on fewer SMs, DRAM max-min fair, L2 shared, a lockstep limiting its first stream only).
# SEEDS="2 3 4 5 6" runs each grid once per seed and prints the mean and the range;
# MODELS="fluid blocks" restricts the sharing models (default: all three). Engines and the choices SYSTEMS.md leaves open, each run:
# - serving: Robion as shipped (locksteps, SM table, the keep-previous-split guard);
#   serving_noguard: the same without the guard; serving_nolimit: the two streams without any
#   SM limit (no lockstep): SYSTEMS.md's ablation;
# - monolithic: the whole model per batch on the GPU's one stream (one process);
#   monolithic_2s: each model on a stream of its own in one process (the streams share SMs);
#   monolithic_2p: each model in a process of its own (the processes time-slice the GPU);
# - vllm_omni: the stages as separate processes (`handoff: host`), time-sliced;
#   vllm_omni_mps: the same under MPS;
# - intergpu: VLMs on one H100, experts on another.
# Loads: n pi0 + n SmolVLA robots (mixed) and n pi0 robots alone (pi0), n = 1..30.
# A simulation: the same on any host. Prints one table; the grids go to out/cosched/.
# Builds nothing: it expects build/vlasim (or $VLASIM). ONLY=regex restricts the grids run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/cosched
only=${ONLY:-.}
mkdir -p "$out"
sys=$here/scenarios/systems
shaped() { sed 's/^  queue: esf$/  queue: esf\n  cost_model: shaped/' "$1"; }
must() { grep -q -- "$2" "$1" || { echo "cosched_grids: '$2' missing in $1" >&2; exit 1; }; }
shaped "$sys/robion_serving_h100.yaml" > "$out/serving.yaml"
sed 's/guard: true/guard: false/' "$out/serving.yaml" > "$out/serving_noguard.yaml"
must "$out/serving_noguard.yaml" "guard: false"
sed -e 's/streams: \[{name: vlm, sms: 96, batch: 4}, {name: adit, batch: 8}\]/streams: [{name: vlm, batch: 4}, {name: adit, batch: 8}]/' \
    -e '/lockstep: {streams/d' "$out/serving.yaml" > "$out/serving_nolimit.yaml"
must "$out/serving_nolimit.yaml" "streams: \[{name: vlm, batch: 4}, {name: adit, batch: 8}\]"
shaped "$sys/robion_monolithic_h100.yaml" > "$out/monolithic.yaml"
two_streams() {  # $1: the stream options of each model's stream
  sed -e "s/streams: \[{name: s0, batch: 8}\]/streams: [{name: s0, batch: 8$1pi0}, {name: s1, batch: 8$1smolvla}]/" \
      -e 's/  - {name: smolvla, card: smolvla}/  - {name: smolvla, card: smolvla, placement: [{stages: [vision, prefix, action], device: gpu0.s1}]}/' \
      "$out/monolithic.yaml"
}
two_streams ", process: " > "$out/monolithic_2p.yaml"
must "$out/monolithic_2p.yaml" "process: smolvla"
must "$out/monolithic_2p.yaml" "device: gpu0.s1"
two_streams "" | sed 's/batch: 8pi0}/batch: 8}/; s/batch: 8smolvla}/batch: 8}/' > "$out/monolithic_2s.yaml"
must "$out/monolithic_2s.yaml" "{name: s1, batch: 8}"
shaped "$sys/robion_vllm_omni_h100.yaml" > "$out/vllm_omni.yaml"
sed '0,/      graph_capture: true/s//      graph_capture: true\n      mps: true/' "$out/vllm_omni.yaml" > "$out/vllm_omni_mps.yaml"
must "$out/vllm_omni_mps.yaml" "mps: true"
shaped "$sys/robion_intergpu_h100.yaml" > "$out/intergpu.yaml"
models=${MODELS:-fluid blocks_v1 blocks}
seeds=${SEEDS:-2}
engines="serving serving_noguard serving_nolimit monolithic monolithic_2s monolithic_2p vllm_omni vllm_omni_mps intergpu"
for e in $engines; do
  for model in $models; do
    f="$out/${e}_$model.yaml"
    # gpu_sharing on every GPU (a device given as a flow map or as a block map).
    sed -e "s/^\(    - {name: gpu[0-9], catalog: h100-sxm\)/\1, gpu_sharing: $model/" \
        -e "s/^      catalog: h100-sxm$/      catalog: h100-sxm\n      gpu_sharing: $model/" "$out/$e.yaml" > "$f"
    must "$f" "gpu_sharing: $model"
    sed '/name: mobile, model: smolvla/d' "$f" > "$out/${e}_${model}_pi0.yaml"
  done
done
cap() { # runs a capacity sweep per seed; prints each seed's capacity (or the sweep's words), one a line
  local text
  text=$("$vlasim" sweep "$@" --set "seed=${seeds// /,}" --goal capacity --slo 0.98 -q 2>&1 || true)
  awk -F'|' '/^\| *[0-9]+ *\|/ { gsub(/ /, "", $3); print $3; found = 1 } END { if (!found) print "?" }' <<< "$text"
}
# stats V...: "mean (min-max)" of numbers, or the first word that is not one.
stats() {
  python3 -c 'import sys
v = sys.argv[1:]
try:
    x = [float(a) for a in v]
except ValueError:
    print(" ".join(v)); sys.exit()
m = sum(x) / len(x)
print(("%g" % m) if len(x) == 1 else "%.1f (%g-%g)" % (m, min(x), max(x)))' "$@"
}
printf '| engine | sharing | mixed: n pi0 + n SmolVLA at 98%% | pi0 alone: n at 98%% | wall s |\n|---|---|---|---|---|\n'
for e in $engines; do
  for model in $models; do
    [[ "${e}_$model" =~ $only ]] || continue
    t0=$(date +%s)
    mapfile -t mixed < <(cap "$out/${e}_$model.yaml" --set 'workload.0.count+workload.1.count=1:30' -o "$out/grid_${e}_$model")
    mapfile -t alone < <(cap "$out/${e}_${model}_pi0.yaml" --set 'workload.0.count=1:40' -o "$out/grid_${e}_${model}_pi0")
    printf '| %s | %s | %s | %s | %s |\n' "$e" "$model" "$(stats "${mixed[@]}")" "$(stats "${alone[@]}")" "$(( $(date +%s) - t0 ))"
  done
done
