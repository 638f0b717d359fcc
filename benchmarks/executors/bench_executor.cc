// oneDNN executor speed: the matmul ceiling, the pi0_small GEMM mix and a whole pi0_small
// inference, all through OneDnnExecutor on every allowed CPU. Counters:
//   GFLOP/s        useful FLOPs (the graph's op flops) per wall second
//   ceiling_ratio  GFLOP/s over the best matmul rate of the same dtype (BM_GemmShape max)
//   ms, <kind>_ms  mean wall milliseconds per run, and per op kind (gemm, attention, ...)
//   <stage>_stage_ms  mean milliseconds per stage (vision, prefix, action)
//   best_*         the same from the fastest run (the machine is shared and noisy)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "executors/onednn_executor.h"
#include "models/builder.h"
#include "tests/executors/graphs.h"

namespace vlasim {
namespace {

const DType kDtypes[] = {DType::BF16, DType::F32};
struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{512, 512, 512},   {1024, 1024, 1024}, {2048, 2048, 2048},
                         {128, 4096, 1024}, {512, 4096, 1024},  {512, 1024, 4096}};

double seconds(Executor& ex, int seg, int runs) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) best = std::min(best, ex.run(seg).total);
  return best;
}

// Best GFLOP/s over kShapes (cached per dtype).
double ceiling_gflops(DType dt) {
  static std::map<DType, double> cache;
  auto it = cache.find(dt);
  if (it != cache.end()) return it->second;
  double best = 0;
  for (const Shape& s : kShapes) {
    OpGraph g;
    g.add(testing::gemm("g", s.m, s.n, s.k));
    ExecOptions o;
    o.dtype = dt;
    OneDnnExecutor ex(o);
    int seg = ex.prepare(g, {0});
    seconds(ex, seg, 2);
    best = std::max(best, g.flops() / seconds(ex, seg, 10) / 1e9);
  }
  return cache[dt] = best;
}

OpGraph pi0_small(DType dt, std::string* source) {
  std::string card = default_cards_dir() + "/pi0_small.yaml";
  try {
    RunShape shape;
    shape.dtype = dt;
    *source = card;
    return build_graph(load_card(card), shape);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_executor: %s unavailable (%s); using the hand-built graph\n",
                 card.c_str(), e.what());
    *source = "hand-built";
    return testing::pi0_graph(testing::pi0_small_dims());
  }
}

void BM_GemmShape(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  const Shape s = kShapes[state.range(1)];
  OpGraph g;
  g.add(testing::gemm("g", s.m, s.n, s.k));
  ExecOptions o;
  o.dtype = dt;
  OneDnnExecutor ex(o);
  int seg = ex.prepare(g, {0});
  ex.run(seg);
  for (auto _ : state) ex.run(seg);
  state.counters["GFLOP/s"] =
      benchmark::Counter(g.flops() * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  state.SetLabel(std::string(to_string(dt)) + " " + std::to_string(s.m) + "x" +
                 std::to_string(s.n) + "x" + std::to_string(s.k));
}

void BM_Ceiling(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  double c = 0;
  for (auto _ : state) c = ceiling_gflops(dt);
  state.counters["ceiling_GFLOP/s"] = c;
  state.SetLabel(std::string(to_string(dt)) + " max over BM_GemmShape shapes");
}

// Runs `ops` of the pi0_small graph; reports rate, ratio and per-kind milliseconds.
void run_graph(benchmark::State& state, bool gemm_only, GateUpMode mode) {
  const DType dt = kDtypes[state.range(0)];
  std::string source;
  OpGraph g = pi0_small(dt, &source);
  std::vector<int> ops;
  double flops = 0;
  for (int id : all_ops(g))
    if (!gemm_only || g.op(id).kind == OpKind::Gemm) {
      ops.push_back(id);
      flops += g.op(id).flops;
    }
  ExecOptions o;
  o.dtype = dt;
  OneDnnExecutor ex(o, mode);
  int seg = ex.prepare(g, ops);
  ex.run(seg);
  std::map<std::string, double> kinds, stages;
  double total = 0, best = 1e30;
  for (auto _ : state) {
    const SegmentTiming& t = ex.run(seg);
    total += t.total;
    best = std::min(best, t.total);
    for (auto& [k, v] : time_by_kind(g, t)) kinds[k] += v;
    for (auto& [k, v] : time_by_stage(g, t)) stages[k] += v;
  }
  const double n = static_cast<double>(state.iterations());
  const double gflops = flops / (total / n) / 1e9;
  const double ceiling = ceiling_gflops(dt);
  state.counters["GFLOP/s"] = gflops;
  state.counters["ceiling_ratio"] = gflops / ceiling;
  state.counters["ms"] = total / n * 1e3;
  state.counters["best_ms"] = best * 1e3;
  state.counters["best_GFLOP/s"] = flops / best / 1e9;
  state.counters["best_ceiling_ratio"] = flops / best / 1e9 / ceiling;
  state.counters["GFLOP"] = flops / 1e9;
  state.counters["ops"] = static_cast<double>(ops.size());
  for (auto& [k, v] : kinds)
    if (k != "total") state.counters[k + "_ms"] = v / n * 1e3;
  for (auto& [k, v] : stages) state.counters[k + "_stage_ms"] = v / n * 1e3;
  state.SetLabel(std::string(to_string(dt)) + " " + source.substr(source.rfind('/') + 1) +
                 (mode == GateUpMode::OneMatmul ? " gate_up=one_matmul" : " gate_up=two_matmuls"));
}

void BM_Pi0SmallGemmMix(benchmark::State& state) {
  run_graph(state, true, static_cast<GateUpMode>(state.range(1)));
}
void BM_Pi0SmallInference(benchmark::State& state) {
  run_graph(state, false, static_cast<GateUpMode>(state.range(1)));
}

BENCHMARK(BM_GemmShape)
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3, 4, 5}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3);
BENCHMARK(BM_Ceiling)->Arg(0)->Arg(1)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pi0SmallGemmMix)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);
BENCHMARK(BM_Pi0SmallInference)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace
}  // namespace vlasim

BENCHMARK_MAIN();
