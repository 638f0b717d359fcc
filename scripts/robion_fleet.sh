#!/usr/bin/env bash
# Robion's fleet replay (issue 30; SYSTEMS.md system 2): Robion's four models (pi0, SmolVLA,
# GR00T N1.5, Xiaomi-Robotics-0), two variants each, on 4 H100s, 10 Hz robots with 100 ms
# deadlines. For each engine template (the paper's fixed batches, the dynamic-batch variant,
# the monolithic baseline with fixed and with dynamic batches, the vLLM-Omni-like baseline):
#   1. each model's capacity alone on one H100: `vlasim place` of a one-model problem with the
#      template gives the one-GPU scenario, `vlasim sweep --goal capacity --slo 0.98` its knee;
#   2. the placement problem: 8 models, 10 robots each, those capacities;
#   3. `vlasim place --maximize --template --slo 0.98`: the largest demand (a percentage of
#      the problem's) whose placed fleet, simulated, keeps every model instance at >= 98%.
# A simulation (same on any host; ~1 minute on 2 cores). Prints each engine's capacities and
# largest fleet; files in out/robion_fleet/ENGINE/. Builds nothing: expects build/vlasim (or $VLASIM).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/robion_fleet
sys=$here/scenarios/systems
mkdir -p "$out"
sed 's/^  batching: fixed$/  batching: dynamic/' "$sys/robion_fleet_monolithic_h100.yaml" > "$out/monolithic_dynamic.yaml"
grep -q "batching: dynamic" "$out/monolithic_dynamic.yaml" || { echo "robion_fleet: no 'batching: fixed' line in robion_fleet_monolithic_h100.yaml" >&2; exit 1; }
models="pi0-a pi0-b smolvla-a smolvla-b gr00t-a gr00t-b xr0-a xr0-b"
for engine in robion:$sys/robion_fleet_h100.yaml robion_dynamic:$sys/robion_fleet_dynamic_h100.yaml \
              monolithic:$sys/robion_fleet_monolithic_h100.yaml monolithic_dynamic:$out/monolithic_dynamic.yaml \
              vllm_omni:$sys/robion_fleet_vllm_omni_h100.yaml; do
  name=${engine%%:*}
  tmpl=${engine#*:}
  dir=$out/$name
  mkdir -p "$dir"
  problem="gpus: [{name: gpu, catalog: h100-sxm, count: 4}]"$'\n'"models:"
  for m in $models; do
    # One model alone on one H100 (a variant's capacity is its card's: -b runs as -a).
    if [[ $m == *-b ]]; then
      cap=$(cat "$dir/${m%-b}-a.capacity")
    else
      printf 'gpus: [{name: gpu0, catalog: h100-sxm}]\nmodels:\n  - {name: %s, robots: 1, capacity: {h100-sxm: 1}}\n' "$m" > "$dir/$m.alone.yaml"
      "$vlasim" place "$dir/$m.alone.yaml" --template "$tmpl" -o "$dir/$m.alone" -q > /dev/null
      "$vlasim" sweep "$dir/$m.alone/fleet.yaml" --set workload.0.count=2:160:2 --goal capacity --slo 0.98 -q \
        -o "$dir/$m.sweep" > "$dir/$m.sweep.out"
      cap=$(sed -n 's/^capacity at 98% deadline attainment: workload.0.count = \([0-9]*\) .*/\1/p' "$dir/$m.sweep.out")
      [ -n "$cap" ] || { echo "robion_fleet: no capacity for $m with $tmpl:" >&2; cat "$dir/$m.sweep.out" >&2; exit 1; }
      echo "$cap" > "$dir/$m.capacity"
    fi
    problem+=$'\n'"  - {name: $m, robots: 10, capacity: {h100-sxm: $cap}}"
  done
  echo "$problem" > "$dir/problem.yaml"
  "$vlasim" place "$dir/problem.yaml" --maximize --template "$tmpl" --slo 0.98 -q -o "$dir/max" > "$dir/max.out"
  echo "### $name ($tmpl)"
  echo
  echo "capacities alone (robots per H100 at 98%): $(for m in pi0-a smolvla-a gr00t-a xr0-a; do printf '%s %s, ' "${m%-a}" "$(cat "$dir/$m.capacity")"; done)"
  echo
  cat "$dir/max/maximize.md" | sed 1,2d
  echo
done
