#include "models/emit.h"

#include <algorithm>

namespace vlasim::detail {

std::string Site::name(const std::string& leaf) const {
  std::string s = component;
  if (step >= 0) s += ".s" + std::to_string(step);
  if (block >= 0) s += ".b" + std::to_string(block);
  return s + "." + leaf;
}

namespace {
Op base_op(const Site& s, const std::string& leaf, OpKind kind, OpFn fn, DType dt) {
  Op o;
  o.name = s.name(leaf);
  o.kind = kind;
  o.fn = fn;
  o.stage = s.stage;
  o.step = s.step;
  o.block = s.block;
  o.component = s.component;
  o.dtype = dt;
  return o;
}
}  // namespace

std::string Ctx::wid(const Site& s, const std::string& leaf) const {
  auto it = weight_owner.find(s.component);
  std::string id = it == weight_owner.end() ? s.component : it->second;
  if (s.block >= 0) id += ".b" + std::to_string(s.block);
  return id + "." + leaf;
}

void Ctx::link(const std::vector<Dep>& deps, int to) {
  for (const Dep& d : deps) {
    if (d.op < 0) continue;
    g.depend(d.op, to, d.bytes >= 0 ? d.bytes : g.op(d.op).out_bytes);
  }
}

int Ctx::gemm(const Site& s, const std::string& leaf, OpFn fn, int64_t m, int64_t n, int64_t k,
              Epilogue epi, const std::vector<Dep>& deps, double weight_elems, const ParamSource& src) {
  const bool act_op = epi.act == Activation::None || epi.act == Activation::GeluTanh || epi.act == Activation::Silu;
  const bool splittable = fn == OpFn::Linear && !epi.gate_up && !epi.gate && act_op &&
                          (epi.bias || epi.act != Activation::None || epi.residual);
  if (splittable) ++sites["epilogue_fuse"];
  if (splittable && !pass("epilogue_fuse")) {
    // The unfused form: the bare product, then a bias add, an activation and a residual add.
    std::vector<Dep> in = deps;
    Dep residual = epi.residual ? in.at(1) : Dep(-1);
    if (epi.residual) in.erase(in.begin() + 1);
    int x = gemm(s, leaf, fn, m, n, k, Epilogue{}, in, weight_elems, src);
    if (epi.bias) {
      const int b = eltwise(s, leaf + "_bias", OpFn::BiasAdd, m, n, 1, 1, {x}, double(n));
      Op& o = g.op(b);
      o.param = src;
      if (o.param.weight_id.empty()) o.param.weight_id = g.op(x).weight_id;
      x = b;
    }
    if (epi.act != Activation::None)
      x = eltwise(s, leaf + "_act", epi.act == Activation::Silu ? OpFn::Silu : OpFn::Gelu, m, n,
                  epi.act == Activation::Silu ? 4 : 8, 1, {x});
    if (epi.residual) x = eltwise(s, leaf + "_residual", OpFn::Add, m, n, 1, 2, {x, residual});
    return x;
  }
  Op o = base_op(s, leaf, OpKind::Gemm, fn, shape.dtype);
  o.param = src;
  o.m = m;
  o.n = n;
  o.k = k;
  o.epi = epi;
  o.flops = 2.0 * m * n * k;
  double w = weight_elems >= 0 ? weight_elems : double(k) * n;
  if (epi.bias) w += n;
  o.weight_bytes = w * eb;
  o.weight_id = wid(s, leaf);
  const int64_t out_n = epi.gate_up ? n / 2 : n;
  o.out_bytes = double(m) * out_n * eb;
  o.bytes_read = double(m) * k * eb + o.weight_bytes;
  if (epi.residual) o.bytes_read += o.out_bytes;
  if (epi.gate) o.bytes_read += double(B()) * out_n * eb;  // per-sample gate, broadcast
  o.bytes_written = o.out_bytes;
  int id = g.add(std::move(o));
  link(deps, id);
  return id;
}

int Ctx::attention(const Site& s, const std::string& leaf, const AttnGeom& a,
                   const std::vector<Dep>& deps) {
  Op o = base_op(s, leaf, OpKind::Attention, a.fn, shape.dtype);
  o.batch = a.batch;
  o.heads = a.heads;
  o.kv_heads = a.kv_heads;
  o.head_dim = a.head_dim;
  o.q_len = a.q_len;
  o.kv_len = a.kv_len;
  o.window = a.window;
  o.causal = a.causal;
  o.kv_source = a.kv_source;
  o.kv_cached = a.kv_cached;
  // Keys each query sees: causal queries are the last q_len positions of kv_len.
  double kv_eff = double(a.kv_len);
  if (a.causal) kv_eff = double(a.kv_len - a.q_len) + double(a.q_len + 1) / 2.0;
  if (a.window > 0) kv_eff = std::min(kv_eff, double(a.window));
  o.flops = 4.0 * a.batch * a.heads * a.q_len * kv_eff * a.head_dim;
  const double q_bytes = double(a.batch) * a.heads * a.q_len * a.head_dim * eb;
  const double kv_all = 2.0 * a.batch * a.kv_heads * a.kv_len * a.head_dim * eb;
  o.kv_bytes = 2.0 * a.batch * a.kv_heads * a.kv_cached * a.head_dim * eb;
  o.bytes_read = q_bytes + kv_all;
  o.out_bytes = q_bytes;
  o.bytes_written = q_bytes;
  int id = g.add(std::move(o));
  link(deps, id);
  return id;
}

int Ctx::norm(const Site& s, const std::string& leaf, OpFn fn, int64_t rows, int64_t width,
              bool affine, bool bias, const std::vector<Dep>& deps, double flops_per_elem) {
  Op o = base_op(s, leaf, OpKind::Norm, fn, shape.dtype);
  o.rows = rows;
  o.width = width;
  o.flops = flops_per_elem * rows * width;
  if (affine) {
    o.weight_bytes = double(width) * (bias ? 2 : 1) * eb;
    o.weight_id = wid(s, leaf);
  }
  o.out_bytes = double(rows) * width * eb;
  o.bytes_read = o.out_bytes + o.weight_bytes;
  o.bytes_written = o.out_bytes;
  int id = g.add(std::move(o));
  link(deps, id);
  return id;
}

int Ctx::eltwise(const Site& s, const std::string& leaf, OpFn fn, int64_t rows, int64_t width,
                 double flops_per_elem, double inputs, const std::vector<Dep>& deps,
                 double weight_elems) {
  Op o = base_op(s, leaf, OpKind::Elementwise, fn, shape.dtype);
  o.rows = rows;
  o.width = width;
  o.flops = flops_per_elem * rows * width;
  if (weight_elems > 0) {
    o.weight_bytes = weight_elems * eb;
    o.weight_id = wid(s, leaf);
  }
  o.out_bytes = double(rows) * width * eb;
  o.bytes_read = inputs * o.out_bytes + o.weight_bytes;
  o.bytes_written = o.out_bytes;
  int id = g.add(std::move(o));
  link(deps, id);
  return id;
}

int Ctx::lookup(const Site& s, const std::string& leaf, int64_t rows, int64_t width,
                int64_t vocab, const std::vector<Dep>& deps) {
  Op o = base_op(s, leaf, OpKind::Embedding, OpFn::Lookup, shape.dtype);
  o.rows = rows;
  o.width = width;
  o.vocab = vocab;
  o.weight_bytes = double(vocab) * width * eb;
  o.weight_id = wid(s, leaf);
  o.out_bytes = double(rows) * width * eb;
  o.bytes_read = o.out_bytes + 4.0 * rows;  // gathered rows + int32 ids
  o.bytes_written = o.out_bytes;
  int id = g.add(std::move(o));
  link(deps, id);
  return id;
}

int Ctx::concat(const Site& s, const std::string& leaf, int64_t rows, int64_t width,
                const std::vector<Dep>& deps) {
  std::vector<Dep> live;
  for (const Dep& d : deps)
    if (d.op >= 0) live.push_back(d);
  if (live.size() == 1) return live[0].op;
  const int id = eltwise(s, leaf, OpFn::Copy, rows, width, 0, 1, live);
  g.op(id).batch = B();  // parts are joined sample by sample (executors/plan.h)
  return id;
}

bool Ctx::pass(const std::string& name) const {
  return shape.passes && std::find(shape.passes->begin(), shape.passes->end(), name) != shape.passes->end();
}

int split_proj(Ctx& c, const Site& s, const std::string& fused_leaf, const std::string& src_leaf,
               int64_t src_n, int64_t col0, const std::vector<std::pair<std::string, int64_t>>& blocks,
               int64_t rows, int64_t k, Epilogue pe, const std::vector<Dep>& deps) {
  // Where a GEMM over columns [c0, c0 + n) named `leaf` takes its parameters from.
  auto source = [&](const std::string& leaf, int64_t c0, int64_t n) {
    ParamSource p;
    if (c0 == 0 && n == src_n && leaf == src_leaf) return p;
    p.weight_id = c.wid(s, src_leaf);
    p.src_k = k;
    p.src_n = src_n;
    p.col0 = c0;
    return p;
  };
  int64_t total = 0;
  for (const auto& b : blocks) total += b.second;
  if (blocks.size() > 1) ++c.sites["qkv_fuse"];
  if (blocks.size() == 1 || c.pass("qkv_fuse")) {
    return c.gemm(s, fused_leaf, OpFn::Linear, rows, total, k, pe, deps, -1, source(fused_leaf, col0, total));
  }
  std::vector<Dep> parts;
  int64_t c0 = col0;
  for (const auto& [leaf, n] : blocks) {
    parts.push_back(c.gemm(s, leaf, OpFn::Linear, rows, n, k, pe, deps, -1, source(leaf, c0, n)));
    c0 += n;
  }
  return c.eltwise(s, fused_leaf + "_gather", OpFn::Copy, rows, total, 0, 1, parts);
}

AttnResult attn_part(Ctx& c, const Site& s, const AttnSpec& a, int x) {
  const double eb = c.eb;
  const std::string t = a.tag;
  const int64_t q_dim = a.heads * a.head_dim, kv_dim = a.kv_heads * a.head_dim;
  const bool local = a.kv == AttnSpec::Kv::Local || a.kv == AttnSpec::Kv::Joint;
  AttnResult r;

  int mod = -1;
  if (a.ada >= 0)
    mod = c.gemm(s, t + "_mod", OpFn::Linear, c.B(), a.ada_chunks * a.width, a.ada_width,
                 Epilogue{.bias = true}, {a.ada});
  const int nrm = c.norm(s, t + "_norm", a.norm, a.rows, a.width, a.norm_affine, a.norm_bias,
                         {x, mod});
  Epilogue pe{.bias = a.qkv_bias};
  int proj;
  int64_t roped;  // columns RoPE rotates
  if (a.kv_only) {
    // The K|V columns of the layer's Q|K|V parameters (last_layer_skip).
    proj = split_proj(c, s, t + "_kv", t + "_qkv", q_dim + 2 * kv_dim, q_dim,
                      {{t + "_k", kv_dim}, {t + "_v", kv_dim}}, a.rows, a.width, pe, {nrm});
    roped = kv_dim;
  } else if (local) {
    proj = split_proj(c, s, t + "_qkv", t + "_qkv", q_dim + 2 * kv_dim, 0,
                      {{t + "_q", q_dim}, {t + "_k", kv_dim}, {t + "_v", kv_dim}}, a.rows, a.width, pe,
                      {nrm});
    roped = q_dim + kv_dim;
  } else {
    proj = c.gemm(s, t + "_q", OpFn::Linear, a.rows, q_dim, a.width, pe, {nrm});
    roped = q_dim;
  }
  int qk = proj;  // op holding the (normalised, rotated) Q and local K
  if (a.qk_norm) {
    const int64_t heads = roped / a.head_dim;
    qk = c.norm(s, t + "_qk_norm", OpFn::RMSNorm, a.rows * heads, a.head_dim, true, false,
                {{proj, double(a.rows) * roped * eb}}, 4);
  }
  if (a.rope) {
    qk = c.eltwise(s, t + "_rope", OpFn::RoPE, a.rows, roped, 3, 1,
                   {{qk, double(a.rows) * roped * eb}});
    // Rotated per head of head_dim, positions counted per attention batch (executors/plan.h).
    Op& r = c.g.op(qk);
    r.head_dim = a.head_dim;
    r.heads = a.kv_only ? 0 : a.heads;  // heads 0: every column is a K head
    r.kv_heads = a.kv_only || local ? a.kv_heads : 0;
    r.batch = a.batch;
  }
  const double v_bytes = double(a.rows) * kv_dim * eb;
  if (local || a.kv_only) {
    r.kv = qk;
    if (a.cache_kv) c.g.op(r.kv).kv_bytes = 2.0 * v_bytes;
  }
  if (a.kv_only) {
    r.out = r.kv;
    if (r.kv != proj) c.link({{proj, v_bytes}}, r.kv);  // V passes through untouched
    return r;
  }

  int kvp = -1;
  if (a.kv == AttnSpec::Kv::CrossProj)
    kvp = split_proj(c, s, t + "_kv", t + "_kv", 2 * kv_dim, 0, {{t + "_k", kv_dim}, {t + "_v", kv_dim}},
                     c.B() * a.ext_tokens, a.ext_width, pe,
                     {a.ext_bytes > 0 ? Dep(a.ext, a.ext_bytes) : Dep(a.ext)});

  Ctx::AttnGeom g = a;
  g.fn = a.kv == AttnSpec::Kv::Local ? OpFn::SelfAttention : OpFn::CrossAttention;
  std::vector<Dep> deps{qk == proj ? Dep(proj) : Dep(qk, double(a.rows) * roped * eb)};
  if (local && qk != proj) deps.push_back({proj, v_bytes});
  switch (a.kv) {
    case AttnSpec::Kv::Local: break;
    case AttnSpec::Kv::Joint:
    case AttnSpec::Kv::CrossCached:
      g.kv_source = a.ext;
      g.kv_cached = a.ext_tokens;
      deps.push_back({a.ext, a.ext_bytes});
      for (const Dep& d : a.ext_more) deps.push_back(d);
      break;
    case AttnSpec::Kv::CrossProj:
      g.kv_source = kvp;
      g.kv_cached = a.kv_len;
      deps.push_back(kvp);
      break;
  }
  const int att = c.attention(s, t, g, deps);
  Epilogue oe{.bias = a.o_bias, .residual = true, .gate = a.ada_chunks == 3};
  r.out = c.gemm(s, t + "_o", OpFn::Linear, a.rows, a.width, q_dim, oe,
                 {att, x, {mod, double(c.B()) * a.width * eb}});
  return r;
}

int ffn_part(Ctx& c, const Site& s, const FfnSpec& f, int x) {
  const std::string t = f.tag;
  int mod = -1;
  if (f.ada >= 0)
    mod = c.gemm(s, t + "_mod", OpFn::Linear, c.B(), f.ada_chunks * f.width, f.ada_width,
                 Epilogue{.bias = true}, {f.ada});
  const int nrm = c.norm(s, t + "_norm", f.norm, f.rows, f.width, f.norm_affine, f.norm_bias,
                         {x, mod});
  int up;
  if (f.gated) ++c.sites["gateup_fuse"];
  if (f.gated && c.pass("gateup_fuse")) {
    up = c.gemm(s, t + "_gate_up", OpFn::Linear, f.rows, 2 * f.mlp, f.width,
                Epilogue{.bias = f.bias, .act = f.act, .gate_up = true}, {nrm});
  } else if (f.gated) {
    // Unfused: the gate and up halves of the fused parameters, then act(gate) * up.
    int half[2];
    for (int i = 0; i < 2; ++i) {
      ParamSource p;
      p.weight_id = c.wid(s, t + "_gate_up");
      p.src_k = f.width;
      p.src_n = 2 * f.mlp;
      p.col0 = i * f.mlp;
      half[i] = c.gemm(s, t + (i == 0 ? "_gate" : "_up"), OpFn::Linear, f.rows, f.mlp, f.width,
                       Epilogue{.bias = f.bias, .act = i == 0 ? f.act : Activation::None}, {nrm}, -1, p);
    }
    up = c.eltwise(s, t + "_gate_mul", OpFn::Mul, f.rows, f.mlp, 1, 2, {half[0], half[1]});
  } else
    up = c.gemm(s, t + "_up", OpFn::Linear, f.rows, f.mlp, f.width,
                Epilogue{.bias = f.bias, .act = f.act}, {nrm});
  Epilogue de{.bias = f.bias, .residual = true, .gate = f.ada_chunks == 3};
  return c.gemm(s, t + "_down", OpFn::Linear, f.rows, f.width, f.mlp, de,
                {up, x, {mod, double(c.B()) * f.width * c.eb}});
}

int64_t dim(const ConfigNode& c, const std::string& key) {
  ConfigNode n = c.required(key);
  long long v = n.as_int();
  if (v <= 0) n.fail("must be a positive integer, got " + n.as_string());
  return v;
}

int64_t dim(const ConfigNode& c, const std::string& key, int64_t fallback) {
  return c.optional(key).defined() ? dim(c, key) : fallback;
}

std::vector<int64_t> positive_ints(const ConfigNode& c, const std::string& key, size_t min_size,
                                   const std::string& too_few) {
  ConfigNode d = c.required(key);
  std::vector<ConfigNode> items = d.items();
  if (items.size() < min_size) d.fail(too_few);
  std::vector<int64_t> out;
  for (const ConfigNode& i : items) {
    long long v = i.as_int();
    if (v <= 0) i.fail("must be a positive integer, got " + i.as_string());
    out.push_back(v);
  }
  return out;
}

Activation activation(const ConfigNode& c, const std::string& key, Activation fallback) {
  ConfigNode n = c.optional(key);
  if (!n.defined()) return fallback;
  const std::string s = n.as_string();
  for (Activation a : {Activation::None, Activation::GeluTanh, Activation::GeluErf,
                       Activation::Silu, Activation::Relu})
    if (s == to_string(a)) return a;
  n.fail("unknown activation '" + s + "'; valid are: none, gelu_tanh, gelu_erf, silu, relu");
}

OpFn norm_fn(const ConfigNode& c, const std::string& key, OpFn fallback) {
  ConfigNode n = c.optional(key);
  if (!n.defined()) return fallback;
  const std::string s = n.as_string();
  for (OpFn f : {OpFn::RMSNorm, OpFn::LayerNorm, OpFn::GroupNorm})
    if (s == to_string(f)) return f;
  n.fail("unknown norm '" + s + "'; valid are: rmsnorm, layernorm, groupnorm");
}

int64_t square_head_dim(const ConfigNode& c, int64_t width, int64_t heads) {
  if (!c.optional("head_dim").defined()) {
    if (width % heads != 0)
      c.required("heads").fail("heads (" + std::to_string(heads) + ") must divide width (" +
                               std::to_string(width) + ")");
    return width / heads;
  }
  const int64_t hd = dim(c, "head_dim");
  if (hd * heads != width)
    c.required("head_dim").fail("heads * head_dim = " + std::to_string(heads * hd) +
                                " must equal width " + std::to_string(width));
  return hd;
}

int64_t kv_heads_of(const ConfigNode& c, int64_t heads) {
  const int64_t kv = dim(c, "kv_heads", heads);
  if (heads % kv != 0)
    c.required("kv_heads").fail("kv_heads (" + std::to_string(kv) + ") must divide heads (" +
                                std::to_string(heads) + ")");
  return kv;
}

std::vector<Tensor> inputs_of(const Ctx& c, const ConfigNode& n) {
  std::vector<Tensor> out;
  ConfigNode in = n.optional("inputs");
  if (!in.defined()) {
    if (!c.order.empty()) out.push_back(c.outputs.at(c.order.back()));
    return out;
  }
  for (const ConfigNode& item : in.items()) {
    const std::string name = item.as_string();
    auto it = c.outputs.find(name);
    if (it == c.outputs.end())
      item.fail("'" + name + "' is not an earlier component; earlier components are: " +
                join_names(c.order));
    out.push_back(it->second);
  }
  return out;
}

}  // namespace vlasim::detail
