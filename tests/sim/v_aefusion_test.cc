// V-AEFusion (SYSTEMS.md system 3): a request's stale action steps start with it, beside its
// VLM, and its fresh steps only once both are done; refused where it cannot run so.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "models/builder.h"
#include "scenarios/scenario.h"
#include "sim/engine/engine.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

std::string yaml(const std::string& placement, const std::string& fusion) {
  return R"(
name: vaef
seed: 3
hardware:
  devices:
    - name: gpu0
      catalog: rtx4090
      graph_capture: true
      streams: [{name: vlm}, {name: ae}]
models:
  - name: pi0
    card: pi0_tiny
)" + placement + fusion + R"(
workload:
  - {name: camera, model: pi0, rate_hz: 20, deadline_ms: 200, duration_s: 1}
policies: {queue: fifo, pipeline: serial}
)";
}

const std::string kSplit =
    "    placement:\n      - {stages: [vision, prefix], device: gpu0.vlm}\n      - {stages: [action], device: gpu0.ae}\n";

Scenario load(const std::string& text) {
  return load_scenario_text(text, "<test>", default_catalog_dir(), default_cards_dir());
}

TEST(VAeFusion, StaleStepsStartWithTheRequestAndFreshOnesAfterBothChains) {
  const Scenario s = load(yaml(kSplit, "    v_aefusion: {stale_steps: 2}\n"));
  const Plan p = plan_scenario(s);
  const ModelPlan& mp = p.models[0];
  ASSERT_GE(mp.fork, 1);
  ASSERT_LT(static_cast<size_t>(mp.fork) + 1, mp.segments.size());
  EXPECT_NE(mp.segments[mp.fork].label.find("stale"), std::string::npos);
  for (int id : mp.segments[mp.fork].ops) EXPECT_LT(mp.graph.op(id).step, 2) << mp.graph.op(id).name;
  for (int id : mp.segments[mp.fork + 1].ops) EXPECT_GE(mp.graph.op(id).step, 2) << mp.graph.op(id).name;

  SimOptions o;
  const SimResult r = simulate(s, p, o);
  ASSERT_FALSE(r.requests.empty());
  std::map<uint64_t, std::map<int, std::pair<double, double>>> runs;  // request -> segment -> (start, end)
  for (const TraceEvent& e : r.trace) runs[e.request][e.segment] = {e.start, e.end};
  int checked = 0;
  for (const RequestRecord& q : r.requests) {
    if (!q.finished()) continue;
    const auto& seg = runs[q.id];
    ASSERT_TRUE(seg.count(mp.fork) && seg.count(mp.fork + 1) && seg.count(0)) << "request " << q.id;
    EXPECT_DOUBLE_EQ(seg.at(mp.fork).first, seg.at(0).first);  // beside the VLM, from its start
    const double vlm_end = seg.at(mp.fork - 1).second, stale_end = seg.at(mp.fork).second;
    EXPECT_GE(seg.at(mp.fork + 1).first + 1e-12, std::max(vlm_end, stale_end));
    ++checked;
  }
  EXPECT_GT(checked, 5);

  // Faster than the same model without it, alone: the stale steps overlap the VLM.
  const Scenario plain = load(yaml(kSplit, ""));
  const Plan pp = plan_scenario(plain);
  EXPECT_EQ(pp.models[0].fork, -1);
  EXPECT_LT(mp.alone_seconds, pp.models[0].alone_seconds);
}

TEST(VAeFusion, IsRefusedWhereTheStaleStepsCannotRunBesideTheVlm) {
  auto refused = [](const std::string& text, const std::string& what) {
    SCOPED_TRACE(what);
    try {
      const Scenario s = load(text);
      plan_scenario(s);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("v_aefusion"), std::string::npos) << e.what();
    }
  };
  // The action expert on the VLM's own stream: nothing to overlap with.
  refused(yaml("    placement:\n      - {stages: [vision, prefix, action], device: gpu0.vlm}\n",
               "    v_aefusion: {stale_steps: 2}\n"),
          "of its own");
  refused(yaml(kSplit, "    v_aefusion: {stale_steps: 10}\n"), "stale_steps");
  refused(yaml(kSplit, "    v_aefusion: {stale_steps: 0}\n"), "stale_steps");
  refused(yaml(kSplit, "    v_aefusion: {steps: 2}\n"), "steps");
}

}  // namespace
}  // namespace vlasim
