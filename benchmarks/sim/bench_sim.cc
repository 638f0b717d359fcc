// Simulator speed: simulated events per second of a large scenario next to a bare SystemC
// event loop measured in the same run, and simulated time per wall-clock second.
//   build/benchmarks/sim/bench_sim [--minutes=N]   (default scenario: 64 cameras at 30 Hz for
//   10 simulated minutes on 32 H100s, two cameras per pi0 instance)
#include <benchmark/benchmark.h>

#include <chrono>
#include <sstream>

#include "models/builder.h"
#include "scenarios/scenario.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/plan.h"

namespace vlasim {
namespace {

double g_minutes = 10;

std::string large_scenario(double seconds) {
  std::ostringstream y;
  y << "name: bench-64-cameras\nseed: 3\nhardware:\n  devices:\n"
    << "    - {name: gpu, catalog: h100-sxm, count: 32}\nmodels:\n";
  for (int g = 0; g < 32; ++g)
    y << "  - {name: pi0_" << g << ", card: pi0, views: 2, chunk: 50, steps: 10, placement: "
      << "[{stages: [vision, prefix, action], device: gpu" << g << "}]}\n";
  y << "workload:\n";
  for (int c = 0; c < 64; ++c)
    y << "  - {name: cam" << c << ", model: pi0_" << c / 2 << ", rate_hz: 30, jitter_ms: 1, "
      << "deadline_ms: 50, duration_s: " << seconds << ", start_s: " << (c % 2) * 0.016 << "}\n";
  y << "policies: {queue: edf, pipeline: serial}\n";
  return y.str();
}

// Arg 0: events; arg 1: self-notifying processes (1 = the bare loop the target refers to;
// 33 = as many pending timed events as the large scenario keeps: 32 GPUs + the workload).
void BM_BareSystemCLoop(benchmark::State& state) {
  for (auto _ : state) {
    double rate = bare_systemc_event_rate(static_cast<uint64_t>(state.range(0)), nullptr,
                                          static_cast<int>(state.range(1)));
    state.counters["events_per_s"] = rate;
  }
}
BENCHMARK(BM_BareSystemCLoop)
    ->Args({20'000'000, 1})
    ->Args({20'000'000, 33})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Arg: the temporal-decoupling quantum in microseconds (SimOptions::quantum_s; 0: one
// SystemC activation per event time). The results are the same; only the speed differs.
void BM_SimulateLargeScenario(benchmark::State& state) {
  double seconds = g_minutes * 60;
  SimOptions options;
  options.quantum_s = static_cast<double>(state.range(0)) * 1e-6;
  Scenario s = load_scenario_text(large_scenario(seconds), "<bench>", default_catalog_dir(),
                                  default_cards_dir());
  auto cost = cost_models().make("roofline", Params(), ConfigNode());
  Plan plan = make_plan(s, *cost, std::vector<int>(s.models.size(), 1));
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    SimResult r = simulate(s, plan, options);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t done = 0;
    for (auto& q : r.requests) done += q.finished();
    state.counters["requests"] = static_cast<double>(r.requests.size());
    state.counters["finished"] = static_cast<double>(done);
    state.counters["events"] = static_cast<double>(r.activations);
    state.counters["systemc_activations"] = static_cast<double>(r.systemc_activations);
    state.counters["events_per_s"] = static_cast<double>(r.activations) / wall;
    state.counters["sim_s_per_wall_s"] = r.end_time / wall;
  }
}
BENCHMARK(BM_SimulateLargeScenario)
    ->ArgName("quantum_us")
    ->Arg(1000)  // the default
    ->Arg(0)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vlasim

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--minutes=", 0) == 0) vlasim::g_minutes = std::stod(a.substr(10));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
