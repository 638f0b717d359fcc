// The builder against hand-computed costs and the structure each model type promises.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "models/builder.h"
#include "test_util.h"

namespace vlasim {
namespace {

using testing::card;
using testing::params_of;
using testing::rel;

// pi0 dimensions (MODELS.md; openpi gemma.py / siglip.py).
constexpr double kVitW = 1152, kVitDepth = 27, kVitMlp = 4304, kVitHeads = 16, kVitHd = 72;
constexpr double kPatch = 14, kImg = 224;
constexpr double kW = 2048, kDepth = 18, kMlp = 16384, kHeads = 8, kKvHeads = 1, kHd = 256;
constexpr double kVocab = 257152;
constexpr double kEw = 1024, kEmlp = 4096;

// One Gemma-style layer's GEMM parameters: fused QKV, O, gate+up, down.
double layer_params(double w, double mlp) {
  const double q = kHeads * kHd, kv = kKvHeads * kHd;
  return w * (q + 2 * kv) + q * w + w * 2 * mlp + mlp * w;
}

RunShape pi0_reference_shape() {
  RunShape s;
  s.views = 2;
  s.prompt = 0;
  s.chunk = 63;
  s.steps = 10;
  s.batch = 1;
  return s;
}

class Pi0Reference : public ::testing::Test {
 protected:
  void SetUp() override { g = build_graph(card("pi0"), pi0_reference_shape()); }
  OpGraph g;
  const double P = (kImg / kPatch) * (kImg / kPatch);  // 256 tokens per view
  const double S = 2 * P;                              // prefix tokens
  const double T = 64;                                 // state + 63 actions
};

TEST_F(Pi0Reference, ShapeFieldsDescribeThePrefixAndSuffix) {
  EXPECT_EQ(g.model, "pi0");
  EXPECT_EQ(g.views, 2);
  EXPECT_EQ(g.prompt, 0);
  EXPECT_EQ(g.chunk, 63);
  EXPECT_EQ(g.steps, 10);
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.prefix_tokens, 512);
  EXPECT_EQ(g.suffix_tokens, 64);
}

TEST_F(Pi0Reference, VisionFlopsMatchSiglipTimesTwoViews) {
  const double per_block = 2 * P * (4 * kVitW * kVitW + 2 * kVitW * kVitMlp) +
                           4 * kVitHeads * P * P * kVitHd;
  const double patch = 2 * P * (3 * kPatch * kPatch) * kVitW;
  const double proj = 2 * P * kVitW * kW;
  const double expected = 2 * (kVitDepth * per_block + patch + proj);
  EXPECT_LT(rel(g.flops(Stage::Vision), expected), 0.02);
  EXPECT_LT(rel(expected, 0.44e12), 0.03);  // MODELS.md: ~0.44 TFLOP
}

TEST_F(Pi0Reference, PrefixFlopsMatchGemmaWithKvOnlyLastLayer) {
  const double kv = kKvHeads * kHd;
  const double full = 2 * S * layer_params(kW, kMlp) + 4 * kHeads * S * S * kHd;
  const double last = 2 * S * kW * 2 * kv;
  const double expected = (kDepth - 1) * full + last;
  EXPECT_LT(rel(g.flops(Stage::Prefix), expected), 0.02);
  EXPECT_LT(rel(expected, 1.96e12), 0.03);  // MODELS.md: ~1.96 TFLOP
}

TEST_F(Pi0Reference, TenExpertStepsMatchGemma300mOverPrefixPlusSuffix) {
  const double per_step = kDepth * (2 * T * layer_params(kEw, kEmlp) +
                                    4 * kHeads * T * (S + T) * kHd);
  const double expected = 10 * per_step;
  EXPECT_LT(rel(g.flops(Stage::Action), expected), 0.02);
  EXPECT_LT(rel(expected, 0.45e12), 0.03);  // MODELS.md: ~0.45 TFLOP
}

TEST_F(Pi0Reference, LastPrefixLayerComputesOnlyKv) {
  int last = int(kDepth) - 1;
  int gemms = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Prefix || o.block != last) continue;
    EXPECT_NE(o.kind, OpKind::Attention) << o.name;
    if (o.kind == OpKind::Gemm) {
      ++gemms;
      EXPECT_EQ(o.n, 2 * kKvHeads * kHd) << o.name;
    }
  }
  EXPECT_EQ(gemms, 1);
}

TEST_F(Pi0Reference, PrefixKvCacheBytesAreLayersTimesKAndV) {
  double kv = 0;
  int caches = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage == Stage::Prefix && o.kv_cache) {
      kv += o.kv_bytes;
      ++caches;
    }
  }
  EXPECT_EQ(caches, int(kDepth));
  EXPECT_DOUBLE_EQ(kv, kDepth * 2 * S * kKvHeads * kHd * 2 /* bf16 */);
}

TEST_F(Pi0Reference, EveryActionStepAttendsToEachLayersPrefixKv) {
  std::map<int, int> cache_of_block;  // prefix block -> kv op
  for (size_t i = 0; i < g.size(); ++i)
    if (g.op(int(i)).stage == Stage::Prefix && g.op(int(i)).kv_cache)
      cache_of_block[g.op(int(i)).block] = int(i);
  ASSERT_EQ(cache_of_block.size(), size_t(kDepth));
  int cross = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Action || o.kind != OpKind::Attention) continue;
    ++cross;
    EXPECT_EQ(o.fn, OpFn::CrossAttention);
    EXPECT_EQ(o.kv_source, cache_of_block.at(o.block)) << o.name;
    EXPECT_EQ(o.kv_cached, S);
    EXPECT_EQ(o.q_len, T);
    EXPECT_EQ(o.kv_len, S + T);
    EXPECT_DOUBLE_EQ(g.edge_bytes(o.kv_source, int(i)), 2 * S * kKvHeads * kHd * 2);
  }
  EXPECT_EQ(cross, 10 * int(kDepth));
  for (const auto& [block, kv] : cache_of_block) {
    int action_succs = 0;
    for (int s : g.succs(kv)) action_succs += g.op(s).stage == Stage::Action;
    EXPECT_EQ(action_succs, 10) << "block " << block;
  }
}

TEST_F(Pi0Reference, ActionOpsCarryTheirStepAndOthersDoNot) {
  std::map<int, int> per_step;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage == Stage::Action) {
      ASSERT_GE(o.step, 0) << o.name;
      ++per_step[o.step];
    } else {
      EXPECT_EQ(o.step, -1) << o.name;
    }
  }
  ASSERT_EQ(per_step.size(), 10u);
  for (const auto& [step, n] : per_step) EXPECT_EQ(n, per_step.at(0)) << "step " << step;
}

TEST_F(Pi0Reference, ExpertWeightsAreCountedOnceAcrossSteps) {
  RunShape one = pi0_reference_shape();
  one.steps = 1;
  OpGraph g1 = build_graph(card("pi0"), one);
  EXPECT_DOUBLE_EQ(g.param_bytes(Stage::Action), g1.param_bytes(Stage::Action));
  EXPECT_NEAR(g.flops(Stage::Action), 10 * g1.flops(Stage::Action), 1e-6 * g.flops());
  // The same parameter tensor in two steps carries the same id.
  std::string w0, w9;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage == Stage::Action && o.block == 4 && o.fn == OpFn::Linear &&
        o.name.find("attn_qkv") != std::string::npos)
      (o.step == 0 ? w0 : o.step == 9 ? w9 : w0) = o.weight_id;
  }
  EXPECT_FALSE(w0.empty());
  EXPECT_EQ(w0, w9);
}

TEST(Pi0Params, SiglipGemmaAndExpertMatchPublishedSizes) {
  RunShape s = pi0_reference_shape();
  s.prompt = 8;  // so the prompt embedding table is part of the graph
  OpGraph g = build_graph(card("pi0"), s);
  const double P = 256;
  const double vit_layer = 4 * kVitW * kVitW + 2 * kVitW * kVitMlp;
  const double vit = kVitDepth * vit_layer + 3 * kPatch * kPatch * kVitW + P * kVitW;
  EXPECT_LT(rel(params_of(g, "vision"), vit), 0.005);
  EXPECT_LT(rel(vit, 412e6), 0.02);

  const double gemma_layers = kDepth * layer_params(kW, kMlp);
  EXPECT_LT(rel(gemma_layers, 1.98e9), 0.02);
  EXPECT_LT(rel(kVocab * kW, 527e6), 0.02);
  // The graph holds 17 full layers, the last layer's K/V projection and the embedding.
  const double in_graph = (kDepth - 1) * layer_params(kW, kMlp) + kW * 2 * kKvHeads * kHd +
                          kVocab * kW;
  EXPECT_LT(rel(params_of(g, "backbone"), in_graph), 0.005);

  const double expert_layers = kDepth * layer_params(kEw, kEmlp);
  EXPECT_LT(rel(params_of(g, "expert"), 312e6), 0.02);
  EXPECT_LT(rel(params_of(g, "expert"), expert_layers), 0.02);
}

TEST(Batch, TwoRequestsDoubleEveryCardsFlopsAndKeepParams) {
  for (const std::string& name : card_names(default_cards_dir())) {
    ModelCard c = card(name);
    RunShape one, two;
    two.batch = 2;
    OpGraph g1 = build_graph(c, one), g2 = build_graph(c, two);
    EXPECT_NEAR(g2.flops(), 2 * g1.flops(), 1e-9 * g1.flops()) << name;
    EXPECT_DOUBLE_EQ(g2.param_bytes(), g1.param_bytes()) << name;
    EXPECT_EQ(g2.size(), g1.size()) << name;
    EXPECT_EQ(g2.batch, 2);
  }
}

TEST(Batch, MultipliesGemmRowsAndAttentionBatch) {
  RunShape s;
  s.batch = 3;
  OpGraph g = build_graph(card("pi0_tiny"), s);
  OpGraph g1 = build_graph(card("pi0_tiny"), RunShape{});
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& a = g.op(int(i));
    const Op& b = g1.op(int(i));
    ASSERT_EQ(a.name, b.name);
    if (a.kind == OpKind::Gemm) {
      EXPECT_EQ(a.m, 3 * b.m) << a.name;
    }
    if (a.kind == OpKind::Attention) {
      EXPECT_EQ(a.batch, 3 * b.batch) << a.name;
    }
  }
}

TEST(Dtype, Fp32DoublesBytesButNotFlops) {
  RunShape bf, f32;
  f32.dtype = DType::F32;
  OpGraph a = build_graph(card("pi0_tiny"), bf), b = build_graph(card("pi0_tiny"), f32);
  EXPECT_DOUBLE_EQ(a.flops(), b.flops());
  EXPECT_DOUBLE_EQ(2 * a.param_bytes(), b.param_bytes());
  EXPECT_EQ(b.op(0).dtype, DType::F32);
}

TEST(Epilogues, GemmaBlocksFuseBiasResidualAndGateUp) {
  OpGraph g = build_graph(card("pi0_tiny"), RunShape{});
  int gate_up = 0, residual = 0, rope = 0, norms = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Prefix || o.block != 0) continue;
    if (o.epi.gate_up) {
      ++gate_up;
      EXPECT_EQ(o.epi.act, Activation::GeluTanh);
      EXPECT_EQ(o.n % 2, 0);
      EXPECT_DOUBLE_EQ(o.out_bytes, double(o.m) * (o.n / 2) * 2);
    }
    residual += o.epi.residual;
    rope += o.fn == OpFn::RoPE;
    norms += o.fn == OpFn::RMSNorm;
  }
  EXPECT_EQ(gate_up, 1);
  EXPECT_EQ(residual, 2);  // O proj and down proj
  EXPECT_EQ(rope, 1);
  EXPECT_EQ(norms, 2);     // before attention and before the FFN
}

TEST(Epilogues, SiglipHasBiasedQkvAndLlamaFamilyUsesSilu) {
  OpGraph g = build_graph(card("openvla"), RunShape{});
  bool vit_bias = false, silu = false;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.name == "siglip.b0.attn_qkv") vit_bias = o.epi.bias;
    if (o.name == "llm.b0.ffn_gate_up") silu = o.epi.act == Activation::Silu && o.epi.gate_up;
  }
  EXPECT_TRUE(vit_bias);
  EXPECT_TRUE(silu);
}

TEST(Pi05, AdaptiveNormGatesTheResidualsAndHasNoStateToken) {
  OpGraph g = build_graph(card("pi05"), RunShape{});
  EXPECT_EQ(g.suffix_tokens, g.chunk);
  int gated = 0, mods = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Action || o.step != 0) continue;
    gated += o.epi.gate;
    mods += o.name.find("_mod") != std::string::npos;
    if (o.name.find("_mod") != std::string::npos) {
      EXPECT_EQ(o.n, o.block >= 0 ? 3 * 1024 : 2048);
    }
  }
  EXPECT_EQ(gated, 2 * 18);
  EXPECT_EQ(mods, 2 * 18 + 1);
}

TEST(SmolVla, OddExpertLayersCrossAttendOnlyToThePrefix) {
  OpGraph g = build_graph(card("smolvla"), RunShape{});
  const int64_t S = g.prefix_tokens, T = g.suffix_tokens;
  EXPECT_EQ(S, 2 * 64 + 16 + 1);  // two views, prompt, state token
  int checked = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Action || o.kind != OpKind::Attention) continue;
    EXPECT_EQ(o.fn, OpFn::CrossAttention);
    EXPECT_EQ(o.kv_len, o.block % 2 == 0 ? S + T : S) << o.name;
    EXPECT_GE(o.kv_source, 0);
    ++checked;
  }
  EXPECT_EQ(checked, 10 * 16);
}

TEST(Gr00t, DitCrossAttendsOnEvenLayersOverFourSteps) {
  OpGraph g = build_graph(card("gr00t_n15"), RunShape{});
  EXPECT_EQ(g.steps, 4);
  EXPECT_EQ(g.suffix_tokens, 1 + 32 + 16);
  EXPECT_EQ(g.prefix_tokens, 64 + 32);
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Action || o.kind != OpKind::Attention) continue;
    EXPECT_EQ(o.fn, o.block % 2 == 0 ? OpFn::CrossAttention : OpFn::SelfAttention) << o.name;
    EXPECT_EQ(o.kv_len, o.block % 2 == 0 ? g.prefix_tokens : g.suffix_tokens) << o.name;
  }
}

TEST(OpenVla, DecodesSevenTokensWithAGrowingCacheAndSharedWeights) {
  OpGraph g = build_graph(card("openvla"), RunShape{});
  EXPECT_EQ(g.steps, 7);
  const int64_t S = g.prefix_tokens;
  EXPECT_EQ(S, 256 + 24);
  std::map<int, int64_t> kv_len_at_step;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage != Stage::Decode) continue;
    EXPECT_GE(o.step, 0);
    EXPECT_LT(o.step, 7);
    if (o.kind == OpKind::Attention) {
      EXPECT_EQ(o.q_len, 1);
      EXPECT_EQ(o.kv_cached, S);
      kv_len_at_step[o.step] = o.kv_len;
      EXPECT_EQ(int(g.preds(int(i)).size()), 2 + o.step) << o.name;  // rope, V, prefix, earlier
    }
  }
  ASSERT_EQ(kv_len_at_step.size(), 6u);  // step 0 is the prefill's own logits
  for (const auto& [t, len] : kv_len_at_step) EXPECT_EQ(len, S + t);
  // Decoding reuses the LLM's layers and embedding: only the final norm and LM head are new.
  const double new_weights = (4096.0 * 32064 + 4096) * 2;
  EXPECT_DOUBLE_EQ(g.param_bytes(),
                   g.param_bytes(Stage::Vision) + g.param_bytes(Stage::Prefix) + new_weights);
}

TEST(DiffusionPolicy, UnetStepsAreIdenticalConvGemms) {
  OpGraph g = build_graph(card("diffusion_policy"), RunShape{});
  EXPECT_EQ(g.steps, 100);
  std::map<int, double> per_step;
  int convs = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.stage == Stage::Action) per_step[o.step] += o.flops;
    convs += o.fn == OpFn::Conv;
  }
  ASSERT_EQ(per_step.size(), 100u);
  EXPECT_DOUBLE_EQ(per_step[0], per_step[99]);
  EXPECT_GT(convs, 100 * 20);
  // U-Net parameters of the [512, 1024, 2048] config: ~250M (the reference model is ~255M).
  EXPECT_GT(params_of(g, "unet", 2), 230e6);
  EXPECT_LT(params_of(g, "unet", 2), 270e6);
}

TEST(Driving, OrionWindowsAllButTheGlobalBlocksAndPlansInTheHead) {
  OpGraph g = build_graph(card("orion"), RunShape{});
  EXPECT_EQ(g.views, 6);
  int windowed = 0, global = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.component != "vision" || o.kind != OpKind::Attention) continue;
    EXPECT_EQ(o.batch, 6);
    EXPECT_EQ(o.q_len, 1600);
    (o.window > 0 ? windowed : global)++;
    if (o.window > 0) {
      EXPECT_DOUBLE_EQ(o.flops, 4.0 * 6 * 16 * 1600 * 256 * 64);
    }
  }
  EXPECT_EQ(global, 8);
  EXPECT_EQ(windowed, 16);
  EXPECT_GT(g.flops(Stage::Head), 0);
  EXPECT_EQ(g.blocks(Stage::Prefix), 32);
  EXPECT_EQ(g.prefix_tokens, 257 + 256 + 75);  // det (scene + ego) + map tokens + prompt (card)
}

// MindDrive runs one Qwen2-0.5B twice with two LoRA sets: the action-expert pass
// (weights_from: llm) costs a second prefill but no second set of parameters.
TEST(Driving, MindDriveActionPassReusesTheDecisionPassWeights) {
  const ModelCard c = card("minddrive");
  RunShape shape;
  shape.dtype = c.defaults.dtype;  // fp32 (fp32_infer=True)
  ASSERT_EQ(shape.dtype, DType::F32);
  OpGraph g = build_graph(c, shape);
  std::map<std::string, double> llm_ids;  // weight id -> bytes, decision pass
  double llm_flops = 0, action_flops = 0;
  int action_weighted = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.component == "llm") {
      llm_flops += o.flops;
      if (!o.weight_id.empty()) llm_ids[o.weight_id] = o.weight_bytes;
    }
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.component != "llm_action") continue;
    action_flops += o.flops;
    if (o.weight_id.empty()) continue;
    ++action_weighted;
    ASSERT_TRUE(llm_ids.count(o.weight_id)) << o.name << " has its own weights " << o.weight_id;
    EXPECT_EQ(o.weight_bytes, llm_ids[o.weight_id]) << o.name;
  }
  EXPECT_GT(action_weighted, 24 * 4);
  EXPECT_GT(llm_flops, 0);
  EXPECT_NEAR(action_flops / llm_flops, 1.0, 0.05);  // the same prefill, its own prompt
  // Qwen2-0.5B: 494 M parameters (config.json), counted once.
  EXPECT_LT(rel(g.param_bytes(Stage::Prefix) / 4, 494.0e6), 0.01);
}

// Where a GEMM's k is a concatenation, an explicit Copy joins the parts so that data flows
// (pi0's time MLP over [action embedding | time embedding]), and the suffix puts the state
// token before the action tokens (pi0.py embed_suffix).
TEST(DataFlow, Pi0TimeMlpReadsTheConcatOfActionAndTimeEmbeddings) {
  RunShape s = pi0_reference_shape();
  s.batch = 2;
  OpGraph g = build_graph(card("pi0"), s);
  std::map<std::string, int> id;
  for (size_t i = 0; i < g.size(); ++i) id[g.op(int(i)).name] = int(i);
  const int ain = id.at("expert.s3.action_in"), temb = id.at("expert.s3.time_embed");
  const int cat = id.at("expert.s3.action_time"), t1 = id.at("expert.s3.time_mlp_in");
  const Op& c = g.op(cat);
  EXPECT_EQ(c.fn, OpFn::Copy);
  EXPECT_EQ(c.rows, 2 * 63);
  EXPECT_EQ(c.width, 2 * int64_t(kEw));
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(g.preds(cat), (std::vector<int>{ain, temb}));
  EXPECT_EQ(g.preds(t1), (std::vector<int>{cat}));
  EXPECT_EQ(g.op(t1).k, c.width);
  EXPECT_EQ(g.op(temb).flops, 0);
  EXPECT_EQ(g.op(temb).weight_bytes, 0);
  EXPECT_TRUE(g.preds(temb).empty());
  // action_in's output feeds the concatenation, not a GEMM of another k.
  EXPECT_EQ(g.succs(ain), (std::vector<int>{cat}));
  // Suffix: state token first, then the actions; joined per sample.
  const int suffix = id.at("expert.s3.suffix");
  const std::vector<int> parts = g.preds(suffix);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(g.op(parts[0]).name, "expert.s3.state_proj");
  EXPECT_EQ(g.op(parts[1]).name, "expert.s3.time_mlp_out");
  EXPECT_EQ(g.op(suffix).batch, 2);
}

TEST(DataFlow, Gr00tActionEncoderReadsTheConcatOfActionAndTimeEncodings) {
  OpGraph g = build_graph(card("gr00t_n15"), RunShape{});
  std::map<std::string, int> id;
  for (size_t i = 0; i < g.size(); ++i) id[g.op(int(i)).name] = int(i);
  const int cat = id.at("action_head.s0.action_time");
  const int a2 = id.at("action_head.s0.action_enc2");
  EXPECT_EQ(g.preds(cat),
            (std::vector<int>{id.at("action_head.s0.action_enc1"), id.at("action_head.s0.time_pos")}));
  EXPECT_EQ(g.preds(a2), (std::vector<int>{cat}));
  EXPECT_EQ(g.op(cat).width, g.op(a2).k);
}

TEST(DataFlow, RopeOpsRotatePerHead) {
  RunShape s = pi0_reference_shape();
  s.batch = 3;
  OpGraph g = build_graph(card("pi0"), s);
  int n = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.fn != OpFn::RoPE) continue;
    ++n;
    EXPECT_EQ(o.head_dim, int64_t(kHd)) << o.name;
    EXPECT_EQ(o.batch, 3) << o.name;
    if (o.stage == Stage::Prefix && o.block == int(kDepth) - 1) {  // K only
      EXPECT_EQ(o.heads, 0) << o.name;
      EXPECT_EQ(o.width, int64_t(kKvHeads * kHd)) << o.name;
    } else {
      EXPECT_EQ(o.heads, int64_t(kHeads)) << o.name;
      EXPECT_EQ(o.kv_heads, int64_t(kKvHeads)) << o.name;
      EXPECT_EQ((o.heads + o.kv_heads) * o.head_dim, o.width) << o.name;
    }
  }
  EXPECT_EQ(n, int(kDepth) * 11);  // prefix layers + 10 steps of expert layers
}

// A component's own dtype holds whatever the run's is; the other components follow the run.
TEST(Dtype, ComponentDtypeOverridesTheRunsForItsOpsOnly) {
  const ModelCard c =
      load_card(std::string(VLASIM_SOURCE_DIR) + "/tests/data/cards/pi0_tiny_fp32_vision.yaml");
  const OpGraph plain = build_graph(card("pi0_tiny"), RunShape{});  // bf16 everywhere
  for (DType run : {DType::BF16, DType::F16}) {
    RunShape shape;
    shape.dtype = run;
    const OpGraph g = build_graph(c, shape);
    ASSERT_EQ(g.size(), plain.size());
    int vision = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const Op &o = g.op(int(i)), &p = plain.op(int(i));
      EXPECT_EQ(o.flops, p.flops) << o.name;
      if (o.component == "vision") {
        ++vision;
        EXPECT_EQ(o.dtype, DType::F32) << o.name;
        EXPECT_EQ(o.weight_bytes, 2 * p.weight_bytes) << o.name;  // 4 bytes instead of 2
        EXPECT_EQ(o.out_bytes, 2 * p.out_bytes) << o.name;
      } else {
        EXPECT_EQ(o.dtype, run) << o.name;
        EXPECT_EQ(o.weight_bytes, p.weight_bytes) << o.name;  // bf16 and fp16: 2 bytes
      }
    }
    EXPECT_GT(vision, 4 * 4);
  }
}

// Decoding reads the decoder's weights and cache, so it runs at the decoder's own dtype.
TEST(Dtype, ArDecodeFollowsItsDecodersDtype) {
  const ModelCard c =
      load_card(std::string(VLASIM_SOURCE_DIR) + "/tests/data/cards/pi0_tiny_fp32_decoder.yaml");
  const OpGraph g = build_graph(c, RunShape{});  // run at bf16
  int decode = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.component == "backbone" || o.component == "decode") {
      decode += o.component == "decode";
      EXPECT_EQ(o.dtype, DType::F32) << o.name;
    } else {
      EXPECT_EQ(o.dtype, DType::BF16) << o.name;
    }
  }
  EXPECT_GT(decode, 0);
}

TEST(Shape, ImpossibleShapesThrowConfigErrorNamingTheField) {
  ModelCard c = card("pi0");
  auto key_of = [&](RunShape s) -> std::string {
    try {
      build_graph(c, s);
    } catch (const ConfigError& e) {
      EXPECT_GT(e.line(), 0) << e.what();
      EXPECT_EQ(e.file(), c.file);
      return e.key();
    }
    return "(no error)";
  };
  RunShape s;
  s.views = 4;  // max 3
  EXPECT_EQ(key_of(s), "views");
  s = RunShape{};
  s.views = -1;
  EXPECT_EQ(key_of(s), "views");
  s = RunShape{};
  s.prompt = -5;
  EXPECT_EQ(key_of(s), "prompt");
  s = RunShape{};
  s.prompt = 49;  // max 48
  EXPECT_EQ(key_of(s), "prompt");
  s = RunShape{};
  s.steps = -1;
  EXPECT_EQ(key_of(s), "steps");
  s = RunShape{};
  s.chunk = -3;
  EXPECT_EQ(key_of(s), "chunk");
  s = RunShape{};
  s.batch = -2;
  EXPECT_EQ(key_of(s), "batch");
}

TEST(Shape, ZeroAndMinusOneFieldsTakeTheCardDefaults) {
  ModelCard c = card("pi0");
  OpGraph g = build_graph(c, RunShape{});
  EXPECT_EQ(g.views, c.defaults.views);
  EXPECT_EQ(g.prompt, c.defaults.prompt);
  EXPECT_EQ(g.chunk, c.defaults.chunk);
  EXPECT_EQ(g.steps, c.defaults.steps);
  EXPECT_EQ(g.prefix_tokens, c.defaults.views * 256 + c.defaults.prompt);
  EXPECT_EQ(g.suffix_tokens, c.defaults.chunk + 1);
}

TEST(Shape, DiffusionPolicyHorizonMustHalveThroughTheUnet) {
  RunShape s;
  s.chunk = 10;  // not divisible by 4
  EXPECT_THROW(build_graph(card("diffusion_policy"), s), ConfigError);
}

// DP-Cache on pi0 at 10 steps, window [2, 8), a full step every 2, keep 1: steps 3, 5 and 7
// run only blocks 0 and 17 of the expert plus one add of the kept change; steps 2, 4 and 6
// keep that change with one subtraction; every other op is the plain graph's.
TEST(DpCache, CachedStepsRunOnlyTheKeptBlocksAndAddBackTheChange) {
  RunShape plain;
  RunShape dp = plain;
  dp.dp_cache = DpCache{.start = 2, .end = 8, .interval = 2, .keep = 1};
  const OpGraph a = build_graph(card("pi0"), plain), b = build_graph(card("pi0"), dp);
  std::map<int, int> ops_a, ops_b;  // action ops per step
  std::map<int, double> flops_a, flops_b;
  int adds = 0, subs = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (const Op& o = a.op(int(i)); o.stage == Stage::Action) {
      ++ops_a[o.step];
      flops_a[o.step] += o.flops;
    }
  for (size_t i = 0; i < b.size(); ++i) {
    const Op& o = b.op(int(i));
    if (o.stage != Stage::Action) continue;
    ++ops_b[o.step];
    flops_b[o.step] += o.flops;
    if (o.name.ends_with("dp_cache_add")) {
      ++adds;
      EXPECT_TRUE(o.step == 3 || o.step == 5 || o.step == 7) << o.name;
    } else if (o.name.ends_with("dp_cache_delta")) {
      ++subs;
      EXPECT_EQ(o.fn, OpFn::Sub);
      EXPECT_TRUE(o.step == 2 || o.step == 4 || o.step == 6) << o.name;
    } else if (o.step == 3 || o.step == 5 || o.step == 7) {
      EXPECT_TRUE(o.block < 1 || o.block >= 17) << o.name << " runs in a cached step";
    }
  }
  EXPECT_EQ(adds, 3);
  EXPECT_EQ(subs, 3);
  for (int step = 0; step < 10; ++step) {
    if (step == 3 || step == 5 || step == 7) {
      EXPECT_LT(ops_b[step], ops_a[step] / 4) << step;
      EXPECT_LT(flops_b[step], flops_a[step] / 4) << step;
    } else {
      EXPECT_EQ(ops_b[step], ops_a[step] + (step == 2 || step == 4 || step == 6 ? 1 : 0)) << step;
    }
  }
  EXPECT_EQ(b.flops(Stage::Vision), a.flops(Stage::Vision));
  EXPECT_EQ(b.flops(Stage::Prefix), a.flops(Stage::Prefix));
  EXPECT_EQ(b.param_bytes(), a.param_bytes()) << "the skipped blocks' weights are still needed";
}

// DP-Cache on the other action heads: GR00T's DiT (blocks between the kept ends reused, as
// pi0's expert) and Diffusion Policy's U-Net (the levels below the kept top one reused, the
// DeepCache way): cached steps run a fraction of a full step's work, with one add each, and
// each full step before a cached one keeps the change with one subtraction.
TEST(DpCache, DitAndUnetHeadsReuseTheirDeepBlocksInCachedSteps) {
  for (const char* name : {"gr00t_n15", "diffusion_policy"}) {
    RunShape plain;
    plain.steps = 10;
    RunShape dp = plain;
    dp.dp_cache = DpCache{.start = 2, .end = 8, .interval = 2, .keep = 1};
    const OpGraph a = build_graph(card(name), plain), b = build_graph(card(name), dp);
    std::map<int, double> flops_a, flops_b;
    int adds = 0, subs = 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (const Op& o = a.op(int(i)); o.stage == Stage::Action) flops_a[o.step] += o.flops;
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& o = b.op(int(i));
      if (o.stage != Stage::Action) continue;
      flops_b[o.step] += o.flops;
      if (o.name.ends_with("dp_cache_add")) {
        ++adds;
        EXPECT_TRUE(o.step == 3 || o.step == 5 || o.step == 7) << name << " " << o.name;
      } else if (o.name.ends_with("dp_cache_delta")) {
        ++subs;
        EXPECT_TRUE(o.step == 2 || o.step == 4 || o.step == 6) << name << " " << o.name;
      }
    }
    EXPECT_EQ(adds, 3) << name;
    EXPECT_EQ(subs, 3) << name;
    for (int step = 0; step < 10; ++step)
      if (step == 3 || step == 5 || step == 7)
        EXPECT_LT(flops_b[step], flops_a[step] / 2) << name << " step " << step;
      else
        EXPECT_NEAR(flops_b[step], flops_a[step], 1e-6 * flops_a[step] + 1e6) << name << " step " << step;
    EXPECT_EQ(b.param_bytes(), a.param_bytes()) << name;
  }
}

TEST(DpCache, IsRefusedWhereItCannotApply) {
  RunShape s;
  s.dp_cache = DpCache{.start = 1, .end = 5};  // inside OpenVLA's 7 decoding steps
  try {
    build_graph(card("openvla"), s);
    ADD_FAILURE() << "a card without a diffusion or flow head took dp_cache";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("dp_cache applies to a diffusion or flow action head"), std::string::npos)
        << e.what();
  }
  s.dp_cache = DpCache{.start = 2, .end = 8, .keep = 3};  // a 3-level U-Net: keeping all reuses none
  try {
    build_graph(card("diffusion_policy"), s);
    ADD_FAILURE() << "keep 3 of a 3-level U-Net accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("keep 3 levels"), std::string::npos) << e.what();
  }
  s.dp_cache.keep = 9;  // pi0's expert has 18 blocks: nothing left between the kept ends
  EXPECT_THROW(build_graph(card("pi0"), s), ConfigError);
  s.dp_cache = DpCache{.start = 2, .end = 11};  // past the 10 steps
  EXPECT_THROW(build_graph(card("pi0"), s), ConfigError);
  s.dp_cache = DpCache{.start = 2, .end = 8, .interval = 1};
  EXPECT_THROW(build_graph(card("pi0"), s), ConfigError);
}

}  // namespace
}  // namespace vlasim
