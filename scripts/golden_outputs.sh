#!/usr/bin/env bash
# Every output of vlasim that is a pure function of the repository (no measurement, no host
# property): simulate on every shipped scenario, place, validate-papers, gpu-eval, graph,
# leaderboard, roofline, passes, sweep, profile-lut, list and import on the vendored data.
#
#   scripts/golden_outputs.sh VLASIM OUT          write them all under OUT (a fresh folder)
#   scripts/golden_outputs.sh VLASIM --check      compare them with tests/golden/outputs.sha256
#   scripts/golden_outputs.sh VLASIM --update     rewrite tests/golden/outputs.sha256
#
# --check exits 1 and names every file that differs, is new or is missing. A change meant to
# move outputs runs --update and commits the manifest, so the diff shows what moved; to see how
# a file moved, run the script into two folders with the old and the new binary and diff them.
# Runs from the repository root (the outputs hold paths relative to it). About 60 s on 2 cores,
# 22 s of it gpu-eval's leave-one-GPU-out fits.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 2 ]] || { sed -n 2,13p "$0" >&2; exit 2; }
vlasim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[[ -x $vlasim ]] || { echo "golden_outputs: $1: not an executable" >&2; exit 2; }
manifest=$here/tests/golden/outputs.sha256
mode=write
case $2 in
  --check) mode=check ;;
  --update) mode=update ;;
  -*) echo "golden_outputs: unknown option $2" >&2; exit 2 ;;
esac
if [[ $mode == write ]]; then
  out=$2
  [[ ! -e $out ]] || [[ -z $(ls -A "$out") ]] || { echo "golden_outputs: $out is not empty" >&2; exit 2; }
  mkdir -p "$out"; out=$(cd "$out" && pwd)
else
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
fi
cd "$here"
# dtype auto is bf16 where the CPU runs it natively, else fp32: capped at AVX2, which every
# machine of ours has, the CPU scenarios predict the same on every host.
export ONEDNN_MAX_CPU_ISA=AVX2
# run NAME ARGS...: vlasim ARGS with stdout+stderr to OUT/NAME.log and its exit status appended,
# so an error that changes is an output that changes.
run() {
  local name=$1; shift
  mkdir -p "$(dirname "$out/$name")"
  set +e; "$vlasim" "$@" > "$out/$name.log" 2>&1; local rc=$?; set -e
  echo "exit $rc" >> "$out/$name.log"
}
for f in $(find scenarios -name '*.yaml' | LC_ALL=C sort); do
  case $f in scenarios/placement/*|scenarios/papers/figures.yaml) continue ;; esac
  n=${f%.yaml}
  run "simulate/$n" simulate -q "$f" -o "$out/simulate/$n"
done
for f in scenarios/placement/*.yaml; do
  n=${f%.yaml}
  run "place/$n" place -q "$f" -o "$out/place/$n"
done
run place/maximize place -q scenarios/placement/robion_4xh100.yaml --maximize \
    --template scenarios/systems/robion_h100.yaml --slo 0.98 -o "$out/place/maximize"
run validate-papers validate-papers -q -o "$out/validate-papers"
mkdir -p "$out/gpu-eval"
run gpu-eval gpu-eval -q -o "$out/gpu-eval" --fit-out "$out/gpu-eval/kernel_model.csv"
mkdir -p "$out/gpu-eval-traces"
run gpu-eval-traces gpu-eval -q --traces data/gpu_traces -o "$out/gpu-eval-traces" --stack-out "$out/gpu-eval-traces/stack_model.csv"
for c in $(ls models/cards | sed 's/\.yaml$//' | LC_ALL=C sort); do
  run "graph/$c" graph "$c" --ops
  run "roofline/$c" roofline "$c" --device h100-sxm -q -o "$out/roofline/$c"
done
run leaderboard/pi0 leaderboard pi0 -o "$out/leaderboard/pi0"
run leaderboard/smolvla_kernel leaderboard smolvla --cost-model kernel --graph-capture -o "$out/leaderboard/smolvla"
run passes/pi0_h100 passes pi0 --device h100-sxm -q -o "$out/passes/pi0_h100"
run passes/pi0_tiny_cpu passes scenarios/validation/split3_async.yaml -q -o "$out/passes/pi0_tiny_cpu"
run sweep/split sweep scenarios/validation/split3_async.yaml -q \
    --set models.0.partition.params.after_block=1:5 -o "$out/sweep/split"
run profile-lut profile-lut scenarios/systems/robion_fleet_h100.yaml -o "$out/profile-lut.yaml"
# Not `list host` nor the bare `list`: they describe this machine.
for family in cost_models gpu_sharing queue_policies pipeline_policies batching_policies partition_policies \
              zone_policies devices cards workloads passes; do
  run "list/$family" list "$family"
done
v=data/gpu_profiles/vidur/data/profiling
run import/vidur import vidur "$v/compute" --device h100-sxm -o "$out/import/vidur.json"
run import/apxinf import apxinf data/gpu_profiles/apxinf/configs/pi05/orin_sm87_bf16_v2_v3_h10_tactics.json \
    --device jetson-agx-orin-64gb -o "$out/import/apxinf.json"
run import/network import vidur-network "$v/network" -o "$out/import/net.yaml"
run import/trace_pi0_tiny import trace tests/data/torch_trace/pi0_tiny_cpu_legacy.json.gz --card pi0_tiny --steps 3
run import/trace_bert --cards tests/data/torch_trace/cards import trace \
    tests/data/torch_trace/tracelens/gaunernst_bert-small-uncased__1016001.json.gz --card bert_small --device h100-sxm -o "$out/import/trace_bert.json"
# The checkout's own path and OUT's are not outputs.
grep -rlI -e "$here" -e "$out" "$out" | xargs -r -d '\n' sed -i -e "s|$out|<out>|g" -e "s|$here|<repo>|g"
# The manifest: one line per file, its SHA-256 and its path under OUT.
rm -f "$out/sweep/split/gnuplot.log"   # gnuplot's own chatter
sums=$(cd "$out" && find . -type f | LC_ALL=C sort | sed 's|^\./||' | xargs -d '\n' sha256sum)
case $mode in
  write) echo "$sums" > "$out/outputs.sha256"; echo "golden_outputs: $(echo "$sums" | wc -l) files under $out" ;;
  update) mkdir -p "$(dirname "$manifest")"; echo "$sums" > "$manifest"
          echo "golden_outputs: $manifest: $(echo "$sums" | wc -l) files" ;;
  check)
    [[ -f $manifest ]] || { echo "golden_outputs: $manifest missing (run --update)" >&2; exit 2; }
    diffs=$(diff <(echo "$sums") "$manifest" | sed -n 's/^\([<>]\) [0-9a-f]*  \(.*\)/\1 \2/p' | LC_ALL=C sort -k2 -u || true)
    if [[ -n $diffs ]]; then
      echo "golden_outputs: outputs differ from $manifest (< this build, > the manifest):" >&2
      echo "$diffs" >&2
      exit 1
    fi
    echo "golden_outputs: $(echo "$sums" | wc -l) files identical to the manifest" ;;
esac
