#include "tests/executors/graphs.h"

#include <algorithm>
#include <cmath>

namespace vlasim::testing {

Op gemm(const std::string& name, int64_t m, int64_t n, int64_t k, Epilogue e, int64_t batch) {
  Op o;
  o.name = name;
  o.kind = OpKind::Gemm;
  o.fn = OpFn::Linear;
  o.m = m;
  o.n = n;
  o.k = k;
  o.batch = batch;
  o.epi = e;
  o.flops = 2.0 * static_cast<double>(batch * m * n * k);
  o.weight_id = name;
  return o;
}

Op attention(const std::string& name, OpFn fn, int64_t batch, int64_t heads, int64_t kv_heads,
             int64_t head_dim, int64_t q_len, int64_t kv_len, bool causal, int64_t window,
             int kv_source, int64_t kv_cached) {
  Op o;
  o.name = name;
  o.kind = OpKind::Attention;
  o.fn = fn;
  o.batch = batch;
  o.heads = heads;
  o.kv_heads = kv_heads;
  o.head_dim = head_dim;
  o.q_len = q_len;
  o.kv_len = kv_len;
  o.causal = causal;
  o.window = window;
  o.kv_source = kv_source;
  o.kv_cached = kv_cached;
  o.flops = 4.0 * static_cast<double>(batch * heads * q_len * kv_len * head_dim);
  return o;
}

Op rowwise(const std::string& name, OpKind kind, OpFn fn, int64_t rows, int64_t width) {
  Op o;
  o.name = name;
  o.kind = kind;
  o.fn = fn;
  o.rows = rows;
  o.width = width;
  o.flops = 4.0 * static_cast<double>(rows * width);
  if (kind == OpKind::Norm) o.weight_id = name;
  return o;
}

OpGraph pi0_graph(const Pi0Dims& d) {
  OpGraph g;
  g.model = "pi0_hand";
  g.views = d.views;
  g.steps = d.steps;
  g.chunk = static_cast<int>(d.chunk);
  Stage stage = Stage::Vision;
  int block = -1, step = -1;
  auto add = [&](Op o, std::vector<int> deps) {
    o.stage = stage;
    o.block = block;
    o.step = step;
    int id = g.add(o);
    for (int p : deps) g.depend(p, id, 0);
    return id;
  };
  auto shared = [](Op o, const std::string& wid) {
    o.weight_id = wid;
    return o;
  };
  Epilogue bias;
  bias.bias = true;
  Epilogue bias_res = bias;
  bias_res.residual = true;
  Epilogue bias_gelu = bias;
  bias_gelu.act = Activation::GeluTanh;
  Epilogue res;
  res.residual = true;
  Epilogue geglu;
  geglu.gate_up = true;
  geglu.act = Activation::GeluTanh;

  // Vision: patch embedding, pre-LN ViT blocks, projection to the backbone width.
  const int64_t V = d.views * d.patches, vw = d.v_width, vhd = d.v_width / d.v_heads;
  Op patch = gemm("vision.patch", V, vw, d.patch_k, bias);
  patch.fn = OpFn::PatchEmbed;
  int x = add(patch, {});
  for (int b = 0; b < d.v_depth; ++b) {
    block = b;
    std::string p = "vision.b" + std::to_string(b) + ".";
    int n1 = add(rowwise(p + "ln1", OpKind::Norm, OpFn::LayerNorm, V, vw), {x});
    int qkv = add(gemm(p + "qkv", V, 3 * vw, vw, bias), {n1});
    int a = add(attention(p + "attn", OpFn::SelfAttention, d.views, d.v_heads, d.v_heads, vhd,
                          d.patches, d.patches),
                {qkv});
    int o = add(gemm(p + "o", V, vw, vw, bias_res), {x, a});
    int n2 = add(rowwise(p + "ln2", OpKind::Norm, OpFn::LayerNorm, V, vw), {o});
    int f1 = add(gemm(p + "fc1", V, d.v_mlp, vw, bias_gelu), {n2});
    x = add(gemm(p + "fc2", V, vw, d.v_mlp, bias_res), {o, f1});
  }
  block = -1;
  int vn = add(rowwise("vision.ln", OpKind::Norm, OpFn::LayerNorm, V, vw), {x});
  x = add(gemm("vision.proj", V, d.width, vw, bias), {vn});

  // Prefix: the prompt embedding and a Gemma-like MQA decoder over the image tokens.
  stage = Stage::Prefix;
  const int64_t S = V, W = d.width, H = d.heads, hd = d.head_dim, qkv_w = (H + 2) * hd;
  Op emb = rowwise("backbone.embed", OpKind::Embedding, OpFn::Lookup, d.prompt, W);
  emb.vocab = d.vocab;
  emb.weight_id = "backbone.embed";
  add(emb, {});
  std::vector<int> kv;
  for (int b = 0; b < d.depth; ++b) {
    block = b;
    std::string p = "backbone.b" + std::to_string(b) + ".";
    int n1 = add(rowwise(p + "norm1", OpKind::Norm, OpFn::RMSNorm, S, W), {x});
    int qkv = add(gemm(p + "qkv", S, qkv_w, W), {n1});
    Op rope = rowwise(p + "rope", OpKind::Elementwise, OpFn::RoPE, S, qkv_w);
    rope.heads = H;
    rope.kv_heads = 1;
    rope.head_dim = hd;
    rope.kv_cache = true;
    int r = add(rope, {qkv});
    kv.push_back(r);
    int a = add(attention(p + "attn", OpFn::SelfAttention, 1, H, 1, hd, S, S), {r});
    int o = add(gemm(p + "o", S, W, H * hd, res), {x, a});
    int n2 = add(rowwise(p + "norm2", OpKind::Norm, OpFn::RMSNorm, S, W), {o});
    int gu = add(gemm(p + "gate_up", S, 2 * d.mlp, W, geglu), {n2});
    x = add(gemm(p + "down", S, W, d.mlp, res), {o, gu});
  }

  // Action expert: per step, the action tokens cross-attend to each layer's K/V.
  stage = Stage::Action;
  block = -1;
  const int64_t T = d.chunk, EW = d.e_width;
  int xa = add(rowwise("expert.noise", OpKind::Elementwise, OpFn::Copy, T, d.action_dim), {});
  for (int s = 0; s < d.steps; ++s) {
    step = s;
    block = -1;
    std::string ps = "expert.s" + std::to_string(s) + ".";
    int h = add(shared(gemm(ps + "action_in", T, EW, d.action_dim, bias), "expert.action_in"), {xa});
    for (int b = 0; b < d.depth; ++b) {
      block = b;
      std::string p = ps + "b" + std::to_string(b) + ".";
      std::string w = "expert.b" + std::to_string(b) + ".";
      int n1 = add(shared(rowwise(p + "norm1", OpKind::Norm, OpFn::RMSNorm, T, EW), w + "norm1"), {h});
      int qkv = add(shared(gemm(p + "qkv", T, qkv_w, EW), w + "qkv"), {n1});
      Op rope = rowwise(p + "rope", OpKind::Elementwise, OpFn::RoPE, T, qkv_w);
      rope.heads = H;
      rope.kv_heads = 1;
      rope.head_dim = hd;
      int r = add(rope, {qkv});
      int a = add(attention(p + "attn", OpFn::CrossAttention, 1, H, 1, hd, T, S + T, false, 0,
                            kv[static_cast<size_t>(b)], S),
                  {kv[static_cast<size_t>(b)], r});
      int o = add(shared(gemm(p + "o", T, EW, H * hd, res), w + "o"), {h, a});
      int n2 = add(shared(rowwise(p + "norm2", OpKind::Norm, OpFn::RMSNorm, T, EW), w + "norm2"), {o});
      int gu = add(shared(gemm(p + "gate_up", T, 2 * d.e_mlp, EW, geglu), w + "gate_up"), {n2});
      h = add(shared(gemm(p + "down", T, EW, d.e_mlp, res), w + "down"), {o, gu});
    }
    block = -1;
    int fn = add(shared(rowwise(ps + "norm", OpKind::Norm, OpFn::RMSNorm, T, EW), "expert.norm"), {h});
    int v = add(shared(gemm(ps + "action_out", T, d.action_dim, EW, bias), "expert.action_out"), {fn});
    xa = add(rowwise(ps + "euler", OpKind::Elementwise, OpFn::EulerUpdate, T, d.action_dim), {xa, v});
  }
  return g;
}

Pi0Dims pi0_small_dims() {
  Pi0Dims d;
  d.views = 2;
  d.patches = 256;
  d.patch_k = 588;
  d.v_width = 384;
  d.v_heads = 6;
  d.v_mlp = 1536;
  d.v_depth = 12;
  d.width = 1024;
  d.heads = 8;
  d.head_dim = 128;
  d.mlp = 4096;
  d.prompt = 16;
  d.vocab = 32000;
  d.depth = 8;
  d.e_width = 512;
  d.e_mlp = 2048;
  d.chunk = 50;
  d.action_dim = 32;
  d.steps = 10;
  return d;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(a[i]) - ref[i]));
    den = std::max(den, std::fabs(static_cast<double>(ref[i])));
  }
  return den > 0 ? num / den : num;
}

}  // namespace vlasim::testing
