// Robion's traffic controller run live (scheduler/fleet/traffic_controller.h): it routes robots by
// the placement it solved for the demand it saw, re-solves when that demand changes, keeps
// robots where they are when it can, and the simulator runs a fleet it routes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "models/builder.h"
#include "scenarios/scenario.h"
#include "scheduler/fleet/traffic_controller.h"
#include "sim/engine/engine.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"
#include "scratch.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

// Two GPUs; models a (4 robots per GPU) and b (4); `a_robots` robots of a, 2 of b.
std::string live_fleet(const fs::path& problem, int a_robots, bool every_instance = true) {
  std::string models = "  - {name: a-gpu0, card: pi0_tiny, placement: [{stages: [vision, prefix, action], device: gpu0}]}\n"
                       "  - {name: b-gpu0, card: pi0_tiny, placement: [{stages: [vision, prefix, action], device: gpu0}]}\n"
                       "  - {name: b-gpu1, card: pi0_tiny, placement: [{stages: [vision, prefix, action], device: gpu1}]}\n";
  if (every_instance)
    models += "  - {name: a-gpu1, card: pi0_tiny, placement: [{stages: [vision, prefix, action], device: gpu1}]}\n";
  return "name: live\nhardware:\n  devices:\n    - {name: gpu0, catalog: h100-sxm}\n    - {name: gpu1, catalog: h100-sxm}\n"
         "models:\n" + models +
         "workload:\n"
         "  - {name: ra, model: a, count: " + std::to_string(a_robots) + ", rate_hz: 10, deadline_ms: 100, duration_s: 4}\n"
         "  - {name: rb, model: b, count: 2, rate_hz: 10, deadline_ms: 100, duration_s: 4}\n"
         "controller: {problem: " + problem.string() + ", interval_s: 1}\n";
}

fs::path live_problem(const std::string& name) {
  const fs::path dir = testing::scratch_dir(name);
  std::ofstream(dir / "problem.yaml") << "gpus: [{name: gpu, catalog: h100-sxm, count: 2}]\n"
                                         "models:\n  - {name: a, robots: 1, capacity: {h100-sxm: 4}}\n"
                                         "  - {name: b, robots: 1, capacity: {h100-sxm: 4}}\n";
  return dir / "problem.yaml";
}

Scenario load_live(const std::string& text) {
  return load_scenario_text(text, "<test>", default_catalog_dir(), default_cards_dir());
}

TEST(LiveController, RoutesByThePlacementOfTheDemandItSawAndKeepsRobotsWhereItCan) {
  const Scenario s = load_live(live_fleet(live_problem("live_routes"), 4));
  ASSERT_EQ(s.streams.size(), 6u);  // ra0..ra3, rb0, rb1
  for (const StreamDecl& sd : s.streams) EXPECT_FALSE(sd.group.empty()) << sd.name;
  LiveController c(s);
  std::map<int, std::string> name;
  for (size_t i = 0; i < s.models.size(); ++i) name[static_cast<int>(i)] = s.models[i].name;
  // Every robot asks every 0.1 s; robots ra2, ra3 stop after 2 s.
  std::map<int, std::string> at_1_5, at_3_5;
  for (int tick = 0; tick < 40; ++tick) {
    for (int k = 0; k < 6; ++k) {
      if (tick >= 20 && (k == 2 || k == 3)) continue;
      const double t = tick * 0.1 + k * 0.001;
      const std::string inst = name.at(c.route(k, t));
      EXPECT_EQ(inst.substr(0, 2), k < 4 ? "a-" : "b-");  // always an instance of its own model
      if (tick == 15) at_1_5[k] = inst;
      if (tick == 35) at_3_5[k] = inst;
    }
  }
  // Its first placement is at 1 s, for the 4 + 2 robots of the first second (before, robots
  // go to the least loaded GPU): a fills one GPU (4 / 4), b goes to the other.
  const auto& d = c.decisions();
  ASSERT_GE(d.size(), 1u);
  EXPECT_DOUBLE_EQ(d[0].at_s, 1.0);
  EXPECT_EQ(d[0].demand, (std::vector<int>{4, 2}));
  EXPECT_TRUE(d[0].solved);
  EXPECT_EQ(d[0].placement.instances, 2);
  std::set<std::string> a_at, b_at;
  for (int k = 0; k < 4; ++k) a_at.insert(at_1_5[k]);
  for (int k = 4; k < 6; ++k) b_at.insert(at_1_5[k]);
  EXPECT_EQ(a_at.size(), 1u);  // concentrated, for batching
  EXPECT_EQ(b_at.size(), 1u);
  EXPECT_NE(a_at.begin()->substr(2), b_at.begin()->substr(2));  // on different GPUs
  // At 3 s it sees that only 2 robots of a asked in [2, 3): re-solved, and nobody moves.
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[1].at_s, 3.0);
  EXPECT_EQ(d[1].demand, (std::vector<int>{2, 2}));
  EXPECT_EQ(d[1].moved, 0);
  for (int k : {0, 1, 4, 5}) EXPECT_EQ(at_3_5[k], at_1_5[k]) << "robot " << k;
  const std::string md = controller_decisions_markdown(c);
  EXPECT_NE(md.find("| 3.000 | a | 2 |"), std::string::npos) << md;
  EXPECT_NE(controller_decisions_csv(c).find("1.000000,a,4,"), std::string::npos);
}

TEST(LiveController, DemandNoPlacementServesKeepsTheLastPlacementAndSaysWhy) {
  const Scenario s = load_live(live_fleet(live_problem("live_infeasible"), 10));  // 10 robots of a, 8 fit
  LiveController c(s);
  for (int tick = 0; tick < 15; ++tick)
    for (int k = 0; k < 12; ++k) {
      const int m = c.route(k, tick * 0.1 + k * 0.001);
      EXPECT_EQ(s.models[static_cast<size_t>(m)].name.substr(0, 2), k < 10 ? "a-" : "b-");
    }
  const auto& d = c.decisions();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].solved);
  EXPECT_NE(d[0].why.find("model 'a' has 10 robots"), std::string::npos) << d[0].why;
  EXPECT_NE(controller_decisions_markdown(c).find("kept the last placement"), std::string::npos);
}

TEST(LiveController, IsRefusedAtItsKeyWithoutAnInstanceOrAProblem) {
  try {
    LiveController c(load_live(live_fleet(live_problem("live_missing"), 2, false)));  // no a-gpu1
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "controller");
    EXPECT_NE(std::string(e.what()).find("a-gpu1"), std::string::npos) << e.what();
  }
  try {
    load_live(live_fleet("/nonexistent/problem.yaml", 2));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "controller.problem");
  }
  // The simulator needs the router (vlasim compare, for one, cannot give it): refused at the key.
  const Scenario s = load_live(live_fleet(live_problem("live_norouter"), 2));
  const Plan p = plan_scenario(s);
  try {
    simulate(s, p, SimOptions{});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "controller");
  }
  // A workload naming an instance prefix that is not MODEL-DEVICE is no group.
  std::string text = live_fleet(live_problem("live_prefix"), 2);
  text.replace(text.find("name: a-gpu0"), 12, "name: a-fast-gpu0");
  text.replace(text.find("name: a-gpu1"), 12, "name: a-fast-gpu1");
  EXPECT_THROW(load_live(text), ConfigError);
}

// interval_s 1e-300 was accepted and overflowed the interval's index (8 decisions against 16
// at 1 s; issue 28): below 1 ms it is refused at its key, and 1 ms itself runs.
TEST(LiveController, AnIntervalBelowOneMillisecondIsRefusedAtItsKey) {
  const fs::path problem = live_problem("live_tiny_interval");
  for (const char* tiny : {"1e-300", "0.0009"}) {
    std::string text = live_fleet(problem, 2);
    text.replace(text.find("interval_s: 1"), 13, std::string("interval_s: ") + tiny);
    try {
      load_live(text);
      FAIL() << tiny;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "controller.interval_s") << e.what();
      EXPECT_NE(std::string(e.what()).find("at least 0.001 s"), std::string::npos) << e.what();
    }
  }
  std::string ok = live_fleet(problem, 2);
  ok.replace(ok.find("interval_s: 1"), 13, "interval_s: 0.001");
  const Scenario s = load_live(ok);
  EXPECT_DOUBLE_EQ(s.controller.interval_s, 0.001);
}

TEST(LiveController, TheFleetPlaceWritesRunsWithItsRobotsFollowingTheDemandChange) {
  const std::string src = VLASIM_SOURCE_DIR;
  const PlacementProblem p = load_placement_problem(src + "/scenarios/placement/robion_4xh100_changes.yaml");
  const fs::path dir = testing::scratch_dir("live_fleet");
  std::ofstream(dir / "problem.yaml") << std::ifstream(src + "/scenarios/placement/robion_4xh100_changes.yaml").rdbuf();
  std::ofstream(dir / "fleet_live.yaml")
      << live_fleet_scenario_yaml(p, src + "/scenarios/systems/robion_serving_h100.yaml", "problem.yaml", 1, "ilp");
  const Scenario s = load_scenario((dir / "fleet_live.yaml").string(), default_catalog_dir(), default_cards_dir());
  EXPECT_EQ(s.models.size(), 8u);  // both models on all four GPUs
  LiveController c(s);
  SimOptions o;
  o.router = &c;
  const SimResult r = simulate(s, plan_scenario(s), o);
  size_t finished = 0, met = 0;
  for (const RequestRecord& q : r.requests) {
    finished += q.finished();
    met += q.met();
  }
  EXPECT_EQ(finished, r.requests.size());
  // Robots it has no room for go where the load is least (not onto full GPUs): the fleet holds.
  EXPECT_GT(static_cast<double>(met) / static_cast<double>(finished), 0.97);
  // It saw the change (60 pi0 + 40 SmolVLA from 5 s) within one interval and placed it.
  bool seen = false;
  for (const auto& d : c.decisions())
    if (d.solved && d.demand == std::vector<int>{60, 40}) {
      seen = true;
      EXPECT_GE(d.at_s, 5.0);
      EXPECT_LT(d.at_s, 6.1);  // the first arrival of the interval after the change
      int pi0 = 0;
      for (int x : d.placement.robots[0]) pi0 += x;
      EXPECT_EQ(pi0, 60);
    }
  EXPECT_TRUE(seen);
  // Requests after the change went to pi0 instances on at least three GPUs (60 robots, 20 each).
  std::set<int> late;
  for (const RequestRecord& q : r.requests)
    if (q.arrival > 6.5 && s.models[static_cast<size_t>(q.model)].name.rfind("pi0-", 0) == 0) late.insert(q.model);
  EXPECT_GE(late.size(), 3u);
}

}  // namespace
}  // namespace vlasim
