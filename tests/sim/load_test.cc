// A stream's `load:` becomes a rate from the plan: a fraction of the model's alone throughput
// (1 / alone latency with a serial pipeline, 1 / the busiest unit's time when requests may
// overlap), and an unresolved load is refused rather than run at rate 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "scenarios/workload.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

Scenario split(const std::string& pipeline, const std::string& jitter = "jitter_ms: 0.1") {
  return load_scenario_text(R"(
name: load
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}, {name: b, cores: 1}]}
models:
  - name: m
    card: pi0_tiny
    dtype: fp32
    placement:
      - {stages: [vision, prefix], device: cpu0.a}
      - {stage: action, device: cpu0.b}
workload:
  - {name: cam, model: m, load: 0.5, )" + jitter + R"(, duration_s: 1}
  - {name: fixed, model: m, rate_hz: 4, jitter_pct: 20, duration_s: 1}
policies: {pipeline: )" + pipeline + R"(}
)",
                            "<load>", default_catalog_dir(), default_cards_dir());
}

TEST(StreamLoad, SerialLoadIsAFractionOfTheAloneThroughput) {
  Scenario s = split("serial");
  const Plan p = plan_scenario(s);
  EXPECT_TRUE(s.streams[0].rate_pending);
  EXPECT_THROW(make_arrivals(s.streams[0], s.seed, 0), ConfigError);
  resolve_stream_loads(s, p);
  EXPECT_FALSE(s.streams[0].rate_pending);
  EXPECT_NEAR(s.streams[0].rate_hz, 0.5 / p.models[0].alone_seconds, 1e-9);
  EXPECT_EQ(s.streams[1].rate_hz, 4);  // a rate stays as written
  const SimResult r = simulate(s, p);
  EXPECT_GT(r.requests.size(), 3u);
}

TEST(StreamLoad, OverlappingPipelineLoadsTheBusiestUnit) {
  Scenario s = split("{name: async, params: {depth: 2}}");
  const Plan p = plan_scenario(s);
  resolve_stream_loads(s, p);
  const double busiest = bottleneck_seconds(p, 0);
  EXPECT_LT(busiest, p.models[0].alone_seconds);  // two units share the work
  EXPECT_NEAR(s.streams[0].rate_hz, 0.5 / busiest, 1e-9);
}

// jitter_pct is a fraction of the period: of the load's rate once it is resolved, of
// rate_hz at once; each arrival stays within it of its periodic time.
TEST(StreamLoad, JitterPctFollowsTheResolvedPeriod) {
  Scenario s = split("serial", "jitter_pct: 30");
  EXPECT_NEAR(s.streams[1].jitter_s, 0.2 / 4, 1e-12);
  const Plan p = plan_scenario(s);
  resolve_stream_loads(s, p);
  const double period = 1 / s.streams[0].rate_hz;
  EXPECT_NEAR(s.streams[0].jitter_s, 0.3 * period, 1e-12);
  auto arrivals = make_arrivals(s.streams[0], s.seed, 0);
  double moved = 0;
  int n = 0;
  for (double t = arrivals->next(); t >= 0; t = arrivals->next(), ++n) {
    const double off = std::abs(t - n * period);
    EXPECT_LE(off, 0.3 * period + 1e-12) << n;
    moved = std::max(moved, off);
  }
  EXPECT_GT(n, 3);
  EXPECT_GT(moved, 0.05 * period);  // the jitter is applied, not only stored
}

}  // namespace
}  // namespace vlasim
