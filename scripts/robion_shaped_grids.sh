#!/usr/bin/env bash
# Why Robion / monolithic is 1.0x under the shaped GPU model (reports/robion.md, issue 11):
# capacity grids (pi0 robots at 98% attainment beside 10 SmolVLA robots) of the serving engine
# over VLM x action batch sizes and over the VLM stream's declared SMs x the guard, and of the
# monolithic server over its batch size, each scenario as shipped with `cost_model: shaped`.
# A simulation: the same on any host (about 2 minutes on 2 cores). Prints the three tables;
# the grids' files go to out/robion_shaped/. Builds nothing: it expects build/vlasim (or $VLASIM).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/robion_shaped
mkdir -p "$out"
for s in serving monolithic; do
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
