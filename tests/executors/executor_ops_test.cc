// Every op kind the oneDNN executor runs, against the float64 reference on the same
// synthetic weights and inputs, in fp32 and bf16 (bf16 skips, naming the ISA, where this CPU
// cannot run it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "executors/onednn_executor.h"
#include "executors/reference.h"
#include "host_skip.h"
#include "tests/executors/graphs.h"

namespace vlasim {
namespace {

using testing::attention;
using testing::gemm;
using testing::rowwise;

using testing::rel_err;

struct Case {
  DType dtype;
  double tol;
};

class OpsTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { VLASIM_SKIP_UNLESS_CPU_RUNS(GetParam().dtype); }
  // Runs ops `ops` (default all) of `g` on both executors and returns the relative error of
  // op `out` (default the last op).
  double error(const OpGraph& g, std::vector<int> ops = {}, int out = -1,
               GateUpMode mode = GateUpMode::TwoMatmuls) {
    if (ops.empty()) ops = all_ops(g);
    if (out < 0) out = ops.back();
    ExecOptions opt;
    opt.dtype = GetParam().dtype;
    opt.seed = 11;
    OneDnnExecutor ex(opt, mode);
    ReferenceExecutor ref(opt);
    int a = ex.prepare(g, ops), b = ref.prepare(g, ops);
    ex.run(a);
    ex.run(a);  // steady state gives the same result
    ref.run(b);
    std::vector<float> x = ex.get_output(a, out), y = ref.get_output(b, out);
    EXPECT_EQ(x.size(), y.size());
    double maxref = 0;
    for (float v : y) maxref = std::max(maxref, std::fabs(static_cast<double>(v)));
    EXPECT_GT(maxref, 0.0) << "reference output is all zero";
    for (float v : x) EXPECT_TRUE(std::isfinite(v));
    return rel_err(x, y);
  }
  double tol() const { return GetParam().tol; }
};

OpGraph one(Op o) {
  OpGraph g;
  g.add(o);
  return g;
}

TEST_P(OpsTest, LinearPlain) { EXPECT_LT(error(one(gemm("l", 37, 70, 53))), tol()); }

TEST_P(OpsTest, LinearBatched) { EXPECT_LT(error(one(gemm("l", 5, 32, 16, {}, 3))), tol()); }

TEST_P(OpsTest, EveryActivationWithBias) {
  for (Activation a : {Activation::GeluTanh, Activation::GeluErf, Activation::Silu, Activation::Relu}) {
    Epilogue e;
    e.bias = true;
    e.act = a;
    EXPECT_LT(error(one(gemm("l", 19, 64, 40, e))), tol()) << to_string(a);
  }
}

TEST_P(OpsTest, ResidualAndGateFromPreds) {
  OpGraph g;
  int r = g.add(gemm("res", 16, 48, 24));
  int gt = g.add(gemm("gate", 16, 48, 24));
  int x = g.add(gemm("x", 16, 32, 24));
  Epilogue e;
  e.bias = true;
  e.act = Activation::Silu;
  e.residual = true;
  e.gate = true;
  int o = g.add(gemm("o", 16, 48, 32, e));
  g.depend(r, o, 0);
  g.depend(gt, o, 0);
  g.depend(x, o, 0);
  EXPECT_LT(error(g), tol());
  EXPECT_LT(error(g, {o}), tol());  // preds outside the segment become inputs
}

TEST_P(OpsTest, GateUpBothModes) {
  for (Activation a : {Activation::GeluTanh, Activation::Silu}) {
    OpGraph g;
    int r = g.add(gemm("res", 21, 40, 8));
    Epilogue e;
    e.gate_up = true;
    e.act = a;
    e.bias = true;
    e.residual = true;
    int o = g.add(gemm("gu", 21, 80, 40, e));
    g.depend(r, o, 0);
    EXPECT_LT(error(g, {}, -1, GateUpMode::TwoMatmuls), tol()) << to_string(a);
    EXPECT_LT(error(g, {}, -1, GateUpMode::OneMatmul), tol()) << to_string(a);
  }
}

TEST_P(OpsTest, PatchEmbed) {
  Op o = gemm("patch", 64, 96, 588);
  o.fn = OpFn::PatchEmbed;
  o.epi.bias = true;
  EXPECT_LT(error(one(o)), tol());
}

TEST_P(OpsTest, SharedWeightsAreOneBuffer) {
  OpGraph g;
  int a = g.add(gemm("a", 8, 16, 16));
  Op o = gemm("b", 8, 16, 16);
  o.weight_id = "a";
  int b = g.add(o);
  g.depend(a, b, 0);
  EXPECT_LT(error(g), tol());
}

// Self-attention fed by a fused QKV GEMM.
OpGraph self_attention(int64_t B, int64_t H, int64_t KV, int64_t hd, int64_t S, bool causal,
                       int64_t window) {
  OpGraph g;
  int qkv = g.add(gemm("qkv", S, (H + 2 * KV) * hd, 32, {}, B));
  int a = g.add(attention("attn", OpFn::SelfAttention, B, H, KV, hd, S, S, causal, window));
  g.depend(qkv, a, 0);
  return g;
}

TEST_P(OpsTest, AttentionMHA) { EXPECT_LT(error(self_attention(2, 4, 4, 16, 24, false, 0)), tol()); }
TEST_P(OpsTest, AttentionMQA) { EXPECT_LT(error(self_attention(1, 8, 1, 32, 40, false, 0)), tol()); }
TEST_P(OpsTest, AttentionGQA) { EXPECT_LT(error(self_attention(2, 6, 2, 16, 33, false, 0)), tol()); }
TEST_P(OpsTest, AttentionCausal) { EXPECT_LT(error(self_attention(1, 4, 2, 16, 29, true, 0)), tol()); }
TEST_P(OpsTest, AttentionWindowed) { EXPECT_LT(error(self_attention(2, 4, 4, 8, 32, false, 8)), tol()); }
TEST_P(OpsTest, AttentionCausalWindowed) {
  EXPECT_LT(error(self_attention(1, 4, 1, 8, 30, true, 7)), tol());
}

TEST_P(OpsTest, AttentionSeparateQKV) {
  const int64_t B = 2, H = 4, KV = 2, hd = 16, S = 12;
  OpGraph g;
  int q = g.add(gemm("q", S, H * hd, 32, {}, B));
  int k = g.add(gemm("k", S, KV * hd, 32, {}, B));
  int v = g.add(gemm("v", S, KV * hd, 32, {}, B));
  int a = g.add(attention("attn", OpFn::SelfAttention, B, H, KV, hd, S, S, true));
  for (int p : {q, k, v}) g.depend(p, a, 0);
  EXPECT_LT(error(g), tol());
}

// Action tokens attend to a prefix K/V cache plus their own keys (GQA/MQA), the cache
// produced inside or outside the segment.
TEST_P(OpsTest, CrossAttentionToCache) {
  for (int64_t KV : {1, 2}) {
    const int64_t H = 4, hd = 16, S = 40, T = 9;
    OpGraph g;
    Op c = gemm("prefix.qkv", S, (H + 2 * KV) * hd, 32);
    c.kv_cache = true;
    int cache = g.add(c);
    int qkv = g.add(gemm("suffix.qkv", T, (H + 2 * KV) * hd, 32));
    int a = g.add(attention("attn", OpFn::CrossAttention, 1, H, KV, hd, T, S + T, false, 0, cache, S));
    g.depend(cache, a, 0);
    g.depend(qkv, a, 0);
    EXPECT_LT(error(g), tol()) << "KV " << KV;
    EXPECT_LT(error(g, {qkv, a}), tol()) << "cache outside the segment, KV " << KV;
    EXPECT_LT(error(g, {a}), tol()) << "everything outside, KV " << KV;
  }
}

TEST_P(OpsTest, CrossAttentionCacheOnlyCausal) {
  const int64_t H = 2, hd = 8, S = 20, T = 6;
  OpGraph g;
  int kvop = g.add(gemm("kv", S, 2 * hd, 16));
  int q = g.add(gemm("q", T, H * hd, 16));
  int a = g.add(attention("attn", OpFn::CrossAttention, 1, H, 1, hd, T, S, true, 0, kvop, S));
  g.depend(q, a, 0);
  EXPECT_LT(error(g), tol());
}

TEST_P(OpsTest, RMSNorm) { EXPECT_LT(error(one(rowwise("n", OpKind::Norm, OpFn::RMSNorm, 13, 96))), tol()); }
TEST_P(OpsTest, LayerNorm) { EXPECT_LT(error(one(rowwise("n", OpKind::Norm, OpFn::LayerNorm, 13, 96))), tol()); }

TEST_P(OpsTest, RoPE) {
  Op r = rowwise("rope", OpKind::Elementwise, OpFn::RoPE, 2 * 10, 6 * 16);
  r.batch = 2;
  r.heads = 3;
  r.kv_heads = 1;
  r.head_dim = 16;
  EXPECT_LT(error(one(r)), tol());
  Op whole = rowwise("rope2", OpKind::Elementwise, OpFn::RoPE, 12, 32);
  EXPECT_LT(error(one(whole)), tol());
}

// RoPE rotates each head_dim chunk of the Q and K heads on its own (pairs (i, i + hd/2) of
// the chunk, position = row within the sample) and leaves V untouched: checked against the
// formula written out here, not only against the reference executor.
TEST_P(OpsTest, RoPERotatesEachHeadAtItsPosition) {
  const int64_t B = 2, T = 5, H = 2, KV = 1, hd = 8, C = (H + 2 * KV) * hd;
  Op r = rowwise("rope", OpKind::Elementwise, OpFn::RoPE, B * T, C);
  r.batch = B;
  r.heads = H;
  r.kv_heads = KV;
  r.head_dim = hd;
  OpGraph g = one(r);
  ExecOptions opt;
  opt.dtype = GetParam().dtype;
  OneDnnExecutor ex(opt);
  int a = ex.prepare(g, {0});
  std::vector<TensorInfo> in = ex.inputs(a);
  ASSERT_EQ(in.size(), 1u);
  std::vector<float> x(static_cast<size_t>(B * T * C));
  for (size_t i = 0; i < x.size(); ++i) x[i] = round_to(opt.dtype, std::sin(0.37f * float(i) + 0.1f));
  ex.set_input(a, in[0].key, x);
  ex.run(a);
  std::vector<float> y = ex.get_output(a, 0);
  double err = 0;
  for (int64_t row = 0; row < B * T; ++row) {
    const double pos = double(row % T);
    for (int64_t h = 0; h < H + 2 * KV; ++h)
      for (int64_t i = 0; i < hd; ++i) {
        const int64_t c = h * hd + i;
        double want = x[size_t(row * C + c)];
        if (h < H + KV) {  // Q and K heads rotate; V passes through
          const int64_t j = i % (hd / 2);
          const double th = pos * std::pow(10000.0, -2.0 * double(j) / double(hd));
          const double x0 = x[size_t(row * C + h * hd + j)], x1 = x[size_t(row * C + h * hd + hd / 2 + j)];
          want = i < hd / 2 ? x0 * std::cos(th) - x1 * std::sin(th) : x1 * std::cos(th) + x0 * std::sin(th);
        }
        err = std::max(err, std::fabs(want - y[size_t(row * C + c)]));
      }
  }
  EXPECT_LT(err, 2 * tol());
  EXPECT_LT(error(g), tol());
}

// Copy joins its preds: by rows sample by sample when batch > 1, by columns when the preds
// share the rows (pi0's [action | time] input of the time MLP).
TEST_P(OpsTest, ConcatByRowsPerSampleAndByColumns) {
  const int64_t B = 2;
  for (bool by_cols : {false, true}) {
    OpGraph g;
    int p0 = g.add(rowwise("p0", OpKind::Elementwise, OpFn::Copy, by_cols ? 6 : B * 1, by_cols ? 8 : 16));
    int p1 = g.add(rowwise("p1", OpKind::Elementwise, OpFn::Copy, by_cols ? 6 : B * 3, by_cols ? 24 : 16));
    Op c = rowwise("cat", OpKind::Elementwise, OpFn::Copy, by_cols ? 6 : B * 4, by_cols ? 32 : 16);
    c.batch = by_cols ? 1 : B;
    int cat = g.add(c);
    g.depend(p0, cat, 0);
    g.depend(p1, cat, 0);
    std::vector<OpPlan> plan = plan_segment(g, all_ops(g));
    ASSERT_EQ(plan[2].parts.size(), 2u);
    EXPECT_EQ(plan[2].concat_cols, by_cols);
    EXPECT_LT(error(g), tol()) << (by_cols ? "by columns" : "by rows");
    ExecOptions opt;
    opt.dtype = GetParam().dtype;
    OneDnnExecutor ex(opt);
    int a = ex.prepare(g, all_ops(g));
    ex.run(a);
    std::vector<float> x0 = ex.get_output(a, p0), x1 = ex.get_output(a, p1), y = ex.get_output(a, cat);
    if (by_cols) {
      for (int64_t r = 0; r < 6; ++r) {
        EXPECT_EQ(y[size_t(r * 32)], x0[size_t(r * 8)]);
        EXPECT_EQ(y[size_t(r * 32 + 8)], x1[size_t(r * 24)]);
        EXPECT_EQ(y[size_t(r * 32 + 31)], x1[size_t(r * 24 + 23)]);
      }
    } else {  // sample 1 starts at row 4 with p0's row 1, then p1's rows 3..5
      EXPECT_EQ(y[size_t(0 * 16)], x0[0]);
      EXPECT_EQ(y[size_t(1 * 16)], x1[0]);
      EXPECT_EQ(y[size_t(4 * 16)], x0[size_t(1 * 16)]);
      EXPECT_EQ(y[size_t(5 * 16 + 3)], x1[size_t(3 * 16 + 3)]);
      EXPECT_EQ(y[size_t(7 * 16 + 15)], x1[size_t(5 * 16 + 15)]);
    }
  }
}

TEST_P(OpsTest, Elementwise) {
  for (OpFn f : {OpFn::Add, OpFn::Mul, OpFn::Gelu, OpFn::Silu, OpFn::Copy, OpFn::Softmax}) {
    OpGraph g;
    int a = g.add(gemm("a", 7, 24, 8));
    int b = g.add(gemm("b", 7, 24, 8));
    int e = g.add(rowwise("e", OpKind::Elementwise, f, 7, 24));
    g.depend(a, e, 0);
    g.depend(b, e, 0);
    EXPECT_LT(error(g), tol()) << to_string(f);
  }
}

TEST_P(OpsTest, EulerUpdate) {
  OpGraph g;
  g.steps = 10;
  int x = g.add(rowwise("x", OpKind::Elementwise, OpFn::Copy, 50, 32));
  int v = g.add(gemm("v", 50, 32, 64));
  int e = g.add(rowwise("euler", OpKind::Elementwise, OpFn::EulerUpdate, 50, 32));
  g.depend(x, e, 0);
  g.depend(v, e, 0);
  EXPECT_LT(error(g), tol());
}

TEST_P(OpsTest, EmbeddingAndTransfer) {
  OpGraph g;
  Op emb = rowwise("emb", OpKind::Embedding, OpFn::Lookup, 9, 40);
  emb.vocab = 1000;
  emb.weight_id = "emb";
  int e = g.add(emb);
  Op t;
  t.name = "h2d";
  t.kind = OpKind::Transfer;
  t.fn = OpFn::HostToDevice;
  int tr = g.add(t);
  g.depend(e, tr, 0);
  EXPECT_LT(error(g, {}, e), tol());
  EXPECT_LT(error(g), tol());
}

TEST_P(OpsTest, SetInputChangesTheResult) {
  OpGraph g = one(gemm("l", 4, 8, 8));
  ExecOptions opt;
  opt.dtype = GetParam().dtype;
  OneDnnExecutor ex(opt);
  ReferenceExecutor ref(opt);
  int a = ex.prepare(g, {0}), b = ref.prepare(g, {0});
  std::vector<TensorInfo> in = ex.inputs(a);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].key, (TensorKey{0, kX}));
  std::vector<float> v(static_cast<size_t>(in[0].elems()), 0.5f);
  ex.set_input(a, in[0].key, v);
  ref.set_input(b, in[0].key, v);
  ex.run(a);
  ref.run(b);
  EXPECT_LT(rel_err(ex.get_output(a, 0), ref.get_output(b, 0)), tol());
  EXPECT_THROW(ex.set_input(a, in[0].key, std::vector<float>(3)), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OpsTest,
                         ::testing::Values(Case{DType::F32, 1e-5}, Case{DType::BF16, 1e-2}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(to_string(i.param.dtype));
                         });

}  // namespace
}  // namespace vlasim
