// The vLLM-Omni-like engine's mechanisms (SYSTEMS.md system 2's baseline): continuous
// batching that schedules the action expert step by step, with a per-step host cost, and an
// inter-process hand-off that stages a stage's output through host memory.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "models/builder.h"
#include "scenarios/scenario.h"
#include "sim/engine/flow.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

std::string omni_yaml(const std::string& batching, const std::string& model_extra, bool host_link = true) {
  return R"(
name: omni
seed: 3
hardware:
  devices:
    - name: host
      catalog: xeon-platinum-8470q
      core_groups: [{name: g0, cores: 4, node: 0}]
    - name: gpu0
      catalog: rtx4090
      graph_capture: true
      streams: [{name: vlm, batch: 2}, {name: ae, batch: 4}]
)" + std::string(host_link ? "  links:\n    - {catalog: pcie4-x16, between: [host, gpu0], memory: pageable}\n" : "") +
         R"(models:
  - name: pi0
    card: pi0_tiny
    placement:
      - {stages: [vision, prefix], device: gpu0.vlm}
      - {stages: [action], device: gpu0.ae}
)" + model_extra + R"(
workload:
  - {name: camera, model: pi0, count: 3, rate_hz: 20, deadline_ms: 200, duration_s: 1}
policies:
  queue: esf
  batching: )" + batching + R"(
  pipeline: {name: async, params: {depth: 8}}
)";
}

Scenario load_omni(const std::string& text) {
  return load_scenario_text(text, "<test>", default_catalog_dir(), default_cards_dir());
}

bool step_segment(const ModelPlan& mp, const Segment& seg) {
  return !seg.transfer && mp.graph.op(seg.ops.front()).stage == Stage::Action && mp.graph.op(seg.ops.front()).step >= 0;
}

TEST(ContinuousBatching, EachDenoisingStepIsASegmentOfOneKindCostingTheInspection) {
  const Scenario s = load_omni(omni_yaml("{name: continuous, params: {inspect_ms: 2}}", ""));
  const Plan p = plan_scenario(s);
  const ModelPlan& mp = p.models[0];
  std::vector<const Segment*> steps;
  for (const Segment& seg : mp.segments)
    if (step_segment(mp, seg)) steps.push_back(&seg);
  ASSERT_EQ(steps.size(), static_cast<size_t>(s.models[0].shape.steps));
  for (size_t k = 0; k < steps.size(); ++k) {
    const Segment& seg = *steps[k];
    for (int id : seg.ops) EXPECT_EQ(mp.graph.op(id).step, static_cast<int>(k)) << mp.graph.op(id).name;
    EXPECT_EQ(seg.kind, steps[0]->kind) << "step " << k;  // every step batches with every other
    EXPECT_DOUBLE_EQ(seg.overhead, 0.002);
    double ops = 0;
    for (int id : seg.ops) ops += mp.op_costs[static_cast<size_t>(id)].seconds;
    EXPECT_NEAR(seg.seconds, ops + 0.002, 1e-12);
    EXPECT_NEAR(mp.segment_at(static_cast<int>(&seg - mp.segments.data()), 4).overhead, 0.002, 0);
  }
  // The VLM's segments keep kinds of their own.
  EXPECT_NE(mp.segments.front().kind, steps[0]->kind);

  // Dynamic batching runs the steps as one segment, joined only at its start.
  const Plan d = plan_scenario(load_omni(omni_yaml("dynamic", "")));
  int action_segments = 0;
  for (const Segment& seg : d.models[0].segments) {
    action_segments += step_segment(d.models[0], seg);
    EXPECT_EQ(seg.overhead, 0);
  }
  EXPECT_EQ(action_segments, 1);
}

TEST(ContinuousBatching, ARequestJoinsARunningBatchAtItsNextStep) {
  // One unit, a model of three identical steps of 1 s each, batches of up to 2.
  auto run = [](const std::string& batching, const std::vector<int>& kinds) {
    Scenario s;
    ModelInstance mi;
    mi.name = "m";
    s.models = {mi};
    StreamDecl sd;
    sd.name = "cam";
    sd.rate_hz = 1;
    sd.duration_s = 1;
    s.streams = {sd};
    s.queue.name = "fifo";
    s.pipeline.name = "async";
    s.batching.name = batching;
    Plan p;
    UnitInfo u;
    u.name = "u";
    u.batch = 2;
    p.units = {u};
    ModelPlan mp;
    for (int k = 0; k < 3; ++k) {
      Segment seg;
      seg.seconds = 1;
      seg.kind = kinds[static_cast<size_t>(k)];
      seg.stage_seconds[static_cast<int>(Stage::Action)] = 1;
      mp.segments.push_back(seg);
    }
    mp.pipeline_stages = 2;  // two requests in flight
    mp.batched.push_back(BatchVariant{2, OpGraph(), mp.segments});
    p.models = {mp};
    SimResult out;
    std::vector<WorkItem> started;
    RequestFlow flow(s, p, out, 100, [&](int, const WorkItem& w) { started.push_back(w); });
    flow.arrive(0, 0.0);
    flow.arrive(0, 0.5);  // while request 0 runs its first step
    double t = 0;
    for (size_t i = 0; i < started.size() && i < 20; ++i) {
      const WorkItem w = started[i];
      t += 1;
      const double measured[kStages] = {0, 0, 0, 0, 0};
      flow.segment_done(0, w, t - 1, t, measured);
    }
    return started;
  };
  // Continuous: request 1 joins request 0 at its second step; the two finish a step apart,
  // in four runs: [0 s0], [0 s1 + 1 s0], [0 s2 + 1 s1], [1 s2].
  const std::vector<WorkItem> c = run("continuous", {0, 0, 0});
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].batch, 1);
  EXPECT_EQ(c[1].batch, 2);
  EXPECT_EQ(c[2].batch, 2);
  EXPECT_EQ(c[3].batch, 1);
  EXPECT_EQ(c[3].request, 1u);
  EXPECT_EQ(c[3].segment, 2);
  // Steps of different kinds do not batch: request 1's first step runs alone after request
  // 0's, and only then do the two run their later steps together:
  // [0 s0], [1 s0], [0 s1 + 1 s1], [0 s2 + 1 s2].
  const std::vector<WorkItem> d = run("continuous", {0, 1, 2});
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[1].batch, 1);
  EXPECT_EQ(d[1].request, 1u);
  EXPECT_EQ(d[1].segment, 0);
  EXPECT_EQ(d[2].batch, 2);
  EXPECT_EQ(d[2].segment, 1);
  EXPECT_EQ(d[3].segment, 2);
}

TEST(ContinuousBatching, InspectionTimeOutOfRangeIsRefusedAtItsKey) {
  for (const char* bad : {"inspect_ms: -1", "inspect_ms: 5000"}) {
    ConfigNode n = ConfigNode::load_string(bad, "batching.yaml");
    try {
      batch_policies().make("continuous", Params(n), n);
      FAIL() << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "inspect_ms") << bad;
      EXPECT_EQ(e.line(), 1) << bad;
    }
  }
}

TEST(InterProcessHandoff, TheVlmsOutputGoesToHostMemoryAndBackBeforeTheActionStage) {
  const Scenario s = load_omni(omni_yaml("dynamic", "    handoff: host\n"));
  const Plan p = plan_scenario(s);
  const ModelPlan& mp = p.models[0];
  int d2h = -1, h2d = -1, action = -1;
  for (size_t k = 0; k < mp.segments.size(); ++k) {
    const Segment& seg = mp.segments[k];
    if (seg.transfer && seg.label == "d2h gpu0->host") d2h = static_cast<int>(k);
    if (seg.transfer && seg.label == "h2d host->gpu0") h2d = static_cast<int>(k);
    if (action < 0 && step_segment(mp, seg)) action = static_cast<int>(k);
  }
  ASSERT_GE(d2h, 1) << "no hand-off to the host";
  EXPECT_EQ(h2d, d2h + 1);
  EXPECT_EQ(action, h2d + 1);
  const Segment& out = mp.segments[static_cast<size_t>(d2h)];
  EXPECT_GT(out.bytes, 0);
  EXPECT_EQ(mp.segments[static_cast<size_t>(h2d)].bytes, out.bytes);
  EXPECT_GT(out.seconds, 0);
  EXPECT_EQ(p.units[static_cast<size_t>(out.unit)].link, 0);
  // The bytes are what the action stage reads from the VLM's unit, each tensor once (every
  // step reads the same prefix K/V).
  double crossing = 0;
  std::set<int> sent;
  for (size_t i = 0; i < mp.graph.size(); ++i)
    for (int pred : mp.graph.preds(static_cast<int>(i)))
      if (mp.op_unit[static_cast<size_t>(pred)] != mp.op_unit[i] && sent.insert(pred).second)
        crossing += mp.graph.edge_bytes(pred, static_cast<int>(i));
  EXPECT_DOUBLE_EQ(out.bytes, crossing);
  // The default hand-off stays on the GPU: no transfer, a shorter request.
  const Plan same = plan_scenario(load_omni(omni_yaml("dynamic", "")));
  for (const Segment& seg : same.models[0].segments) EXPECT_FALSE(seg.transfer) << seg.label;
  EXPECT_LT(same.models[0].alone_seconds, mp.alone_seconds);
}

TEST(InterProcessHandoff, IsRefusedAtItsKeyWithoutAHostLinkOrAnUnknownValue) {
  try {
    plan_scenario(load_omni(omni_yaml("dynamic", "    handoff: host\n", false)));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "models[0].handoff");
    EXPECT_NE(std::string(e.what()).find("no link to a CPU"), std::string::npos) << e.what();
  }
  try {
    load_omni(omni_yaml("dynamic", "    handoff: shm\n"));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "models[0].handoff");
    EXPECT_NE(std::string(e.what()).find("valid values are"), std::string::npos) << e.what();
  }
  // Continuous batching cuts the steps V-AEFusion needs in two segments: refused.
  try {
    plan_scenario(load_omni(omni_yaml("continuous", "    v_aefusion: {stale_steps: 2}\n")));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "models[0].v_aefusion");
  }
}

}  // namespace
}  // namespace vlasim
