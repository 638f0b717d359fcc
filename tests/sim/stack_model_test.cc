// The software stack model (sim/costs/stack_model.h), its fit on real traces
// (sim/costs/stack_eval.h, sim/measured/trace_step.h) and a scenario's policies.stack.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "models/builder.h"
#include "sim/costs/stack_eval.h"
#include "sim/costs/stack_model.h"
#include "sim/engine/planner.h"
#include "sim/hardware/hardware.h"
#include "sim/measured/trace_step.h"
#include "scratch.h"

namespace vlasim {
namespace {

StackParams params(double dispatch_us, double launch_us, double step_us) {
  StackParams p;
  for (const char* c : kStackClasses) p.dispatch_s[c] = dispatch_us * 1e-6;
  p.launch_s = launch_us * 1e-6;
  p.step_s = step_us * 1e-6;
  p.node_gap_s = 1e-6;
  p.graph_launch_s = 10e-6;
  return p;
}

std::vector<StackOp> ops(std::initializer_list<double> kernel_us) {
  std::vector<StackOp> v;
  for (double k : kernel_us) v.push_back({"gemm", k * 1e-6});
  return v;
}

TEST(StackModel, EagerShortKernelsAreBoundByTheHost) {
  // Host 50 us per op, kernels 5 us: the host is the bottleneck; the GPU idles between them.
  const StackTiming t = make_stack("eager", params(50, 8, 100))->run(ops({5, 5, 5, 5}));
  EXPECT_NEAR(t.wall_s, (100 + 4 * 50 + 8 + 5) * 1e-6, 1e-12);
  EXPECT_NEAR(t.gpu_busy_s, 20e-6, 1e-12);
  EXPECT_NEAR(t.host_bound_share(), 1 - 20.0 / 313, 1e-9);
}

TEST(StackModel, EagerLongKernelsQueueAndTheGpuRunsBehind) {
  // Kernels of 1 ms behind 50 us of host each: after the first launch the GPU never waits.
  const StackTiming t = make_stack("eager", params(50, 8, 100))->run(ops({1000, 1000, 1000}));
  EXPECT_NEAR(t.wall_s, (100 + 50 + 8 + 3000) * 1e-6, 1e-12);
  EXPECT_LT(t.host_bound_share(), 0.06);
}

TEST(StackModel, EagerIsNotTheSumOfPerOpMaxima) {
  // A long kernel lets the host run ahead, so the short ones after it cost no host wait:
  // less than summing max(kernel, dispatch) per op, more than either sum alone.
  const StackTiming t = make_stack("eager", params(50, 0, 0))->run(ops({400, 5, 5, 5, 5}));
  const double per_op_max = (400 + 4 * 50) * 1e-6, gpu = 420e-6, host = 250e-6;
  EXPECT_LT(t.wall_s, per_op_max);
  EXPECT_GE(t.wall_s, std::max(gpu, host));
}

TEST(StackModel, GraphReplayIsOneLaunchAndAGapPerNode) {
  const StackTiming t = make_stack("graph", params(50, 8, 100))->run(ops({5, 5, 5, 5}));
  EXPECT_NEAR(t.wall_s, (100 + 10 + 8 + 20 + 3 * 1) * 1e-6, 1e-12);
  const StackTiming without_step = make_stack("graph", params(50, 8, 100))->run(ops({5, 5, 5, 5}), false);
  EXPECT_NEAR(t.wall_s - without_step.wall_s, 100e-6, 1e-12);
}

TEST(StackModel, CompiledUsesTheCompilersLauncherForEveryKernel) {
  StackParams p = params(50, 8, 0);
  p.compiled_dispatch_s = 10e-6;
  const StackTiming t = make_stack("compiled", p)->run(ops({1, 1, 1}));
  EXPECT_NEAR(t.wall_s, (30 + 8 + 1) * 1e-6, 1e-12);
  EXPECT_TRUE(make_stack("compiled", p)->fused());
  EXPECT_FALSE(make_stack("eager", p)->fused());
  EXPECT_THROW(make_stack("lazy", p), std::invalid_argument);
}

TEST(StackModel, ParamsCsvRoundTripsAndBadFilesAreRefusedAtTheFigure) {
  const StackParams p = params(42.5, 7, 300);
  const StackParams q = parse_stack_params(stack_params_csv(p, "note"), "fit.csv");
  EXPECT_NEAR(q.dispatch("attention"), 42.5e-6, 1e-12);
  EXPECT_NEAR(q.step_s, 300e-6, 1e-12);
  auto refused = [](const std::string& text, const std::string& key) {
    try {
      parse_stack_params(text, "fit.csv");
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_EQ(e.file(), "fit.csv");
      return true;
    }
    return false;
  };
  std::string csv = stack_params_csv(p, "n");
  EXPECT_TRUE(refused(csv + "launch,3\n", "launch"));                                  // twice
  EXPECT_TRUE(refused(csv + "warp_drive,3\n", "figure"));                              // unknown
  std::string neg = csv;
  neg.replace(neg.find("step,"), 8, "step,-5\n");
  EXPECT_TRUE(refused(neg.substr(0, neg.find("\n", neg.find("step,")) + 1), "step"));  // negative
  EXPECT_TRUE(refused("# x\nfigure,us\nlaunch,3\n", "dispatch_gemm"));                // missing
  EXPECT_TRUE(refused("", "header"));
}

TEST(StackModel, ShippedFitLoadsThroughTheRegistry) {
  const StackRegistry& r = stack_registry();
  for (const char* name : {"eager", "graph", "compiled"}) ASSERT_NE(r.find(name), nullptr) << name;
  const StackParams shipped = parse_stack_params(read_input_file(default_stack_fit_path()), default_stack_fit_path());
  EXPECT_GT(shipped.dispatch("gemm"), 1e-6);  // eager PyTorch spends microseconds per op, not nanoseconds
  EXPECT_LT(shipped.dispatch("gemm"), 1e-3);
}

TEST(StackModel, EagerLoweringRunsTheKernelsPyTorchLaunches) {
  ModelCard card = find_card(std::string(VLASIM_SOURCE_DIR) + "/data/gpu_traces/cards", "bert_small",
                             ConfigNode::load_string("x", "t"));
  RunShape shape = card.defaults;
  shape.passes = std::vector<std::string>{};
  const OpGraph g = build_graph(card, shape);
  std::vector<int> ids;
  int bias = 0, copies = 0, fused_act = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(int(i));
    ids.push_back(int(i));
    bias += op.fn == OpFn::BiasAdd;
    copies += op.fn == OpFn::Copy;
    fused_act += op.kind == OpKind::Gemm && op.epi.act != Activation::None;
  }
  const std::vector<StackOp> lowered = eager_lowering(g, ids, [](const Op&, const Op&) { return 1e-6; });
  // Qwen's RMSNorm runs as eight kernels, each priced from the norm it comes from.
  ModelCard qwen = find_card(std::string(VLASIM_SOURCE_DIR) + "/data/gpu_traces/cards", "qwen15_05b",
                             ConfigNode::load_string("x", "t"));
  RunShape qs = qwen.defaults;
  qs.passes = std::vector<std::string>{};
  const OpGraph qg = build_graph(qwen, qs);
  int norms = 0, from_norm = 0, synthetic_with_id = 0;
  std::vector<int> qids;
  for (size_t i = 0; i < qg.size(); ++i) {
    qids.push_back(int(i));
    norms += qg.op(int(i)).fn == OpFn::RMSNorm;
  }
  eager_lowering(qg, qids, [&](const Op& op, const Op& source) {
    if (op.id < 0 && source.fn == OpFn::RMSNorm) ++from_norm;
    if (op.id >= 0 && op.id != source.id) ++synthetic_with_id;
    return 1e-6;
  });
  EXPECT_GT(norms, 0);
  EXPECT_EQ(from_norm, 2 * norms);  // one full pass and one per-row pass priced, each used four times
  EXPECT_EQ(synthetic_with_id, 0);
  EXPECT_EQ(int(lowered.size()), int(g.size()) - bias - copies + fused_act);
  // The bias adds' time stays with their GEMMs.
  double total = 0;
  for (const StackOp& o : lowered) total += o.kernel_s;
  EXPECT_NEAR(total, (double(g.size()) - copies + fused_act) * 1e-6, 1e-12);
}

TEST(TraceStep, RealBertStepIsHostBoundAndItsHostTimeIsOwned) {
  const std::string f = std::string(VLASIM_SOURCE_DIR) +
                        "/data/gpu_traces/tracelens/h100_gaunernst_bert-small-uncased__1016001.json.gz";
  const TorchTrace t = read_torch_trace(f);
  std::string chosen;
  const std::vector<TraceStep> s = trace_steps(t, trace_inferences(t, "ProfilerStep#*", &chosen));
  ASSERT_EQ(s.size(), 1u);
  // figures.json's device time for this trace: 309.437 us, all launched inside ProfilerStep#6.
  EXPECT_NEAR(s[0].gpu_busy_s * 1e6, 309.437, 0.01);
  EXPECT_GT(s[0].wall_s, 10 * s[0].gpu_busy_s);
  EXPECT_GT(s[0].host_bound_share(), 0.9);
  // Every launching op's host time is owned once: owned + step + syncs <= the wall.
  double owned = 0;
  for (const auto& [c, h] : s[0].class_host_s) owned += h;
  EXPECT_LE(owned + s[0].step_host_s, s[0].wall_s + s[0].waited_s + 1e-9);
  EXPECT_GT(owned, 0.7 * s[0].wall_s);
  EXPECT_EQ(s[0].class_ops.at("attention"), 4);  // 4 layers, one scaled_dot_product_attention each
  EXPECT_FALSE(s[0].launch_latency_s.empty());
}

TEST(StackEval, FitOwnsHostTimePerLaunchedOpAndFallsBackToTheMean) {
  TraceFitData a;
  a.step.class_host_s = {{"gemm", 100e-6}, {"elementwise", 30e-6}};
  a.step.step_host_s = 200e-6;
  a.step.launch_latency_s = {5e-6, 7e-6, 9e-6};
  a.step.class_ops = {{"gemm", 2}, {"elementwise", 3}, {"norm", 1}};
  const StackParams p = fit_stack({&a}, StackParams{});
  EXPECT_NEAR(p.dispatch("gemm"), 50e-6, 1e-12);
  EXPECT_NEAR(p.dispatch("elementwise"), 10e-6, 1e-12);
  EXPECT_NEAR(p.dispatch("norm"), 0, 1e-12);                // launched, owning no host time
  EXPECT_NEAR(p.dispatch("attention"), 130e-6 / 6, 1e-12);  // never launched: the mean
  EXPECT_NEAR(p.step_s, 200e-6, 1e-12);
  EXPECT_NEAR(p.launch_s, 7e-6, 1e-12);
}

std::string scenario_with_stack(const std::string& stack) {
  return "name: s\nseed: 1\nhardware:\n  devices:\n    - {name: gpu0, catalog: h100-sxm}\nmodels:\n"
         "  - {name: m, card: pi0_tiny, placement: [{stages: [vision, prefix, action], device: gpu0}]}\n"
         "workload:\n  - {name: r, model: m, count: 1, rate_hz: 5, duration_s: 1}\n"
         "policies:\n  cost_model: kernel\n" +
         stack;
}

TEST(StackModel, ScenarioStackChangesTheGpuPredictionAndUnknownNamesAreRefused) {
  const std::string cat = default_catalog_dir(), cards = default_cards_dir();
  auto alone = [&](const std::string& stack) {
    const Plan p = plan_scenario(load_scenario_text(scenario_with_stack(stack), "s.yaml", cat, cards));
    return p.models[0].alone_seconds;
  };
  const double none = alone(""), eager = alone("  stack: eager\n"), graph = alone("  stack: graph\n");
  EXPECT_GT(eager, graph);  // pi0_tiny's kernels are microseconds: eager is host-bound
  EXPECT_NE(none, eager);
  // auto: eager on a GPU without graph capture (this one), graph on one with it.
  EXPECT_DOUBLE_EQ(alone("  stack: auto\n"), eager);
  auto captured = [&](const std::string& stack) {
    std::string y = scenario_with_stack(stack);
    y.replace(y.find("catalog: h100-sxm}"), 18, "catalog: h100-sxm, graph_capture: true}");
    return plan_scenario(load_scenario_text(y, "s.yaml", cat, cards)).models[0].alone_seconds;
  };
  EXPECT_DOUBLE_EQ(captured("  stack: auto\n"), captured("  stack: graph\n"));
  try {
    alone("  stack: lazy\n");
    FAIL() << "an unknown stack was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "s.yaml");
    EXPECT_GT(e.line(), 0);
    EXPECT_NE(std::string(e.what()).find("eager"), std::string::npos) << e.what();
  }
  auto refused_at = [&](const std::string& stack, const std::string& what) {
    try {
      alone(stack);
      ADD_FAILURE() << "accepted: " << stack;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_GT(e.line(), 0) << e.what();
    }
  };
  refused_at("  stack: {name: none, params: {step_us: 3}}\n", "takes no params");
  refused_at("  stack: {name: auto, params: {node_gap_us: 3}}\n", "node_gap_us");  // graph's alone
  EXPECT_GT(alone("  stack: {name: auto, params: {step_us: 900}}\n"), eager);
  try {
    alone("  stack: {name: eager, params: {launch_us: -3}}\n");
    FAIL() << "a negative launch was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.key().find("launch_us"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vlasim

namespace vlasim {
namespace {

TEST(TraceStep, CompiledAndGraphTracesGiveTheirLaunchFigures) {
  const std::string dir = std::string(VLASIM_SOURCE_DIR) + "/data/gpu_traces/tracelens/";
  std::string chosen;
  // One call of a torch.compile'd block: its 12 kernels launched from inside the compiled region
  // (ops nested under "Torch-Compiled Region", which began before the call's range).
  const TorchTrace c = read_torch_trace(dir + "mi300x_torch_compile_triton_trace.json.gz");
  const std::vector<TraceStep> cs = trace_steps(
      c, trace_inferences(c, "## Call CompiledFxGraph fal4xpiah2v6blbfmwwonu52dvevbsmlh743q5tkclrt4gcqpzea ##", &chosen));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].device_events, 12);
  EXPECT_GT(cs[0].host_span_s, 500e-6);
  EXPECT_LT(cs[0].host_span_s, 800e-6);  // the 11.9 ms synchronise after the call is not host time
  // One vLLM decode step replayed from a HIP graph: one launch call, hundreds of nodes.
  const TorchTrace g = read_torch_trace(dir + "mi300x_vllm_decode_full_graph_execution.json.gz");
  const std::vector<TraceStep> gs = trace_steps(
      g, trace_inferences(g, "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", &chosen));
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_GT(gs[0].graph_nodes, 400);
  EXPECT_NEAR(gs[0].graph_launch_s * 1e6, 506.8, 0.5);
  EXPECT_FALSE(gs[0].node_gap_s.empty());
}

}  // namespace
}  // namespace vlasim

namespace vlasim {
namespace {

TEST(TraceStep, ATraceWithoutKernelsIsRefusedSayingWhy) {
  // pi0_tiny on a CPU (Kineto form, no device events): nothing a stack model can read.
  const TorchTrace t =
      read_torch_trace(std::string(VLASIM_SOURCE_DIR) + "/tests/data/torch_trace/pi0_tiny_cpu_shapes.json.gz");
  std::string chosen;
  try {
    trace_steps(t, trace_inferences(t, "", &chosen));
    FAIL() << "a trace without kernels gave steps";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no top-level op that launched device work"), std::string::npos) << e.what();
  }
}

TEST(StackEval, ManifestRefusesAnEagerTraceWithoutItsCardAndUnknownNames) {
  const std::string dir = vlasim::testing::scratch_dir("stack_manifest").string();
  std::filesystem::create_directories(dir + "/t");
  std::filesystem::copy_file(std::string(VLASIM_SOURCE_DIR) +
                                 "/data/gpu_traces/tracelens/h100_gaunernst_bert-small-uncased__1016001.json.gz",
                             dir + "/t/bert.json.gz", std::filesystem::copy_options::overwrite_existing);
  const Catalog cat = Catalog::load_dir(default_catalog_dir());
  const std::string cards = std::string(VLASIM_SOURCE_DIR) + "/data/gpu_traces/cards";
  auto refused = [&](const std::string& yaml, const std::string& what) {
    std::ofstream(dir + "/traces.yaml") << yaml;
    try {
      load_trace_manifest(dir, cards, cat);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.file(), dir + "/traces.yaml") << e.what();
      EXPECT_GT(e.line(), 0) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << yaml;
  };
  refused("traces:\n  - {file: t/bert.json.gz, gpu: h100-sxm}\n", "needs its `card`");
  refused("traces:\n  - {file: t/bert.json.gz, card: bert_small, gpu: h100-sxm, stack: lazy}\n", "unknown stack");
  refused("traces:\n  - {file: t/bert.json.gz, card: bert_small, gpu: h100}\n", "no catalog GPU");
  refused("traces:\n  - {file: t/missing.json.gz, card: bert_small, gpu: h100-sxm}\n", "no such file");
  refused("traces:\n  - {file: t/bert.json.gz, card: bert_big, gpu: h100-sxm}\n", "bert_big");
  refused("traces: []\n", "no trace listed");
  std::ofstream(dir + "/traces.yaml") << "traces:\n  - {file: t/bert.json.gz, card: bert_small, gpu: h100-sxm}\n";
  EXPECT_EQ(load_trace_manifest(dir, cards, cat).cases.size(), 1u);
}

}  // namespace
}  // namespace vlasim
