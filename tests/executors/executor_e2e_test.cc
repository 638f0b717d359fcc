// A whole small pi0 inference on the oneDNN executor against the float64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "host_skip.h"
#include "executors/onednn_executor.h"
#include "executors/reference.h"
#include "models/builder.h"
#include "tests/executors/graphs.h"

namespace vlasim {
namespace {

// pi0_tiny from its card when the card exists, else the hand-built pi0-shaped graph.
OpGraph tiny_pi0(DType dtype, std::string* source) {
  std::string card = std::string(VLASIM_SOURCE_DIR) + "/models/cards/pi0_tiny.yaml";
  if (std::filesystem::exists(card)) {
    RunShape shape;
    shape.dtype = dtype;
    *source = card;
    return build_graph(load_card(card), shape);
  }
  *source = "hand-built pi0 graph (tests/executors/graphs.cc)";
  return testing::pi0_graph(testing::Pi0Dims{});
}

using testing::rel_err;

void end_to_end(DType dtype, double tol) {
  std::string source;
  OpGraph g = tiny_pi0(dtype, &source);
  ExecOptions opt;
  opt.dtype = dtype;
  opt.seed = 5;
  OneDnnExecutor ex(opt);
  ReferenceExecutor ref(opt);
  std::vector<int> ops = all_ops(g);
  int a = ex.prepare(g, ops), b = ref.prepare(g, ops);
  ex.run(a);
  ref.run(b);
  // Last op of each stage, and the final op.
  std::map<Stage, int> last;
  for (int id : ops) last[g.op(id).stage] = id;
  for (auto [stage, id] : last) {
    double e = rel_err(ex.get_output(a, id), ref.get_output(b, id));
    EXPECT_LT(e, tol) << source << ": " << to_string(stage) << " output (op " << id << " '"
                      << g.op(id).name << "')";
    ::testing::Test::RecordProperty(std::string(to_string(stage)) + "_rel_err", std::to_string(e));
  }
}

// The pi0 graph's action stage runs on data it produces: the only synthetic tensors are the
// inputs of a real inference (step 0's noise actions, state, time embeddings), never a
// GEMM's activations. The time MLP reads [action embedding | time embedding].
TEST(ExecutorEndToEnd, Pi0SmallActionStageReadsItsOwnActivations) {
  OpGraph g = build_graph(load_card(std::string(VLASIM_SOURCE_DIR) + "/models/cards/pi0_small.yaml"),
                          RunShape{});
  std::vector<OpPlan> plan = plan_segment(g, all_ops(g));
  for (const TensorInfo& t : segment_inputs(plan)) {
    const Op& o = g.op(t.key.op);
    if (o.stage != Stage::Action) continue;
    const bool ok = o.name.ends_with(".time_embed") || o.name.ends_with(".state_proj") ||
                    o.name == "expert.s0.action_in" || o.name == "expert.s0.euler";
    EXPECT_TRUE(ok) << "synthetic input " << input_key(t.key) << " of '" << o.name << "'";
  }
  for (const OpPlan& p : plan) {
    const Op& o = g.op(p.op);
    if (o.name.ends_with(".time_mlp_in")) {
      const Op& x = g.op(p.in[kX].t.key.op);
      EXPECT_EQ(p.in[kX].t.key.role, -1) << o.name;
      EXPECT_TRUE(x.name.ends_with(".action_time")) << o.name << " reads " << x.name;
    }
    if (o.name.ends_with(".action_time")) {
      ASSERT_EQ(p.parts.size(), 2u) << o.name;
      EXPECT_TRUE(p.concat_cols) << o.name;
    }
  }
}


// The op of `g` whose name ends with `suffix` (exactly one).
int op_named(const OpGraph& g, const std::string& suffix) {
  int found = -1;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.op(static_cast<int>(i)).name.ends_with(suffix)) {
      EXPECT_EQ(found, -1) << "two ops end with " << suffix;
      found = static_cast<int>(i);
    }
  EXPECT_GE(found, 0) << "no op ends with " << suffix;
  return found;
}

// DP-Cache changes the result (cached steps reuse the deep blocks' change of the last full
// step instead of recomputing it): the steps before its window give the same values with and
// without it (same weights, and synthetic inputs follow op names, not ids), the cached graph
// runs on the oneDNN executor as on the float64 reference, and the final actions move by a
// finite, reported amount.
// On pi0's flow expert and on GR00T's DiT head (tiny cards).
void dp_cache_end_to_end(const std::string& card_name, const std::string& property) {
  const ModelCard card = load_card(std::string(VLASIM_SOURCE_DIR) + "/models/cards/" + card_name + ".yaml");
  RunShape full;
  full.dtype = DType::F32;
  RunShape cached = full;
  cached.dp_cache = DpCache{.start = 2, .end = 8, .interval = 2, .keep = 1};
  const OpGraph gf = build_graph(card, full), gc = build_graph(card, cached);
  ASSERT_LT(gc.size(), gf.size());
  ExecOptions opt;
  opt.dtype = DType::F32;
  opt.seed = 5;
  ReferenceExecutor rf(opt), rc(opt);
  OneDnnExecutor ec(opt);
  const int a = rf.prepare(gf, all_ops(gf)), b = rc.prepare(gc, all_ops(gc)), c = ec.prepare(gc, all_ops(gc));
  rf.run(a);
  rc.run(b);
  ec.run(c);
  // Step 2 runs fully in both (the window's first step), so everything up to its end agrees.
  const std::vector<float> before_f = rf.get_output(a, op_named(gf, ".s2.euler"));
  const std::vector<float> before_c = rc.get_output(b, op_named(gc, ".s2.euler"));
  ASSERT_EQ(before_f.size(), before_c.size());
  EXPECT_EQ(before_f, before_c);
  const int last_f = op_named(gf, ".s" + std::to_string(gf.steps - 1) + ".euler");
  const int last_c = op_named(gc, ".s" + std::to_string(gc.steps - 1) + ".euler");
  const double moved = rel_err(rc.get_output(b, last_c), rf.get_output(a, last_f));
  EXPECT_GT(moved, 0) << "the cached steps changed nothing: were blocks skipped?";
  EXPECT_TRUE(std::isfinite(moved));
  ::testing::Test::RecordProperty(property, std::to_string(moved));
  EXPECT_LT(rel_err(ec.get_output(c, last_c), rc.get_output(b, last_c)), 1e-4);
}

TEST(ExecutorEndToEnd, DpCacheKeepsTheStepsBeforeItsWindowAndChangesTheActionsAfter) {
  dp_cache_end_to_end("pi0_tiny", "dp_cache_action_rel_diff");
}

TEST(ExecutorEndToEnd, DpCacheOnADitHeadKeepsTheStepsBeforeItsWindowAndChangesTheActionsAfter) {
  dp_cache_end_to_end("gr00t_tiny", "dit_dp_cache_action_rel_diff");
}

// V-AEFusion changes the result too: its stale steps read the previous frame's VLM features.
// Emulated on the float64 reference executor with segments: the VLM on frame A (another
// camera image) and on frame B; the stale steps (0..k-1) fed frame A's features, the fresh
// ones frame B's and the stale steps' output. Fed frame B everywhere, the stitched segments
// give the whole graph's actions exactly; fed A for the stale steps, the actions move by a
// finite, reported amount.
TEST(ExecutorEndToEnd, VAeFusionStaleStepsMoveTheActionsByAReportedAmount) {
  const ModelCard card = load_card(std::string(VLASIM_SOURCE_DIR) + "/models/cards/pi0_tiny.yaml");
  RunShape shape;
  shape.dtype = DType::F32;
  const OpGraph g = build_graph(card, shape);
  const int k = 5;
  std::vector<int> vlm, stale, fresh;
  for (int id : all_ops(g)) {
    const Op& o = g.op(id);
    (o.stage != Stage::Action ? vlm : o.step < k ? stale : fresh).push_back(id);
  }
  ASSERT_FALSE(vlm.empty() || stale.empty() || fresh.empty());
  ExecOptions opt;
  opt.dtype = DType::F32;
  opt.seed = 5;
  ReferenceExecutor ex(opt);
  const int whole = ex.prepare(g, all_ops(g));
  ex.run(whole);
  const int last = op_named(g, ".s" + std::to_string(g.steps - 1) + ".euler");
  const std::vector<float> actions = ex.get_output(whole, last);
  // The VLM on frame B (the graph's own synthetic image) and on frame A (another one).
  const int vlm_b = ex.prepare(g, vlm), vlm_a = ex.prepare(g, vlm);
  int images = 0;
  for (const TensorInfo& t : ex.inputs(vlm_a))
    if (t.key.role >= 0 && g.op(t.key.op).stage == Stage::Vision && !t.is_int) {
      std::vector<float> other(static_cast<size_t>(t.elems()));
      fill_input(t, opt.seed + 1000, other.data());
      ex.set_input(vlm_a, t.key, other);
      ++images;
    }
  ASSERT_GT(images, 0);
  ex.run(vlm_b);
  ex.run(vlm_a);
  std::set<int> in_vlm(vlm.begin(), vlm.end()), in_stale(stale.begin(), stale.end());
  // Runs the stale steps on `features`' VLM outputs and the fresh ones on frame B's.
  auto stitched = [&](int features) {
    const int s1 = ex.prepare(g, stale), s2 = ex.prepare(g, fresh);
    for (const TensorInfo& t : ex.inputs(s1))
      if (t.key.role < 0 && in_vlm.count(t.key.op)) ex.set_input(s1, t.key, ex.get_output(features, t.key.op));
    ex.run(s1);
    for (const TensorInfo& t : ex.inputs(s2)) {
      if (t.key.role >= 0) continue;
      if (in_vlm.count(t.key.op)) ex.set_input(s2, t.key, ex.get_output(vlm_b, t.key.op));
      else if (in_stale.count(t.key.op)) ex.set_input(s2, t.key, ex.get_output(s1, t.key.op));
    }
    ex.run(s2);
    return ex.get_output(s2, last);
  };
  EXPECT_LT(rel_err(stitched(vlm_b), actions), 1e-6);  // the stitching computes the whole graph
  const double moved = rel_err(stitched(vlm_a), actions);
  EXPECT_GT(moved, 0) << "stale features changed nothing: did the stale steps read the VLM?";
  EXPECT_TRUE(std::isfinite(moved));
  ::testing::Test::RecordProperty("v_aefusion_action_rel_diff", std::to_string(moved));
}

TEST(ExecutorEndToEnd, TinyPi0Fp32) { end_to_end(DType::F32, 1e-4); }
TEST(ExecutorEndToEnd, TinyPi0Bf16) {
  VLASIM_SKIP_UNLESS_CPU_RUNS(DType::BF16);
  end_to_end(DType::BF16, 3e-2);
}

}  // namespace
}  // namespace vlasim
