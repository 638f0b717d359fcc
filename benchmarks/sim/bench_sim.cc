// Simulator speed: simulated events per second of a large scenario next to a bare SystemC
// event loop measured in the same run, and simulated time per wall-clock second.
//   build/benchmarks/sim/bench_sim [--minutes=N]   (default scenario: 64 cameras at 30 Hz for
//   10 simulated minutes on 32 H100s, two cameras per pi0 instance)
#include <benchmark/benchmark.h>

#include <chrono>
#include <sstream>

#include "models/builder.h"
#include "scenarios/scenario.h"
#include "sim/costs/cost_models.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

double g_minutes = 10;

// `sharing`: the GPUs' gpu_sharing (sim/costs/gpu_sharing.h).
std::string large_scenario(double seconds, const std::string& sharing = "blocks") {
  std::ostringstream y;
  y << "name: bench-64-cameras\nseed: 3\nhardware:\n  devices:\n"
    << "    - {name: gpu, catalog: h100-sxm, count: 32, gpu_sharing: " << sharing << "}\nmodels:\n";
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

// Robion's fleet (issue 11): 100 robots at 10 Hz (100 ms deadlines) over 8 instances of 6
// architectures on 4 H100s, each GPU serving two instances with batched stage disaggregation in
// locksteps (SM table from the cost model, guard), dynamic batches, ESF.
std::string robion_fleet(double seconds, const std::string& sharing = "blocks", const std::string& stack = "none") {
  const char* cards[8] = {"pi0", "smolvla", "pi05", "gr00t_n15", "pi0_small", "diffusion_policy", "pi0", "smolvla"};
  const int robots[8] = {13, 14, 12, 14, 20, 2, 12, 13};  // 100, every model within its deadlines
  std::ostringstream y;
  y << "name: bench-robion-fleet\nseed: 4\nhardware:\n  devices:\n";
  for (int g = 0; g < 4; ++g)
    y << "    - {name: gpu" << g << ", catalog: h100-sxm, graph_capture: true, gpu_sharing: " << sharing << ", "
      << "streams: [{name: vlm, sms: 96, batch: 4}, {name: adit, batch: 8}], lockstep: {streams: [vlm, adit]}}\n";
  y << "models:\n";
  for (int m = 0; m < 8; ++m) {
    const std::string gpu = "gpu" + std::to_string(m / 2);
    const bool prefix = std::string(cards[m]) != "diffusion_policy";
    y << "  - {name: m" << m << ", card: " << cards[m] << ", placement: [{stages: [vision" << (prefix ? ", prefix" : "")
      << "], device: " << gpu << ".vlm}, {stage: action, device: " << gpu << ".adit}]}\n";
  }
  y << "workload:\n";
  for (int m = 0; m < 8; ++m)
    y << "  - {name: r" << m << ", model: m" << m << ", count: " << robots[m] << ", rate_hz: 10, jitter_ms: 3, "
      << "deadline_ms: 100, duration_s: " << seconds << "}\n";
  y << "policies: {queue: esf, batching: dynamic, pipeline: {name: async, params: {depth: 16}}, stack: " << stack
    << "}\n";
  return y.str();
}

// Arg: 1 with the GPUs shared `fluid` (the model before issue 30), 0 `blocks` (the default);
// 2: blocks under the software stack model (policies.stack auto: graph replay, issue 44);
// 3: `blocks_v1` (issue 30's block scheduler, before issue 45).
const char* sharing_arg(int64_t fluid) { return fluid == 1 ? "fluid" : fluid == 3 ? "blocks_v1" : "blocks"; }

void BM_SimulateRobionFleet(benchmark::State& state) {
  Scenario s = load_scenario_text(
      robion_fleet(g_minutes * 60, sharing_arg(state.range(0)), state.range(0) == 2 ? "auto" : "none"), "<bench>",
      default_catalog_dir(), default_cards_dir());
  Plan plan = plan_scenario(s);
  SimOptions options;
  options.trace_limit = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    SimResult r = simulate(s, plan, options);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t met = 0;
    for (auto& q : r.requests) met += q.met();
    state.counters["requests"] = static_cast<double>(r.requests.size());
    state.counters["attainment"] = static_cast<double>(met) / static_cast<double>(r.requests.size());
    state.counters["locksteps"] = static_cast<double>(r.locksteps);
    state.counters["sim_s_per_wall_s"] = r.end_time / wall;
  }
}
BENCHMARK(BM_SimulateRobionFleet)->ArgName("fluid")->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Iterations(1)->Unit(benchmark::kMillisecond);

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

// Args: the temporal-decoupling quantum in microseconds (SimOptions::quantum_s; 0: one
// SystemC activation per event time; the results are the same, only the speed differs), and
// 1 with the GPUs shared `fluid`, 0 `blocks` (sharing_arg).
void BM_SimulateLargeScenario(benchmark::State& state) {
  double seconds = g_minutes * 60;
  SimOptions options;
  options.quantum_s = static_cast<double>(state.range(0)) * 1e-6;
  Scenario s = load_scenario_text(large_scenario(seconds, sharing_arg(state.range(1))), "<bench>",
                                  default_catalog_dir(), default_cards_dir());
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
    ->ArgNames({"quantum_us", "fluid"})
    ->Args({1000, 0})  // the defaults
    ->Args({0, 0})
    ->Args({1000, 1})
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
