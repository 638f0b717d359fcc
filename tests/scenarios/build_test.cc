// A scenario built in C++ (scenarios/build.h) is the scenario its YAML twin describes, and
// mistakes in it are named by key as in a file.
#include <gtest/gtest.h>

#include "reports/report.h"
#include "scenarios/build.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

ScenarioBuilder two_robots() {
  ScenarioBuilder b("built");
  b.seed(7)
      .device({.name = "gpu0", .catalog = "rtx4090"})
      .model({.card = "pi0_small", .name = "pi0s", .views = 2, .dtype = "bf16",
              .placement = {{.stages = {"vision", "prefix", "action"}, .device = "gpu0"}}})
      .stream({.model = "pi0s", .rate_hz = 10, .duration_s = 2, .name = "robot", .jitter_ms = 2,
               .deadline_ms = 100, .count = 2, .arrival = "poisson"})
      .queue({.name = "edf"});
  return b;
}

std::string summary(const Scenario& s) {
  const Plan p = plan_scenario(s);
  return summary_text(make_report(s, p, simulate(s, p), "simulate"));
}

TEST(ScenarioBuilder, BuiltScenarioSimulatesLikeItsYamlTwin) {
  const ScenarioBuilder b = two_robots();
  const Scenario built = b.build();
  const Scenario twin = load_scenario_text(b.yaml(), "<twin>", default_catalog_dir(), default_cards_dir());
  ASSERT_EQ(built.streams.size(), 2u);
  EXPECT_EQ(built.seed, 7u);
  EXPECT_EQ(built.queue.name, "edf");
  EXPECT_EQ(built.streams[0].arrival, "poisson");
  EXPECT_EQ(built.models[0].shape.views, 2);
  EXPECT_EQ(summary(built), summary(twin));
}

TEST(ScenarioBuilder, MistakesAreNamedByKey) {
  ScenarioBuilder b = two_robots();
  b.model({.card = "no_such_card", .name = "x"});
  try {
    b.build();
    FAIL() << "an unknown card was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "models[1].card") << e.what();
  }
  ScenarioBuilder c = two_robots();
  c.stream({.model = "pi0s", .rate_hz = -1, .duration_s = 1, .name = "bad"});
  EXPECT_THROW(c.build(), ConfigError);
}

}  // namespace
}  // namespace vlasim
