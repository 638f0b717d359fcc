#!/usr/bin/env bash
# Robion's engines under the two GPU sharing models (issue 30; reports/robion.md): capacity
# (robots at 98% deadline attainment) of every engine, each scenario as shipped with
# `cost_model: shaped`, under `gpu_sharing: fluid` (the model before issue 30) and `blocks` (the
# default since: kernels take SMs in launch order, partitions isolate, processes time-slice
# unless MPS). Engines and the choices SYSTEMS.md leaves open, each run:
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
engines="serving serving_noguard serving_nolimit monolithic monolithic_2s monolithic_2p vllm_omni vllm_omni_mps intergpu"
for e in $engines; do
  for model in fluid blocks; do
    f="$out/${e}_$model.yaml"
    # gpu_sharing on every GPU (a device given as a flow map or as a block map).
    sed -e "s/^\(    - {name: gpu[0-9], catalog: h100-sxm\)/\1, gpu_sharing: $model/" \
        -e "s/^      catalog: h100-sxm$/      catalog: h100-sxm\n      gpu_sharing: $model/" "$out/$e.yaml" > "$f"
    must "$f" "gpu_sharing: $model"
    sed '/name: mobile, model: smolvla/d' "$f" > "$out/${e}_${model}_pi0.yaml"
  done
done
cap() { # runs a capacity sweep; prints its capacity (the largest count at 98%, or the sweep's words)
  local line
  line=$("$vlasim" sweep "$@" --goal capacity --slo 0.98 -q 2>&1 | grep -m1 '^capacity' || true)
  case "$line" in *" = "*) line=${line##*= }; echo "${line%% *}" ;; *) echo "${line:-?}" ;; esac
}
printf '| engine | sharing | mixed: n pi0 + n SmolVLA at 98%% | pi0 alone: n at 98%% | wall s |\n|---|---|---|---|---|\n'
for e in $engines; do
  for model in fluid blocks; do
    [[ "${e}_$model" =~ $only ]] || continue
    t0=$(date +%s)
    mixed=$(cap "$out/${e}_$model.yaml" --set 'workload.0.count+workload.1.count=1:30' -o "$out/grid_${e}_$model")
    alone=$(cap "$out/${e}_${model}_pi0.yaml" --set 'workload.0.count=1:40' -o "$out/grid_${e}_${model}_pi0")
    printf '| %s | %s | %s | %s | %s |\n' "$e" "$model" "$mixed" "$alone" "$(( $(date +%s) - t0 ))"
  done
done
