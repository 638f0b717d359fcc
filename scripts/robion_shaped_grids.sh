#!/usr/bin/env bash
# Why Robion / monolithic is 1.0x under the shaped GPU model (reports/robion.md, issue 11):
# capacity grids (pi0 robots at 98% attainment beside 10 SmolVLA robots) of the serving engine
# over VLM x action batch sizes and over the VLM stream's declared SMs x the guard, and of the
# monolithic server over its batch size, each scenario as shipped with `cost_model: shaped`;
# then every engine's capacity for a mixed load (n pi0 + n SmolVLA robots, one linked key) and
# the vLLM-Omni-like baseline's over its two unstated figures (host time per step, graph replay).
# A simulation: the same on any host (about 2 minutes on 2 cores). Prints the tables;
# the grids' files go to out/robion_shaped/. Builds nothing: it expects build/vlasim (or $VLASIM).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/robion_shaped
mkdir -p "$out"
for s in serving monolithic vllm_omni intergpu; do
  sed 's/^  queue: esf$/  queue: esf\n  cost_model: shaped/' "$here/scenarios/systems/robion_${s}_h100.yaml" > "$out/$s.yaml"
  grep -q "cost_model: shaped" "$out/$s.yaml" || { echo "robion_shaped_grids: no 'queue: esf' line in robion_${s}_h100.yaml" >&2; exit 1; }
done
grid() { local name=$1; shift; "$vlasim" sweep "$@" --goal capacity --slo 0.98 -q -o "$out/$name" > /dev/null; echo "### $name"; cat "$out/$name/grid.md"; echo; }
grid serving_batches "$out/serving.yaml" --set workload.0.count=2:40:2 \
  --set hardware.devices.0.streams.0.batch=2,4,8,16 --set hardware.devices.0.streams.1.batch=4,8,16,32
grid serving_split_guard "$out/serving.yaml" --set workload.0.count=2:30:2 \
  --set hardware.devices.0.streams.0.sms=48,64,80,96,112 --set hardware.devices.0.lockstep.guard=true,false
grid monolithic_batch "$out/monolithic.yaml" --set workload.0.count=2:30:2 \
  --set hardware.devices.0.streams.0.batch=1,2,4,8,16
grid omni_pi0 "$out/vllm_omni.yaml" --set workload.0.count=2:40:2 --set policies.batching.params.inspect_ms=1
# Mixed load: n robots of each model (both counts set to n at once), every engine.
for s in serving monolithic vllm_omni intergpu; do
  grid "mixed_$s" "$out/$s.yaml" --set 'workload.0.count+workload.1.count=1:30' --set seed=2
done
grid omni_sensitivity "$out/vllm_omni.yaml" --set 'workload.0.count+workload.1.count=1:30' \
  --set policies.batching.params.inspect_ms=0,0.5,1,2,2.5,3,3.5,4,5 --set hardware.devices.0.graph_capture=true,false
