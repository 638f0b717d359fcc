// Embedding vlasim: a scenario built in code (no YAML file), simulated, its latency printed.
// Build against an installed vlasim: see docs/embedding.md.
#include <cstdio>
#include <exception>

#include "reports/report.h"
#include "scenarios/build.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

int main() try {
  using namespace vlasim;
  // A small pi0 on one RTX 4090, two robots asking for an action chunk at 10 Hz.
  ScenarioBuilder b("embed-demo");
  b.device({.name = "gpu0", .catalog = "rtx4090"})
      .model({.card = "pi0_small", .name = "pi0s", .views = 2, .dtype = "bf16",
              .placement = {{.stages = {"vision", "prefix", "action"}, .device = "gpu0"}}})
      .stream({.model = "pi0s", .rate_hz = 10, .duration_s = 5, .name = "robot",
               .jitter_ms = 2, .deadline_ms = 100, .count = 2});
  Scenario s = b.build();  // validated like a file; throws ConfigError naming the key
  Plan plan = plan_scenario(s);
  SimResult result = simulate(s, plan);
  Report rep = make_report(s, plan, result, "simulate");

  std::printf("cards: %s\n", default_cards_dir().c_str());
  std::printf("catalog: %s\n", default_catalog_dir().c_str());
  std::printf("%s: %zu of %zu requests finished\n", s.name.c_str(), rep.finished, rep.requests);
  std::printf("p50 latency: %.3f ms\n", rep.latency.p50 * 1e3);
  std::printf("p99 latency: %.3f ms\n", rep.latency.p99 * 1e3);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "embed: %s\n", e.what());
  return 1;
}
