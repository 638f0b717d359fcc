#!/usr/bin/env bash
# Where a machine's own speed moves come from (reports/steadiness_probe.md): one core, nothing
# else running, times three plain C kernels back to back, each for SECONDS (default 30):
#   1. the drift sentinel's 96^3 fp32 matrix product (in cache: the core's speed);
#   2. a triad a[i] = b[i] + 1.5 c[i] over 4.8 MB (in a 32 MiB L3: the cache's speed);
#   3. the same triad over 192 MB (beyond the LLC: the memory system's speed);
# and prints, per kernel and window length (0.5, 2, 5 s), the largest window median over the
# smallest, - 1. `vlasim calibrate --steadiness` measures 1 and 3 interleaved; this probe adds the
# in-cache triad, which tells the memory system from the core and from the method.
# Usage: scripts/memory_steadiness_probe.sh [SECONDS]   (needs gcc and python3; builds nothing
# of vlasim's)
set -euo pipefail
seconds=${1:-30}
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 10 ]] || { echo "memory_steadiness_probe: SECONDS must be a whole number >= 10, not '$seconds'" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/probe.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  const double dur = atof(argv[2]);
  const double t0 = now();
  if (argv[1][0] == 'm') {  /* the sentinel's kernel */
    enum { N = 96 };
    static float a[N * N], b[N * N], c[N * N];
    for (int i = 0; i < N * N; i++) { a[i] = (i % 7) * 0.25f; b[i] = (i % 5) * 0.5f; }
    while (now() - t0 < dur) {
      const double s = now();
      for (int r = 0; r < 4; r++)
        for (int i = 0; i < N; i++)
          for (int j = 0; j < N; j++) { float x = 0; for (int k = 0; k < N; k++) x += a[i * N + k] * b[k * N + j]; c[i * N + j] = x + r; }
      volatile float sink = c[N + 1]; (void)sink;
      printf("%.4f %.9f\n", now() - t0, now() - s);
    }
  } else {  /* triad over argv[3] elements per array */
    const size_t n = strtoul(argv[3], 0, 10);
    double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8);
    for (size_t i = 0; i < n; i++) { a[i] = 1; b[i] = 2; c[i] = 0; }
    while (now() - t0 < dur) {
      const double s = now();
      for (size_t i = 0; i < n; i++) c[i] = a[i] + 1.5 * b[i];
      volatile double sink = c[n / 2]; (void)sink;
      printf("%.4f %.9f\n", now() - t0, now() - s);
    }
  }
  return 0;
}
C
gcc -O2 -o "$tmp/probe" "$tmp/probe.c"
"$tmp/probe" matmul "$seconds" >"$tmp/core.txt"
"$tmp/probe" triad "$seconds" 200000 >"$tmp/cache.txt"
"$tmp/probe" triad "$seconds" 8000000 >"$tmp/memory.txt"
python3 - "$tmp" <<'PY'
import statistics, sys
print("| kernel, one core | 0.5-s windows | 2-s windows | 5-s windows |")
print("|---|---:|---:|---:|")
for name, f in (("sentinel 96^3 matmul (in cache)", "core"), ("triad over 4.8 MB (in a 32 MiB L3)", "cache"),
                ("triad over 192 MB (memory)", "memory")):
    rows = [tuple(map(float, l.split())) for l in open(f"{sys.argv[1]}/{f}.txt")]
    cells = []
    for w in (0.5, 2, 5):
        bins = {}
        for t, v in rows: bins.setdefault(int(t / w), []).append(v)
        meds = [statistics.median(v) for v in bins.values() if len(v) >= 3]
        cells.append(f"{100 * (max(meds) / min(meds) - 1):.1f}%" if len(meds) >= 2 else "n/a")
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
