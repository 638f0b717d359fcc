// Transformer-based component builders: vit, encoder, projector, decoder, expert, dit,
// ar_decode, qtformer, head.
#include <algorithm>
#include <set>

#include "models/emit.h"

namespace vlasim::detail {

namespace {

// Multi-head self-attention of an encoder block: `batch` samples of `tokens` tokens
// (rows = batch * tokens), bias on the projections when `bias`.
AttnSpec encoder_attn(int64_t rows, int64_t width, int64_t heads, int64_t head_dim, OpFn norm,
                      bool bias, int64_t batch, int64_t tokens) {
  AttnSpec a;
  a.rows = rows;
  a.width = width;
  a.heads = a.kv_heads = heads;
  a.head_dim = head_dim;
  a.norm = norm;
  a.norm_bias = norm == OpFn::LayerNorm;
  a.qkv_bias = a.o_bias = bias;
  a.batch = batch;
  a.q_len = a.kv_len = tokens;
  return a;
}

// Attention over `rows` tokens of `batch` samples with a decoder's dimensions and options
// (q_len and kv_len are the caller's).
AttnSpec decoder_attn(const KvCache& k, int64_t rows, int64_t batch) {
  AttnSpec a;
  a.rows = rows;
  a.width = k.width;
  a.heads = k.heads;
  a.kv_heads = k.kv_heads;
  a.head_dim = k.head_dim;
  a.norm = k.norm;
  a.norm_bias = k.norm == OpFn::LayerNorm;
  a.qkv_bias = k.qkv_bias;
  a.qk_norm = k.qk_norm;
  a.rope = k.rope;
  a.batch = batch;
  return a;
}

std::string str(int64_t v) { return std::to_string(v); }

// The single input of a component (several inputs are concatenated along tokens and must
// share a width); fails at `inputs` when there is none.
Tensor token_input(Ctx& c, const ConfigNode& n, const Site& s) {
  std::vector<Tensor> in = inputs_of(c, n);
  if (in.empty()) n.fail("needs an input component (set 'inputs' or put it after one)");
  if (in.size() == 1) return in[0];
  Tensor t{-1, 0, in[0].width, ""};
  std::vector<Dep> deps;
  for (const Tensor& x : in) {
    if (x.width != t.width)
      n.required("inputs").fail("inputs concatenated along tokens must share a width; '" +
                                x.component + "' has " + str(x.width) + ", '" +
                                in[0].component + "' has " + str(t.width));
    t.tokens += x.tokens;
    deps.push_back(x.op);
  }
  t.op = c.concat(s, "concat", c.B() * t.tokens, t.width, deps);
  return t;
}

void require_width(const ConfigNode& n, const std::string& key, int64_t want,
                   const Tensor& in) {
  if (want != in.width)
    n.required(key).fail("is " + str(want) + " but input '" + in.component + "' has width " +
                         str(in.width));
}

std::vector<int64_t> dims_list(const ConfigNode& n, const std::string& key) {
  return positive_ints(n, key, 2, "needs at least two sizes (input and output)");
}

}  // namespace

void build_vit(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const int64_t image = dim(n, "image_size"), patch = dim(n, "patch");
  if (image % patch != 0)
    n.required("patch").fail("must divide image_size " + str(image));
  const int64_t ch = dim(n, "channels", 3), w = dim(n, "width"), depth = dim(n, "depth");
  const int64_t heads = dim(n, "heads"), hd = square_head_dim(n, w, heads), mlp = dim(n, "mlp");
  const Activation act = activation(n, "act", Activation::GeluTanh);
  const bool gated = n.get_bool("gated", false), bias = n.get_bool("bias", true);
  const OpFn nf = norm_fn(n, "norm", OpFn::LayerNorm);
  const bool rope = n.get_bool("rope", false);
  const int64_t window = n.get_count("window", 0, 0);
  std::set<int64_t> global;
  if (ConfigNode gb = n.optional("global_blocks"); gb.defined())
    for (const ConfigNode& i : gb.items()) {
      long long b = i.as_int();
      if (b < 0 || b >= depth) i.fail("block index must be in [0, depth=" + str(depth) + ")");
      global.insert(b);
    }
  const int64_t grid = image / patch, ps = dim(n, "pixel_shuffle", 1);
  if (grid % ps != 0)
    n.required("pixel_shuffle").fail("must divide the patch grid " + str(grid));
  const int64_t P = grid * grid, V = c.shape.views, rows = c.B() * V * P;
  const bool ln = nf == OpFn::LayerNorm;

  Site s{stage, -1, -1, name};
  int x = c.gemm(s, "patch_embed", OpFn::PatchEmbed, rows, w, ch * patch * patch,
                 Epilogue{.bias = true}, {});
  if (n.get_bool("pos_embed", true)) x = c.eltwise(s, "pos_embed", OpFn::Add, rows, w, 1, 1, {x}, P * w);
  for (int64_t b = 0; b < depth; ++b) {
    s.block = int(b);
    AttnSpec a = encoder_attn(rows, w, heads, hd, nf, bias, c.B() * V, P);
    a.rope = rope;
    a.window = window > 0 && !global.count(b) ? window : 0;
    x = attn_part(c, s, a, x).out;
    FfnSpec f{.rows = rows, .width = w, .mlp = mlp, .gated = gated, .act = act, .norm = nf,
              .norm_bias = ln, .bias = bias};
    x = ffn_part(c, s, f, x);
  }
  s.block = -1;
  if (n.get_bool("final_norm", true)) x = c.norm(s, "final_norm", nf, rows, w, true, ln, {x});
  if (ps > 1)
    x = c.eltwise(s, "pixel_shuffle", OpFn::Copy, rows / (ps * ps), w * ps * ps, 0, 1, {x});
  c.outputs[name] = {x, V * P / (ps * ps), w * ps * ps, name};
}

void build_encoder(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const int64_t w = dim(n, "width"), depth = dim(n, "depth"), heads = dim(n, "heads");
  const int64_t hd = square_head_dim(n, w, heads), mlp = dim(n, "mlp");
  const Activation act = activation(n, "act", Activation::GeluTanh);
  const bool gated = n.get_bool("gated", false), bias = n.get_bool("bias", true);
  const OpFn nf = norm_fn(n, "norm", OpFn::LayerNorm);
  const bool ln = nf == OpFn::LayerNorm;
  Site s{stage, -1, -1, name};
  Tensor in = token_input(c, n, s);
  require_width(n, "width", w, in);
  const int64_t rows = c.B() * in.tokens;
  int x = in.op;
  if (n.get_bool("input_norm", false)) x = c.norm(s, "input_norm", nf, rows, w, true, ln, {x});
  for (int64_t b = 0; b < depth; ++b) {
    s.block = int(b);
    AttnSpec a = encoder_attn(rows, w, heads, hd, nf, bias, c.B(), in.tokens);
    a.rope = n.get_bool("rope", false);
    a.causal = n.get_bool("causal", false);
    x = attn_part(c, s, a, x).out;
    FfnSpec f{.rows = rows, .width = w, .mlp = mlp, .gated = gated, .act = act, .norm = nf,
              .norm_bias = ln, .bias = bias};
    x = ffn_part(c, s, f, x);
  }
  c.outputs[name] = {x, in.tokens, w, name};
}

void build_projector(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const std::vector<int64_t> dims = dims_list(n, "dims");
  const Activation act = activation(n, "act", Activation::GeluTanh);
  const bool bias = n.get_bool("bias", true);
  const std::string norm = n.get_string("norm", "none");
  Site s{stage, -1, -1, name};
  // Several inputs are concatenated along channels (OpenVLA's DINOv2 + SigLIP features).
  std::vector<Tensor> in = inputs_of(c, n);
  if (in.empty()) n.fail("needs an input component (set 'inputs' or put it after one)");
  int64_t width = 0;
  std::vector<Dep> deps;
  for (const Tensor& t : in) {
    if (t.tokens != in[0].tokens)
      n.required("inputs").fail("inputs concatenated along channels must have the same tokens; '" +
                                t.component + "' has " + str(t.tokens) + ", '" +
                                in[0].component + "' has " + str(in[0].tokens));
    width += t.width;
    deps.push_back(t.op);
  }
  if (width != dims[0])
    n.required("dims").fail("first size " + str(dims[0]) + " must equal the input width " +
                            str(width));
  const int64_t rows = c.B() * in[0].tokens;
  int x = c.concat(s, "concat", rows, width, deps);
  if (norm != "none")
    x = c.norm(s, "norm", norm_fn(n, "norm", OpFn::LayerNorm), rows, width, true, true, {x});
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    Epilogue e{.bias = bias, .act = i + 2 < dims.size() ? act : Activation::None};
    x = c.gemm(s, "fc" + std::to_string(i), OpFn::Linear, rows, dims[i + 1], dims[i], e, {x});
  }
  c.outputs[name] = {x, in[0].tokens, dims.back(), name};
}

void build_decoder(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  KvCache k;
  k.component = name;
  k.dtype = c.shape.dtype;
  k.width = dim(n, "width");
  const int64_t depth = dim(n, "depth");
  k.heads = dim(n, "heads");
  k.kv_heads = kv_heads_of(n, k.heads);
  if (!n.optional("head_dim").defined() && k.width % k.heads != 0)
    n.required("heads").fail("must divide width when head_dim is not given");
  k.head_dim = dim(n, "head_dim", k.width / k.heads);
  k.mlp = dim(n, "mlp");
  k.act = activation(n, "act", Activation::Silu);
  k.gated = n.get_bool("gated", true);
  k.norm = norm_fn(n, "norm", OpFn::RMSNorm);
  k.qkv_bias = n.get_bool("qkv_bias", false);
  k.qk_norm = n.get_bool("qk_norm", false);
  k.rope = n.get_bool("rope", true);
  k.vocab = dim(n, "vocab");
  const bool causal = n.get_bool("causal", false);
  // last_layer_skip: the last layer computes only the K/V an expert reads (kv_only_last in the
  // card puts the pass in the card's defaults).
  const bool skippable = n.get_bool("kv_only_last", false) ||
                         std::find(c.skippable_decoders.begin(), c.skippable_decoders.end(), name) !=
                             c.skippable_decoders.end();
  if (skippable) ++c.sites["last_layer_skip"];
  const bool kv_only_last = skippable && c.pass("last_layer_skip");
  const int64_t st = n.get_count("state_tokens", 0, 0);
  const int64_t state_dim = st > 0 ? dim(n, "state_dim") : 0;
  const int64_t w = k.width, B = c.B();

  Site s{stage, -1, -1, name};
  std::vector<Dep> parts;
  int64_t S = 0;
  for (const Tensor& t : inputs_of(c, n)) {
    if (t.width != w)
      n.required("width").fail("is " + str(w) + " but input '" + t.component +
                               "' has width " + str(t.width));
    S += t.tokens;
    parts.push_back(t.op);
  }
  const int64_t P = c.shape.prompt;
  if (P > 0) parts.push_back(c.lookup(s, "embed", B * P, w, k.vocab, {}));
  if (st > 0)
    parts.push_back(c.gemm(s, "state_proj", OpFn::Linear, B * st, w, state_dim,
                           Epilogue{.bias = true}, {}));
  S += P + st;
  if (S == 0) n.fail("has no tokens: no inputs, empty prompt and no state tokens");
  const int64_t rows = B * S;
  int x = c.concat(s, "concat", rows, w, parts);
  for (int64_t b = 0; b < depth; ++b) {
    s.block = int(b);
    AttnSpec a = decoder_attn(k, rows, B);
    a.q_len = a.kv_len = S;
    a.causal = causal;
    a.cache_kv = true;
    a.kv_only = kv_only_last && b + 1 == depth;
    AttnResult r = attn_part(c, s, a, x);
    k.kv_ops.push_back(r.kv);
    if (a.kv_only) break;
    FfnSpec f{.rows = rows, .width = w, .mlp = k.mlp, .gated = k.gated, .act = k.act,
              .norm = k.norm, .norm_bias = a.norm_bias};
    x = ffn_part(c, s, f, r.out);
  }
  s.block = -1;
  k.final_in = x;
  if (n.get_bool("final_norm", false))
    x = c.norm(s, "final_norm", k.norm, rows, w, true, k.norm == OpFn::LayerNorm, {x});
  k.tokens = S;
  c.caches[name] = k;
  c.outputs[name] = {x, S, w, name};
  if (c.prefix_tokens == 0) c.prefix_tokens = S;
}

namespace {
// The decoder named by key `key` of n (default: the latest decoder).
const KvCache& find_cache(const Ctx& c, const ConfigNode& n, const std::string& key) {
  std::vector<std::string> names;
  for (const auto& [nm, kc] : c.caches) names.push_back(nm);
  ConfigNode p = n.optional(key);
  if (!p.defined()) {
    for (auto it = c.order.rbegin(); it != c.order.rend(); ++it)
      if (c.caches.count(*it)) return c.caches.at(*it);
    n.fail("needs an earlier 'decoder' component to attend to");
  }
  auto it = c.caches.find(p.as_string());
  if (it == c.caches.end())
    p.fail("'" + p.as_string() + "' is not an earlier decoder; decoders are: " +
           join_names(names));
  return it->second;
}

void require_equal(const ConfigNode& n, const std::string& key, int64_t v, int64_t want,
                   const std::string& what) {
  if (v != want)
    n.required(key).fail("is " + str(v) + " but must equal " + what + " (" + str(want) + ")");
}
}  // namespace

namespace {

// DP-Cache (RunShape::dp_cache) over a stack of `depth` blocks: the blocks [keep,
// depth - keep) that a cached step replaces by the change they made at the last full step.
// Marks the cache as used when it is on; refuses (at `depth`) a keep that leaves none.
std::pair<int64_t, int64_t> dp_cache_deep_blocks(Ctx& c, const ConfigNode& n, const std::string& name,
                                                 int64_t depth) {
  const DpCache& dc = c.shape.dp_cache;
  const int64_t first = dc.keep, end = depth - dc.keep;
  if (dc.on() && first >= end)
    n.required("depth").fail("dp_cache keep " + std::to_string(dc.keep) + " at each end leaves none of the " +
                             std::to_string(depth) + " blocks of '" + name + "' to reuse");
  if (dc.on()) c.dp_cache_used = true;
  return {first, end};
}

// The expert's input at one denoising step, the suffix of `B` samples of `T` = `H` + `st` tokens:
// the state token (when `st` > 0), then the action tokens of `prev` conditioned on the time,
// through an MLP over both (concat_mlp) or, when `ada`, by the time MLP's output `*cond` (adaRMS).
int expert_suffix(Ctx& c, const Site& s, int64_t B, int64_t H, int64_t T, int64_t w, int64_t st,
                  int64_t state_dim, int64_t action_dim, int prev, bool ada, int* cond) {
  std::vector<Dep> parts;
  // pi0 embed_suffix: the state token comes first, then the action tokens (the suffix
  // concatenation stacks its parts in op order, per sample).
  if (st > 0)
    parts.push_back(c.gemm(s, "state_proj", OpFn::Linear, B * st, w, state_dim,
                           Epilogue{.bias = true}, {}));
  const int ain = c.gemm(s, "action_in", OpFn::Linear, B * H, w, action_dim,
                         Epilogue{.bias = true}, {prev});
  if (ada) {
    const int t1 = c.gemm(s, "time_mlp_in", OpFn::Linear, B, w, w,
                          Epilogue{.bias = true, .act = Activation::Silu}, {});
    *cond = c.gemm(s, "time_mlp_out", OpFn::Linear, B, w, w,
                   Epilogue{.bias = true, .act = Activation::Silu}, {t1});
    parts.push_back(ain);
  } else {
    // pi0: MLP over concat[action embedding, sinusoidal time embedding repeated over the
    // chunk] (pi0.py embed_suffix): the time embedding is an input tensor (no parameters,
    // no FLOPs counted), the concatenation a copy into one [B H, 2 w] buffer.
    const int temb = c.eltwise(s, "time_embed", OpFn::Copy, B * H, w, 0, 0, {});
    c.g.op(temb).const_rows = true;  // one time value per step, the same for every token
    const int cat = c.concat(s, "action_time", B * H, 2 * w, {ain, temb});
    const int t1 = c.gemm(s, "time_mlp_in", OpFn::Linear, B * H, w, 2 * w,
                          Epilogue{.bias = true, .act = Activation::Silu}, {cat});
    parts.push_back(c.gemm(s, "time_mlp_out", OpFn::Linear, B * H, w, w,
                           Epilogue{.bias = true}, {t1}));
  }
  return c.concat(s, "suffix", B * T, w, parts);
}

}  // namespace

void build_expert(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const KvCache& kc = find_cache(c, n, "prefix");
  const int64_t w = dim(n, "width"), depth = dim(n, "depth"), heads = dim(n, "heads");
  const int64_t kvh = kv_heads_of(n, heads), hd = dim(n, "head_dim"), mlp = dim(n, "mlp");
  require_equal(n, "depth", depth, int64_t(kc.kv_ops.size()), "the prefix decoder's depth");
  require_equal(n, "heads", heads, kc.heads, "the prefix decoder's heads");
  require_equal(n, "kv_heads", kvh, kc.kv_heads, "the prefix decoder's kv_heads");
  require_equal(n, "head_dim", hd, kc.head_dim, "the prefix decoder's head_dim");
  const Activation act = activation(n, "act", Activation::GeluTanh);
  const bool gated = n.get_bool("gated", true), rope = n.get_bool("rope", true);
  const OpFn nf = norm_fn(n, "norm", OpFn::RMSNorm);
  const int64_t action_dim = dim(n, "action_dim");
  const int64_t st = n.get_count("state_tokens", 0, 0);
  const int64_t state_dim = st > 0 ? dim(n, "state_dim") : 0;
  const int64_t cross_every = n.get_count("cross_every", 0, 0);
  const std::string time = n.get_string("time", "concat_mlp");
  if (time != "concat_mlp" && time != "adarms")
    n.required("time").fail("unknown time conditioning '" + time +
                            "'; valid are: concat_mlp, adarms");
  const bool ada = time == "adarms";

  const int64_t B = c.B(), H = c.shape.chunk, T = H + st, S = kc.tokens;
  const int64_t kv_dim = kvh * hd;
  const double cache_bytes = 2.0 * B * S * kv_dim * c.eb;
  c.suffix_tokens = T;
  // DP-Cache: the deep blocks of a cached step are replaced by the change they made at the
  // last full step, kept as `delta`.
  const DpCache& dc = c.shape.dp_cache;
  const auto [deep_first, deep_end] = dp_cache_deep_blocks(c, n, name, depth);
  int delta = -1;
  int prev = -1;
  const size_t before_steps = c.g.size();
  for (int step = 0; step < c.shape.steps; ++step) {
    if (step == 1) c.g.check_room(size_t(c.shape.steps - 1) * (c.g.size() - before_steps));
    Site s{stage, step, -1, name};
    const bool cached = dc.cached(step);
    // A full step in the window whose next step is cached keeps the deep blocks' change.
    const bool keeps = dc.on() && !cached && dc.cached(step + 1);
    int deep_in = -1;
    int cond = -1;
    int x = expert_suffix(c, s, B, H, T, w, st, state_dim, action_dim, prev, ada, &cond);
    for (int64_t l = 0; l < depth; ++l) {
      s.block = int(l);
      if (l == deep_first && (cached || keeps)) deep_in = x;
      if (cached && l >= deep_first && l < deep_end) {
        if (l == deep_first) x = c.eltwise(s, "dp_cache_add", OpFn::Add, B * T, w, 1, 2, {delta, x});
        continue;
      }
      const int kv = kc.kv_ops[size_t(l)];
      c.g.op(kv).kv_cache = true;
      AttnSpec a;
      a.rows = B * T;
      a.width = w;
      a.heads = heads;
      a.kv_heads = kvh;
      a.head_dim = hd;
      a.norm = nf;
      a.rope = rope;
      a.batch = B;
      a.q_len = T;
      a.ext = kv;
      a.ext_tokens = S;
      a.ext_bytes = cache_bytes;
      if (cross_every > 0 && l % cross_every != 0) {
        // SmolVLA cross layer: K/V re-projected from the prefix's cached K/V every step.
        a.kv = AttnSpec::Kv::CrossProj;
        a.ext_width = kv_dim;
        a.kv_len = S;
      } else {
        a.kv = AttnSpec::Kv::Joint;
        a.kv_len = S + T;
      }
      if (ada) {
        a.ada = cond;
        a.ada_width = w;
        a.ada_chunks = 3;
      }
      x = attn_part(c, s, a, x).out;
      FfnSpec f{.rows = B * T, .width = w, .mlp = mlp, .gated = gated, .act = act, .norm = nf};
      if (ada) {
        f.ada = cond;
        f.ada_width = w;
        f.ada_chunks = 3;
      }
      x = ffn_part(c, s, f, x);
      if (keeps && l == deep_end - 1) delta = c.eltwise(s, "dp_cache_delta", OpFn::Sub, B * T, w, 1, 2, {deep_in, x});
    }
    s.block = -1;
    int mod = -1;
    if (ada)
      mod = c.gemm(s, "final_mod", OpFn::Linear, B, 2 * w, w, Epilogue{.bias = true}, {cond});
    const int fn = c.norm(s, "final_norm", nf, B * T, w, true, false, {x, mod});
    const int out = c.gemm(s, "action_out", OpFn::Linear, B * H, action_dim, w,
                           Epilogue{.bias = true}, {{fn, double(B * H * w) * c.eb}});
    prev = c.eltwise(s, "euler", OpFn::EulerUpdate, B * H, action_dim, 2, 2, {out, prev});
  }
  c.outputs[name] = {prev, H, action_dim, name};
}

void build_dit(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const int64_t w = dim(n, "width"), depth = dim(n, "depth"), heads = dim(n, "heads");
  const int64_t hd = square_head_dim(n, w, heads), mlp = dim(n, "mlp");
  const Activation act = activation(n, "act", Activation::GeluTanh);
  const int64_t cross_every = dim(n, "cross_every", 2);
  const int64_t action_dim = dim(n, "action_dim"), state_dim = dim(n, "state_dim");
  const int64_t state_hidden = dim(n, "state_hidden", 1024);
  const int64_t future = n.get_count("future_tokens", 0, 0);
  const int64_t out_dim = dim(n, "output_dim"), dec_hidden = dim(n, "decoder_hidden");
  const int64_t time_dim = dim(n, "time_dim", 256);
  Site s0{stage, 0, -1, name};
  Tensor mem = token_input(c, n, s0);
  const int64_t B = c.B(), H = c.shape.chunk, T = 1 + future + H, S = mem.tokens;
  c.suffix_tokens = T;

  // Once per inference (placed in step 0): state encoder and the learned future tokens.
  const int se1 = c.gemm(s0, "state_enc1", OpFn::Linear, B, state_hidden, state_dim,
                         Epilogue{.bias = true, .act = Activation::Relu}, {});
  const int se2 = c.gemm(s0, "state_enc2", OpFn::Linear, B, w, state_hidden,
                         Epilogue{.bias = true}, {se1});
  const int fut = future > 0 ? c.lookup(s0, "future_tokens", B * future, w, future, {}) : -1;
  // DP-Cache, as in build_expert.
  const DpCache& dc = c.shape.dp_cache;
  const auto [deep_first, deep_end] = dp_cache_deep_blocks(c, n, name, depth);
  int delta = -1;
  int prev = -1;
  const size_t before_steps = c.g.size();
  for (int step = 0; step < c.shape.steps; ++step) {
    if (step == 1) c.g.check_room(size_t(c.shape.steps - 1) * (c.g.size() - before_steps));
    Site s{stage, step, -1, name};
    const bool cached = dc.cached(step);
    const bool keeps = dc.on() && !cached && dc.cached(step + 1);
    int deep_in = -1;
    const int t1 = c.gemm(s, "time_mlp_in", OpFn::Linear, B, w, time_dim,
                          Epilogue{.bias = true, .act = Activation::Silu}, {});
    const int temb = c.gemm(s, "time_mlp_out", OpFn::Linear, B, w, w, Epilogue{.bias = true},
                            {t1});
    const int a1 = c.gemm(s, "action_enc1", OpFn::Linear, B * H, w, action_dim,
                          Epilogue{.bias = true}, {prev});
    // GR00T MultiEmbodimentActionEncoder: W2 over concat[W1(actions), sinusoidal encoding
    // of the timestep repeated over the horizon] (an input tensor, like pi0's).
    const int tpos = c.eltwise(s, "time_pos", OpFn::Copy, B * H, w, 0, 0, {});
    const int acat = c.concat(s, "action_time", B * H, 2 * w, {a1, tpos});
    const int a2 = c.gemm(s, "action_enc2", OpFn::Linear, B * H, w, 2 * w,
                          Epilogue{.bias = true, .act = Activation::Silu}, {acat});
    const int a3 = c.gemm(s, "action_enc3", OpFn::Linear, B * H, w, w, Epilogue{.bias = true},
                          {a2});
    int x = c.concat(s, "tokens", B * T, w, {se2, fut, a3});
    for (int64_t l = 0; l < depth; ++l) {
      s.block = int(l);
      if (l == deep_first && (cached || keeps)) deep_in = x;
      if (cached && l >= deep_first && l < deep_end) {
        if (l == deep_first) x = c.eltwise(s, "dp_cache_add", OpFn::Add, B * T, w, 1, 2, {delta, x});
        continue;
      }
      AttnSpec a;
      a.rows = B * T;
      a.width = w;
      a.heads = a.kv_heads = heads;
      a.head_dim = hd;
      a.norm = OpFn::LayerNorm;
      a.norm_affine = false;
      a.qkv_bias = a.o_bias = true;
      a.batch = B;
      a.q_len = T;
      a.ada = temb;
      a.ada_width = w;
      a.ada_chunks = 2;
      if (l % cross_every == 0) {
        // Cross-attention to the VL features; K/V projected from them every step.
        a.kv = AttnSpec::Kv::CrossProj;
        a.ext = mem.op;
        a.ext_tokens = S;
        a.ext_width = mem.width;
        a.kv_len = S;
      } else {
        a.kv_len = T;
      }
      x = attn_part(c, s, a, x).out;
      FfnSpec f{.rows = B * T, .width = w, .mlp = mlp, .gated = false, .act = act,
                .norm = OpFn::LayerNorm, .norm_affine = false, .bias = true};
      x = ffn_part(c, s, f, x);
      if (keeps && l == deep_end - 1) delta = c.eltwise(s, "dp_cache_delta", OpFn::Sub, B * T, w, 1, 2, {deep_in, x});
    }
    s.block = -1;
    const int mod = c.gemm(s, "out_mod", OpFn::Linear, B, 2 * w, w, Epilogue{.bias = true},
                           {temb});
    const int fn = c.norm(s, "final_norm", OpFn::LayerNorm, B * T, w, false, false, {x, mod});
    const int o = c.gemm(s, "proj_out", OpFn::Linear, B * T, out_dim, w, Epilogue{.bias = true},
                         {fn});
    const int d1 = c.gemm(s, "action_dec1", OpFn::Linear, B * H, dec_hidden, out_dim,
                          Epilogue{.bias = true, .act = Activation::Relu},
                          {{o, double(B * H * out_dim) * c.eb}});
    const int d2 = c.gemm(s, "action_dec2", OpFn::Linear, B * H, action_dim, dec_hidden,
                          Epilogue{.bias = true}, {d1});
    prev = c.eltwise(s, "euler", OpFn::EulerUpdate, B * H, action_dim, 2, 2, {d2, prev});
  }
  c.outputs[name] = {prev, H, action_dim, name};
}

void build_ar_decode(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const KvCache& kc = find_cache(c, n, "decoder");
  // Decoding runs the decoder's weights over its cache, so at the decoder's dtype.
  if (ConfigNode dt = n.optional("dtype"); dt.defined() && c.shape.dtype != kc.dtype)
    dt.fail("an ar_decode runs with its decoder's weights and cache; its dtype must be the "
            "decoder's (" + std::string(to_string(kc.dtype)) + ")");
  c.shape.dtype = kc.dtype;
  c.eb = dtype_bytes(kc.dtype);
  const int64_t action_dims = dim(n, "action_dims");
  const int64_t N = c.shape.chunk * action_dims;  // tokens generated
  const int64_t B = c.B(), S = kc.tokens, w = kc.width, kv_dim = kc.kv_heads * kc.head_dim;
  const double cache_bytes = 2.0 * B * S * kv_dim * c.eb, tok_kv = 2.0 * B * kv_dim * c.eb;
  c.g.steps = int(N);
  c.suffix_tokens = N;
  for (int l = 0; l < int(kc.kv_ops.size()); ++l) c.g.op(kc.kv_ops[size_t(l)]).kv_cache = true;
  std::vector<std::vector<Dep>> local(kc.kv_ops.size());
  // Step 0 turns the prefill's last row into the first token; step t embeds token t-1.
  auto owner = c.weight_owner.find(kc.component);  // decode with the decoder's weights
  c.weight_owner[name] = owner != c.weight_owner.end() ? owner->second : kc.component;
  Site s{stage, 0, -1, name};
  int x = kc.final_in;
  for (int t = 0; t < int(N); ++t) {
    s.step = t;
    s.block = -1;
    if (t > 0) {
      x = c.lookup(s, "embed", B, w, kc.vocab, {x});
      for (int l = 0; l < int(kc.kv_ops.size()); ++l) {
        s.block = l;
        AttnSpec a = decoder_attn(kc, B, B);
        a.q_len = 1;
        a.kv_len = S + t;
        a.kv = AttnSpec::Kv::Joint;
        a.ext = kc.kv_ops[size_t(l)];
        a.ext_tokens = S;
        a.ext_bytes = cache_bytes;
        a.ext_more = local[size_t(l)];
        a.cache_kv = true;
        AttnResult r = attn_part(c, s, a, x);
        local[size_t(l)].push_back({r.kv, tok_kv});
        c.g.op(r.kv).kv_cache = t + 1 < int(N);  // read by the later decode steps
        FfnSpec f{.rows = B, .width = w, .mlp = kc.mlp, .gated = kc.gated, .act = kc.act,
                  .norm = kc.norm, .norm_bias = a.norm_bias};
        x = ffn_part(c, s, f, r.out);
      }
      s.block = -1;
    }
    // Only the last row matters for the next token.
    const int fn = c.norm(s, "final_norm", kc.norm, B, w, true, kc.norm == OpFn::LayerNorm,
                          {{x, double(B * w) * c.eb}});
    x = c.gemm(s, "lm_head", OpFn::Linear, B, kc.vocab, w, Epilogue{}, {fn});
  }
  c.outputs[name] = {x, N, kc.vocab, name};
}

void build_qtformer(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const int64_t w = dim(n, "width"), depth = dim(n, "depth"), heads = dim(n, "heads");
  const int64_t hd = square_head_dim(n, w, heads), mlp = dim(n, "mlp");
  const Activation act = activation(n, "act", Activation::Relu);
  const int64_t Q = dim(n, "queries"), M = n.get_count("memory_tokens", 0, 0);
  const int64_t out_tokens = dim(n, "out_tokens", Q);
  if (out_tokens > Q) n.required("out_tokens").fail("must not exceed queries " + str(Q));
  Site s{stage, -1, -1, name};
  Tensor img = token_input(c, n, s);
  require_width(n, "width", w, img);
  const int64_t B = c.B(), rows = B * Q;
  int x = c.lookup(s, "queries", rows, w, Q, {});
  for (int64_t l = 0; l < depth; ++l) {
    s.block = int(l);
    AttnSpec a;
    a.tag = "self";
    a.rows = rows;
    a.width = w;
    a.heads = a.kv_heads = heads;
    a.head_dim = hd;
    a.norm = OpFn::LayerNorm;
    a.norm_bias = a.qkv_bias = a.o_bias = true;
    a.batch = B;
    a.q_len = Q;
    a.kv_len = Q + M;  // queries also see the temporal memory
    x = attn_part(c, s, a, x).out;
    a.tag = "cross";
    a.kv = AttnSpec::Kv::CrossProj;
    a.ext = img.op;
    a.ext_tokens = img.tokens;
    a.ext_width = img.width;
    a.kv_len = img.tokens;
    x = attn_part(c, s, a, x).out;
    FfnSpec f{.rows = rows, .width = w, .mlp = mlp, .gated = false, .act = act,
              .norm = OpFn::LayerNorm, .norm_bias = true, .bias = true};
    x = ffn_part(c, s, f, x);
  }
  c.outputs[name] = {x, out_tokens, w, name};
}

void build_head(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const std::vector<int64_t> dims = dims_list(n, "dims");
  const Activation act = activation(n, "act", Activation::Relu);
  const int64_t rows = dim(n, "rows", 1);
  Site s{stage, -1, -1, name};
  Tensor in = token_input(c, n, s);
  if (dims[0] != in.width)
    n.required("dims").fail("first size " + str(dims[0]) + " must equal the input width " +
                            str(in.width) + " of '" + in.component + "'");
  if (rows > in.tokens)
    n.required("rows").fail("exceeds the input's " + str(in.tokens) + " tokens");
  int x = in.op;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    Epilogue e{.bias = true, .act = i + 2 < dims.size() ? act : Activation::None};
    std::vector<Dep> deps{i == 0 ? Dep(x, double(c.B() * rows * dims[0]) * c.eb) : Dep(x)};
    x = c.gemm(s, "fc" + std::to_string(i), OpFn::Linear, c.B() * rows, dims[i + 1], dims[i], e,
               deps);
  }
  c.outputs[name] = {x, rows, dims.back(), name};
}

}  // namespace vlasim::detail
