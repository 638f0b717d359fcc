#!/usr/bin/env bash
# System 4 on the RTX 4090 under the GPU sharing models (issues 30, 45; reports/realtime_gpu.md):
# - two-stream overlap: scenarios/systems/realtime_pi0_4090.yaml asked for 100 frames a second
#   (saturated: per-frame time = 1 / throughput) on one stream (serial), and on its two
#   streams under `gpu_sharing: fluid`, `blocks_v1` (issue 30's) and `blocks` (issue 45's);
# - full streaming: scenarios/systems/realtime_pi0_streaming_4090.yaml (VLM 30 Hz, expert
#   480 Hz) under fluid, blocks_v1 and blocks, and under both with the expert's stream at a higher
#   priority, or on an SM partition (green context) of 32 SMs, the VLM on the rest or on 96.
# A simulation: the same on any host (seconds). Prints Markdown tables; files in out/cosched_rt/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vlasim=${VLASIM:-$here/build/vlasim}
out=$here/out/cosched_rt
mkdir -p "$out"
sys=$here/scenarios/systems
two="      streams: \[{name: vlm}, {name: ae}\]"
variant() {  # $1 scenario, $2 output name, $3 the streams line, $4 extra device line ("" for none)
  local extra=""
  [[ -n $4 ]] && extra="\n      $4"
  sed "s/^$two$/      streams: $3$extra/" "$1" > "$out/$2.yaml"
  grep -q "streams: $(printf '%s' "$3" | sed 's/\[/\\[/g; s/\]/\\]/g')" "$out/$2.yaml" || { echo "cosched_realtime: no streams line in $1" >&2; exit 1; }
}
echo "| pi0 on an RTX 4090, 100 frames/s asked | per-frame ms | latency p50 ms |"
echo "|---|---|---|"
sat="$out/pi0_4090_saturated.yaml"
sed 's/rate_hz: 30, jitter_ms: 0.5, deadline_ms: 33.3, duration_s: 10/rate_hz: 100, jitter_ms: 0.5, deadline_ms: 33.3, duration_s: 10/' \
  "$sys/realtime_pi0_4090.yaml" > "$sat"
grep -q "rate_hz: 100" "$sat"
sed -e "s/^$two$/      streams: [{name: vlm}]/" -e 's/device: gpu0.ae}/device: gpu0.vlm}/' "$sat" > "$out/serial.yaml"
variant "$sat" fluid "[{name: vlm}, {name: ae}]" "gpu_sharing: fluid"
variant "$sat" blocks_v1 "[{name: vlm}, {name: ae}]" "gpu_sharing: blocks_v1"
variant "$sat" blocks "[{name: vlm}, {name: ae}]" "gpu_sharing: blocks"
for v in serial fluid blocks_v1 blocks; do
  "$vlasim" simulate "$out/$v.yaml" -q -o "$out/$v" > /dev/null
  python3 -c "
import json; r = json.load(open('$out/$v/report.json'))
print('| %s | %.2f | %.2f |' % ('$v', 1000 / r['throughput_hz'], 1000 * r['latency']['p50_s']))"
done
echo
echo "| streaming (VLM 30 Hz, expert 480 Hz) | camera Hz | camera p50 ms | camera misses | expert Hz | expert p50 ms | expert misses |"
echo "|---|---|---|---|---|---|---|"
st="$sys/realtime_pi0_streaming_4090.yaml"
variant "$st" st_fluid "[{name: vlm}, {name: ae}]" "gpu_sharing: fluid"
variant "$st" st_blocks_v1 "[{name: vlm}, {name: ae}]" "gpu_sharing: blocks_v1"
variant "$st" st_priority_v1 "[{name: vlm}, {name: ae, priority: -1}]" "gpu_sharing: blocks_v1"
variant "$st" st_blocks "[{name: vlm}, {name: ae}]" ""
variant "$st" st_priority "[{name: vlm}, {name: ae, priority: -1}]" ""
variant "$st" st_ae32 "[{name: vlm}, {name: ae, sms: 32}]" ""
variant "$st" st_96_32 "[{name: vlm, sms: 96}, {name: ae, sms: 32}]" ""
for v in st_fluid st_blocks_v1 st_priority_v1 st_blocks st_priority st_ae32 st_96_32; do
  "$vlasim" simulate "$out/$v.yaml" -q -o "$out/$v" > /dev/null
  # streams.csv: stream, model, stages, rate_hz, achieved_hz, requests, finished, misses, latency_p50_s, ...
  awk -F, -v v="$v" 'NR > 1 && $1 == "camera" { c1 = $5; c2 = 1000 * $9; c3 = $8 }
    NR > 1 && $1 == "expert" { e1 = $5; e2 = 1000 * $9; e3 = $8 }
    END { printf "| %s | %s | %.2f | %s | %s | %.2f | %s |\n", v, c1, c2, c3, e1, e2, e3 }' \
    "$out/$v/streams.csv"
done
