// CUDA executor speed (issue 12), where a GPU is present: a whole pi0 inference (2 views,
// empty prompt, chunk 63, 10 flow steps; the target shape) and its GEMM-only
// segment through the CudaExecutor, bf16 and fp32, and bf16 replayed as a CUDA Graph (the
// issue's target: at most 12 ms on an H200). Counters: ms (mean wall ms per run, CUDA
// events), best_ms, <stage>_stage_ms and <kind>_ms (sums of the ops' event times), GFLOP/s.
// Without a GPU every benchmark skips with the reason.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>

#include "executors/executor.h"
#include "executors/cuda/cuda_probe.h"
#include "models/builder.h"
#include "executors/executor_registry.h"

namespace vlasim {
namespace {

OpGraph pi0_graph(DType dtype) {
  RunShape s;
  s.dtype = dtype;
  s.views = 2;
  s.prompt = 0;
  s.chunk = 63;
  s.steps = 10;
  return build_graph(load_card(default_cards_dir() + "/pi0.yaml"), s);
}

void run(benchmark::State& state, DType dtype, bool gemm_only, bool graph = false) {
  if (cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device on this machine");
    return;
  }
  const OpGraph g = pi0_graph(dtype);
  std::vector<int> ops;
  double flops = 0;
  for (int id : all_ops(g))
    if (!gemm_only || g.op(id).kind == OpKind::Gemm) {
      ops.push_back(id);
      flops += g.op(id).flops;
    }
  const ConfigNode n = ConfigNode::load_string(std::string(dtype == DType::BF16 ? "dtype: bf16" : "dtype: fp32") +
                                                   (graph ? "\ngraph: true" : ""), "bench");
  auto ex = executor_registry().make("cuda", Params(n), n);
  const int seg = ex->prepare(g, ops);
  for (int i = 0; i < 3; ++i) ex->run(seg);  // warm-up
  double sum = 0, best = 1e30;
  std::map<std::string, double> by_kind, by_stage;
  int64_t runs = 0;
  for (auto _ : state) {
    const SegmentTiming& t = ex->run(seg);
    state.SetIterationTime(t.total);
    sum += t.total;
    best = std::min(best, t.total);
    for (auto& [k, v] : time_by_kind(g, t)) by_kind[k] += v;
    for (auto& [k, v] : time_by_stage(g, t)) by_stage[k] += v;
    ++runs;
  }
  if (runs == 0) return;
  state.counters["ms"] = 1e3 * sum / runs;
  state.counters["best_ms"] = 1e3 * best;
  state.counters["GFLOP/s"] = flops / (sum / runs) / 1e9;
  for (auto& [k, v] : by_kind) state.counters[k + "_ms"] = 1e3 * v / runs;
  for (auto& [k, v] : by_stage) state.counters[k + "_stage_ms"] = 1e3 * v / runs;
}

void BM_CudaPi0Bf16(benchmark::State& s) { run(s, DType::BF16, false); }
void BM_CudaPi0Fp32(benchmark::State& s) { run(s, DType::F32, false); }
void BM_CudaPi0GemmMixBf16(benchmark::State& s) { run(s, DType::BF16, true); }
void BM_CudaPi0Bf16Graph(benchmark::State& s) { run(s, DType::BF16, false, true); }
BENCHMARK(BM_CudaPi0Bf16)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaPi0Fp32)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaPi0GemmMixBf16)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaPi0Bf16Graph)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vlasim

BENCHMARK_MAIN();
