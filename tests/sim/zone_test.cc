// Partition policies, the split planner and dynamic zones.
#include <gtest/gtest.h>

#include "scheduler/partition.h"
#include "scheduler/zone.h"
#include "sim/costs/cost_models.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

TEST(BlockSplit, KeepsBlocksBeforeTheCutOnFirstAndTheRestOnSecond) {
  BlockSplit split(Stage::Prefix, 16, "gpu0", "cpu0", {Stage::Head});
  auto rules = split.rules(32);
  // Whole stages on first, then prefix blocks 16..31 and the head on second.
  ASSERT_EQ(rules.size(), 7u);
  EXPECT_EQ(rules[5].stage, Stage::Prefix);
  EXPECT_EQ(rules[5].first_block, 16);
  EXPECT_EQ(rules[5].last_block, 31);
  EXPECT_EQ(rules[5].device, "cpu0");
  EXPECT_EQ(rules[6].stage, Stage::Head);
  EXPECT_EQ(split.rules(16).size(), 6u);  // cut after the last block: nothing of the stage moves
  EXPECT_THROW(split.rules(8), std::invalid_argument);
}

TEST(BestSplit, PicksByGoalAndSkipsWhatDoesNotFit) {
  std::vector<SplitOutcome> o(4);
  for (int i = 0; i < 4; ++i) {
    o[i].after_block = i;
    o[i].mean_latency_s = 1.0 - 0.1 * i;
    o[i].throughput_hz = 10 + i;
    o[i].peak_memory_bytes = 10e9 * (i + 1);
  }
  o[3].fits = false;
  EXPECT_EQ(best_split(o, SplitGoal::Throughput), 2);
  EXPECT_EQ(best_split(o, SplitGoal::Latency), 2);
  EXPECT_EQ(best_split(o, SplitGoal::Memory), 0);
  EXPECT_EQ(best_split(o, SplitGoal::Memory, 25e9), 1);  // lowest latency under the cap
  EXPECT_EQ(best_split(o, SplitGoal::Memory, 5e9), -1);
}

TEST(BalanceZone, MovesWorkAwayFromABackloggedUnit) {
  auto zone = zone_policies().make("balance", Params(), ConfigNode());
  // Cut 0: 10 ms on unit 0, 30 ms on unit 1. Cut 1: 20/20. Cut 2: 30/10.
  std::vector<ZoneCandidate> c = {{0, {{0, 0.010}, {1, 0.030}}},
                                  {1, {{0, 0.020}, {1, 0.020}}},
                                  {2, {{0, 0.030}, {1, 0.010}}}};
  std::vector<double> idle = {0, 0}, slow = {1, 1};
  ZoneView v;
  v.candidates = c;
  v.configured = 1;
  v.backlog_s = idle;
  v.slowdown = slow;
  EXPECT_EQ(zone->choose(v), 1u);
  std::vector<double> busy0 = {0.050, 0};
  v.backlog_s = busy0;
  EXPECT_EQ(zone->choose(v), 0u);
  std::vector<double> slow1 = {1, 3};
  v.backlog_s = idle;
  v.slowdown = slow1;
  EXPECT_EQ(zone->choose(v), 2u);
  auto fixed = zone_policies().make("static", Params(), ConfigNode());
  EXPECT_EQ(fixed->choose(v), 1u);
}

const char* kZone = R"(
name: zone
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}, {name: b, cores: 1}]}
models:
  - name: s
    card: pi0_small
    partition: {name: block_split, params: {stage: prefix, after_block: 2, first: cpu0.a, second: cpu0.b, second_stages: [action]}}
    dynamic_zone: {name: ZONE, params: {width: 2}}
workload:
  - {name: cam, model: s, rate_hz: 45, duration_s: 6}
background:
  - {device: cpu0.a, compute: 0.5, start_s: 2, end_s: 4}
policies: {pipeline: async}
)";

struct ZoneRun {
  Scenario s;
  Plan p;
  SimResult r;
};
ZoneRun run_zone(const std::string& zone) {
  std::string y = kZone;
  y.replace(y.find("ZONE"), 4, zone);
  ZoneRun z;
  z.s = load_scenario_text(y, "<zone>", default_catalog_dir(), default_cards_dir());
  auto cost = cost_models().make("roofline", Params(), ConfigNode());
  z.p = make_plan(z.s, *cost, {2});
  z.r = simulate(z.s, z.p);
  return z;
}

double mean_latency(const SimResult& r) {
  double sum = 0;
  size_t n = 0;
  for (auto& q : r.requests)
    if (q.finished()) {
      sum += q.latency();
      ++n;
    }
  return n ? sum / n : 0;
}

TEST(DynamicZone, PlansEveryCandidateCutAndHoldsTheirWeights) {
  ZoneRun z = run_zone("static");
  ASSERT_EQ(z.p.models[0].variants.size(), 5u);  // cuts 0..4 around 2 (pi0_small has 4 blocks)
  std::vector<int> cuts;
  for (int v : z.p.models[0].variants) cuts.push_back(z.p.models[v].cut);
  EXPECT_EQ(cuts, (std::vector<int>{0, 1, 2, 3, 4}));
  for (auto& q : z.r.requests) EXPECT_EQ(q.plan, 0);  // static: always the configured cut
}

TEST(DynamicZone, BalanceShiftsBlocksOffALoadedUnitAndCutsLatency) {
  ZoneRun stat = run_zone("static"), bal = run_zone("balance");
  EXPECT_LT(mean_latency(bal.r), 0.8 * mean_latency(stat.r));
  // Requests arriving under the background load on unit a keep fewer blocks there.
  double in_load = 0, outside = 0;
  int n_in = 0, n_out = 0;
  for (auto& q : bal.r.requests) {
    int cut = bal.p.models[q.plan].cut;
    if (q.arrival >= 2.2 && q.arrival < 4) in_load += cut, ++n_in;
    if (q.arrival < 1.8) outside += cut, ++n_out;
  }
  ASSERT_GT(n_in, 0);
  ASSERT_GT(n_out, 0);
  EXPECT_LT(in_load / n_in, outside / n_out);
}

}  // namespace
}  // namespace vlasim
