// Graph passes (models/passes/passes.h): registry, defaults, what each rewrite removes or
// changes, and the errors for passes that do not apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "models/passes/passes.h"
#include "tests/models/test_util.h"

namespace vlasim {
namespace {

using testing::card;

int count(const OpGraph& g, OpKind k, OpFn f) {
  int n = 0;
  for (size_t i = 0; i < g.size(); ++i) n += g.op(int(i)).kind == k && g.op(int(i)).fn == f;
  return n;
}

OpGraph with(const ModelCard& c, std::vector<std::string> passes) {
  RunShape s;
  s.passes = std::move(passes);
  return build_graph(c, s);
}

// Every edge goes forward, every kv_source is a real earlier op, ids are positions.
void expect_well_formed(const OpGraph& g) {
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    EXPECT_EQ(o.id, int(i));
    for (int p : g.preds(int(i))) EXPECT_LT(p, int(i)) << o.name;
    if (o.kv_source >= 0) {
      EXPECT_LT(o.kv_source, int(i)) << o.name;
      EXPECT_TRUE(g.op(o.kv_source).kv_cache) << o.name << " reads " << g.op(o.kv_source).name;
    }
  }
}

TEST(GraphPasses, RegistryListsEveryPassOnceWithADescription) {
  std::vector<std::string> names = pass_names();
  for (const char* want : {"qkv_fuse", "gateup_fuse", "epilogue_fuse", "last_layer_skip", "rmsnorm_fold",
                           "rope_fold", "time_bias_fold"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const GraphPass& p : graph_passes()) {
    EXPECT_STRNE(p.description, "") << p.name;
    EXPECT_EQ(p.builder, p.rewrite == nullptr) << p.name;
    EXPECT_EQ(std::count(names.begin(), names.end(), p.name), 1) << p.name;
  }
  EXPECT_EQ(find_pass("no_such_pass"), nullptr);
  EXPECT_EQ(ordered_passes({"rope_fold", "qkv_fuse", "rope_fold"}),
            (std::vector<std::string>{"qkv_fuse", "rope_fold"}));
}

// A card without `passes:` gets the builder passes that apply to it, and building with them
// named gives the same graph: the graphs of earlier releases stay as they were.
TEST(GraphPasses, CardDefaultsAreTheBuilderPassesThatApply) {
  const ModelCard pi0 = card("pi0");
  EXPECT_EQ(*pi0.defaults.passes,
            (std::vector<std::string>{"qkv_fuse", "gateup_fuse", "epilogue_fuse", "last_layer_skip"}));
  const ModelCard dp = card("diffusion_policy");  // a U-Net: no attention, no FFN; biased Linear GEMMs
  EXPECT_EQ(*dp.defaults.passes, std::vector<std::string>{"epilogue_fuse"});
  const ModelCard openvla = card("openvla");  // no kv_only_last, no expert
  EXPECT_EQ(*openvla.defaults.passes, (std::vector<std::string>{"qkv_fuse", "gateup_fuse", "epilogue_fuse"}));
  const OpGraph a = build_graph(pi0, RunShape{});
  const OpGraph b = with(pi0, {"last_layer_skip", "epilogue_fuse", "gateup_fuse", "qkv_fuse"});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.op(int(i)).name, b.op(int(i)).name);
  EXPECT_DOUBLE_EQ(a.flops(), b.flops());
}

// Without the builder passes: three projections and a gather per attention, two GEMMs and a
// multiply per gated FFN, and a full last prefix layer; same parameters, more FLOPs only for
// the last layer.
TEST(GraphPasses, UnfusedGraphHasSeparateProjectionsAndAFullLastLayer) {
  const ModelCard c = card("pi0_tiny");
  const OpGraph fused = build_graph(c, RunShape{});
  const OpGraph naive = with(c, {});
  expect_well_formed(naive);
  EXPECT_GT(naive.size(), fused.size());
  // Splitting a fused GEMM keeps its parameters: only the full last layer adds some.
  EXPECT_DOUBLE_EQ(with(c, {"last_layer_skip"}).param_bytes(), fused.param_bytes());
  // Without epilogue_fuse: bias adds, activations and residual adds after bare GEMMs.
  EXPECT_GT(count(naive, OpKind::Elementwise, OpFn::BiasAdd), 0);
  for (size_t i = 0; i < naive.size(); ++i) {
    const Op& o = naive.op(int(i));
    if (o.kind == OpKind::Gemm && o.fn == OpFn::Linear && !o.epi.gate_up && !o.epi.gate)
      EXPECT_FALSE(o.epi.bias || o.epi.residual || o.epi.act != Activation::None) << o.name;
  }
  EXPECT_GT(naive.param_bytes(), fused.param_bytes());
  int q = 0, gather = 0, gate = 0, gmul = 0, qkv = 0, gate_up = 0;
  for (size_t i = 0; i < naive.size(); ++i) {
    const std::string& n = naive.op(int(i)).name;
    auto ends = [&](const std::string& s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
    q += ends(".attn_q");
    gather += ends("_gather");
    gate += ends(".ffn_gate");
    gmul += ends(".ffn_gate_mul");
    qkv += ends(".attn_qkv");
    gate_up += ends(".ffn_gate_up");
  }
  EXPECT_EQ(qkv, 0);
  EXPECT_EQ(gate_up, 0);
  EXPECT_GT(q, 0);
  EXPECT_EQ(gather, q);  // every layer has its own K/V here (vision, backbone, expert joint)
  EXPECT_GT(gate, 0);
  EXPECT_EQ(gate, gmul);
  // The last backbone layer: a query projection and an FFN only without last_layer_skip.
  auto has = [](const OpGraph& g, const std::string& name) {
    for (size_t i = 0; i < g.size(); ++i)
      if (g.op(int(i)).name == name) return true;
    return false;
  };
  EXPECT_TRUE(has(naive, "backbone.b3.ffn_down"));
  EXPECT_FALSE(has(fused, "backbone.b3.ffn_down"));
  EXPECT_TRUE(has(fused, "backbone.b3.attn_kv"));
  EXPECT_GT(naive.flops(Stage::Prefix), fused.flops(Stage::Prefix));
  // The expert only gains the separate multiplies of act(gate) * up.
  EXPECT_NEAR(naive.flops(Stage::Action), fused.flops(Stage::Action), 1e-2 * fused.flops(Stage::Action));
}

TEST(GraphPasses, RmsnormFoldDropsTheScaleAndScalesTheReadersRows) {
  const ModelCard c = card("pi0_tiny");
  const OpGraph before = build_graph(c, RunShape{});
  std::vector<std::string> p = *c.defaults.passes;
  p.push_back("rmsnorm_fold");
  const OpGraph after = with(c, p);
  ASSERT_EQ(before.size(), after.size());  // attribute rewrite: no op added or removed
  int folded = 0, scaled = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    const Op& o = after.op(int(i));
    if (o.scale_folded) {
      ++folded;
      EXPECT_EQ(o.fn, OpFn::RMSNorm);
      EXPECT_EQ(o.weight_bytes, 0);
      for (int r : after.succs(int(i))) EXPECT_EQ(after.op(r).param.row_scale, o.weight_id) << after.op(r).name;
    }
    scaled += !o.param.row_scale.empty();
  }
  // Every backbone and expert attention norm feeds a Q|K|V GEMM; LayerNorms (vision) stay.
  EXPECT_GT(folded, 0);
  EXPECT_GE(scaled, folded);
  EXPECT_LT(after.param_bytes(), before.param_bytes());
  // Adaptive norms (pi0.5's adaRMS reads its modulation too) are not folded.
  const ModelCard pi05 = card("pi05");
  std::vector<std::string> p5 = *pi05.defaults.passes;
  p5.push_back("rmsnorm_fold");
  const OpGraph g5 = with(pi05, p5);
  for (size_t i = 0; i < g5.size(); ++i)
    if (g5.op(int(i)).scale_folded) EXPECT_EQ(g5.preds(int(i)).size(), 1u) << g5.op(int(i)).name;
}

TEST(GraphPasses, RopeFoldRemovesEveryRopeOpAndKeepsTheCacheReadable) {
  const ModelCard c = card("pi0_tiny");
  const OpGraph before = build_graph(c, RunShape{});
  std::vector<std::string> p = *c.defaults.passes;
  p.push_back("rope_fold");
  const OpGraph after = with(c, p);
  expect_well_formed(after);
  const int ropes = count(before, OpKind::Elementwise, OpFn::RoPE);
  ASSERT_GT(ropes, 0);
  EXPECT_EQ(count(after, OpKind::Elementwise, OpFn::RoPE), 0);
  EXPECT_EQ(after.size(), before.size() - size_t(ropes));
  EXPECT_NEAR(after.flops(), before.flops(), 1e-9 * before.flops());  // the rotation moved, not vanished
  int epilogues = 0;
  for (size_t i = 0; i < after.size(); ++i) epilogues += after.op(int(i)).epi.rope();
  EXPECT_EQ(epilogues, ropes);
}

TEST(GraphPasses, TimeBiasFoldRemovesTheTimeEmbeddingAndHalvesTheTimeMlpInput) {
  const ModelCard c = card("pi0_tiny");
  const OpGraph before = build_graph(c, RunShape{});
  std::vector<std::string> p = *c.defaults.passes;
  p.push_back("time_bias_fold");
  const OpGraph after = with(c, p);
  expect_well_formed(after);
  EXPECT_EQ(after.size(), before.size() - 2u * size_t(before.steps));  // time_embed + concat per step
  for (size_t i = 0; i < after.size(); ++i) {
    const Op& o = after.op(int(i));
    EXPECT_EQ(o.name.find("time_embed"), std::string::npos);
    if (o.name.find("time_mlp_in") != std::string::npos) {
      EXPECT_EQ(o.k, 128);  // the expert width, no longer 2 x width
      EXPECT_EQ(o.param.src_k, 256);
      EXPECT_FALSE(o.param.fold_input.empty());
      ASSERT_EQ(after.preds(int(i)).size(), 1u);
      EXPECT_NE(after.op(after.preds(int(i))[0]).name.find("action_in"), std::string::npos);
    }
  }
  EXPECT_LT(after.flops(Stage::Action), before.flops(Stage::Action));
}

// Bad input: unknown names, a name twice, and passes with nothing to rewrite.
TEST(GraphPasses, PassesThatCannotApplyAreNamed) {
  const ModelCard pi0 = card("pi0_tiny");
  PassesProblem p = passes_problem(pi0, {"qkv_fuse", "warp_speed"}, RunShape{});
  EXPECT_EQ(p.index, 1);
  EXPECT_NE(p.why.find("unknown pass 'warp_speed'"), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("rope_fold"), std::string::npos) << "lists the valid names: " << p.why;
  p = passes_problem(pi0, {"rope_fold", "rope_fold"}, RunShape{});
  EXPECT_EQ(p.index, 1);
  EXPECT_EQ(passes_problem(pi0, {"qkv_fuse", "epilogue_fuse", "rope_fold", "time_bias_fold"}, RunShape{}).index, -1);
  // The time MLP's bias is an op of its own without epilogue_fuse: nothing to fold it into.
  EXPECT_EQ(passes_problem(pi0, {"qkv_fuse", "time_bias_fold"}, RunShape{}).index, 1);
  // RoPE after a gather of separate Q, K, V projections has no GEMM to fold into.
  p = passes_problem(pi0, {"rope_fold"}, RunShape{});
  EXPECT_EQ(p.index, 0);
  EXPECT_NE(p.why.find("qkv_fuse"), std::string::npos) << p.why;
  // pi0.5 conditions on time through adaRMS: no concatenated time embedding to fold.
  const ModelCard pi05 = card("pi05");
  p = passes_problem(pi05, {"qkv_fuse", "time_bias_fold"}, RunShape{});
  EXPECT_EQ(p.index, 1);
  EXPECT_NE(p.why.find("does not apply to card 'pi05'"), std::string::npos) << p.why;
  // A U-Net has nothing for any transformer pass (one flow step keeps this quick).
  const ModelCard unet = card("diffusion_policy");
  RunShape one_step;
  one_step.steps = 1;
  for (const std::string& name : pass_names())
    if (name != "epilogue_fuse") EXPECT_EQ(passes_problem(unet, {name}, one_step).index, 0) << name;
  RunShape s;
  s.passes = std::vector<std::string>{"time_bias_fold"};
  try {
    build_graph(pi05, s);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("passes"), std::string::npos) << e.what();
  }
}

TEST(GraphPasses, ACardsPassesKeySetsItsDefaultsAndIsChecked) {
  const std::string base = "name: c\ndescription: d\ndefaults: {views: 1, prompt: 4, chunk: 2, steps: 1}\n";
  const std::string comps =
      "components:\n"
      "  - {name: backbone, type: decoder, width: 64, depth: 2, heads: 2, head_dim: 32, mlp: 128, vocab: 16}\n"
      "  - {name: expert, type: expert, width: 32, depth: 2, heads: 2, head_dim: 32, mlp: 64, action_dim: 4}\n";
  const ModelCard c = load_card_text(base + "passes: [rope_fold, qkv_fuse]\n" + comps, "c.yaml");
  EXPECT_EQ(*c.defaults.passes, (std::vector<std::string>{"rope_fold", "qkv_fuse"}));
  EXPECT_EQ(count(build_graph(c, RunShape{}), OpKind::Elementwise, OpFn::RoPE), 0);
  try {
    load_card_text(base + "passes: [qkv_fuse,\n  frobnicate]\n" + comps, "c.yaml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 5) << e.what();
    EXPECT_NE(std::string(e.what()).find("frobnicate"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_card_text(base + "passes: qkv_fuse\n" + comps, "c.yaml"), ConfigError);
}

TEST(GraphPasses, RebuildRedirectsReadersAndDropsDeadOps) {
  OpGraph g;
  auto add = [&](const std::string& name, double out) {
    Op o;
    o.name = name;
    o.out_bytes = out;
    return g.add(o);
  };
  const int a = add("a", 10), b = add("b", 4), c = add("c", 8), d = add("d", 1);
  g.depend(a, b, 4);
  g.depend(a, c, 6);
  g.depend(b, c, 4);
  g.depend(c, d, 8);
  g.op(d).kv_source = b;
  // b is folded into a: c's two inputs merge (10 bytes, capped at a's 10), d's cache is a.
  OpGraph r = rebuild_graph(g, {0, 0, 2, 3});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.op(1).name, "c");
  EXPECT_DOUBLE_EQ(r.edge_bytes(0, 1), 10);
  EXPECT_EQ(r.op(2).kv_source, 0);
  EXPECT_EQ(r.preds(2), std::vector<int>{1});
}

}  // namespace
}  // namespace vlasim
