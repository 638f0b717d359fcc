#!/usr/bin/env bash
# Which of issue 45's effects moves which engine (reports/robion.md): the capacity of Robion's
# engines (scripts/cosched_grids.sh's scenarios, shaped cost model) under `gpu_sharing: blocks`
# with every effect, and with each effect switched off alone (a `blocks` parameter), seed 2;
# n pi0 + n SmolVLA robots (mixed) and n pi0 robots alone, at 98%.
# ENGINES="serving serving_nolimit" restricts the engines. A simulation: the same on any host.
# Prints a Markdown table; files in out/cosched_ablation/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/cosched_ablation
mkdir -p "$out"
ONLY='^$' MODELS=blocks bash "$here/scripts/cosched_grids.sh" > /dev/null  # the scenarios only
engines=${ENGINES:-serving serving_noguard serving_nolimit monolithic monolithic_2s vllm_omni}
effects="memory_sms no_preemption wave_tails dram_fair l2_shared give_back"
cap() {
  local line
  line=$("$vlasim" sweep "$@" --goal capacity --slo 0.98 -q 2>&1 | grep -m1 '^capacity' || true)
  case "$line" in *" = "*) line=${line##*= }; echo "${line%% *}" ;; *) echo "${line:-?}" ;; esac
}
printf '| engine | all effects |'; for e in $effects; do printf ' without %s |' "$e"; done; echo
printf '|---|---|'; for e in $effects; do printf -- '---|'; done; echo
for g in $engines; do
  for fleet in mixed pi0; do
    src=$out/../cosched/${g}_blocks.yaml
    [[ $fleet == pi0 ]] && src=$out/../cosched/${g}_blocks_pi0.yaml
    grep -q "gpu_sharing: blocks$" "$src" || { echo "cosched_ablation: no gpu_sharing line in $src" >&2; exit 1; }
    axis='workload.0.count+workload.1.count=1:30'
    [[ $fleet == pi0 ]] && axis='workload.0.count=1:40'
    printf '| %s (%s) | %s |' "$g" "$fleet" "$(cap "$src" --set "$axis" -o "$out/${g}_${fleet}_all")"
    for e in $effects; do
      f=$out/${g}_${fleet}_no_$e.yaml
      sed "s/gpu_sharing: blocks$/gpu_sharing: {name: blocks, params: {$e: false}}/" "$src" > "$f"
      printf ' %s |' "$(cap "$f" --set "$axis" -o "$out/${g}_${fleet}_no_$e")"
    done
    echo
  done
done
