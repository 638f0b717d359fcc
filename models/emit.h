// Internal to models/: the build context shared by the component builders, helpers that
// append one operator with its costs, and the two halves of a transformer block.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/card.h"

namespace vlasim::detail {

// What a component hands to the next: the op that holds its output, and its shape per sample.
struct Tensor {
  int op = -1;         // producing op; -1 when the data comes from outside (camera)
  int64_t tokens = 0;  // rows per sample
  int64_t width = 0;   // columns
  std::string component;
};

// A decoder's per-layer K/V, for components that attend to it or extend it.
struct KvCache {
  std::string component;    // the decoder's name
  std::vector<int> kv_ops;  // per layer: the op that completes that layer's K/V
  int64_t tokens = 0;       // cached tokens per sample
  int64_t width = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp = 0;
  bool gated = true, rope = true, qkv_bias = false, qk_norm = false;
  Activation act = Activation::GeluTanh;
  OpFn norm = OpFn::RMSNorm;
  int64_t vocab = 0;
  int final_in = -1;        // op whose output feeds the decoder's final norm (last layer)
  DType dtype = DType::BF16;  // the decoder's weights and cache
};

// Where ops are appended: stage, step, block and the component that makes them.
// Op names are component[.s<step>][.b<block>].<name>; weight ids are
// owner[.b<block>].<name> (owner: the component whose weights these are, see
// Ctx::weight_owner), so ops of different steps share their parameters.
struct Site {
  Stage stage = Stage::Prefix;
  int step = -1;
  int block = -1;
  std::string component;
  std::string name(const std::string& leaf) const;
};

// A dependency on `op`; bytes < 0 means "the producer's whole output".
struct Dep {
  int op;
  double bytes = -1;
  Dep(int o) : op(o) {}  // NOLINT: implicit on purpose, deps are written as {a, b}
  Dep(int o, double b) : op(o), bytes(b) {}
};

struct Ctx {
  OpGraph& g;
  const ModelCard& card;
  RunShape shape;   // resolved: no defaults left
  double eb = 2;    // bytes per element at shape.dtype
  std::map<std::string, Tensor> outputs{};
  std::map<std::string, KvCache> caches{};
  std::vector<std::string> order{};  // components built so far
  // Component -> the component whose weights it uses (`weights_from`; an ar_decode's
  // decoder), resolved to the first owner. Components not listed own their weights.
  std::map<std::string, std::string> weight_owner{};
  int64_t prefix_tokens = 0, suffix_tokens = 0;
  bool dp_cache_used = false;  // a component applied shape.dp_cache
  // Sites where a builder pass (models/passes/passes.h) could apply, by pass name, counted
  // whether the pass is on or off.
  std::map<std::string, int> sites{};
  // Decoders last_layer_skip may cut besides those with kv_only_last (an expert reads their
  // K/V and nothing their output).
  std::vector<std::string> skippable_decoders{};

  // True when the run applies pass `name` (shape.passes).
  bool pass(const std::string& name) const;

  int64_t B() const { return shape.batch; }
  // The weight id of `leaf` at site s, named after the component that owns the weights.
  std::string wid(const Site& s, const std::string& leaf) const;
  // Adds an edge for each dep whose op is >= 0.
  void link(const std::vector<Dep>& deps, int to);

  // out[m, n] = in[m, k] * W[k, n]; weight_elems overrides k * n (e.g. transposed convs).
  // flops = 2 m n k; with epi.gate_up the output is m x n/2. `src` says where derived
  // parameters come from (Op::param). Without the epilogue_fuse pass, a Linear GEMM's bias,
  // activation (gelu_tanh, silu) and residual (deps[1], REQUIRED there when epi.residual) are
  // ops of their own after it (not with gate_up or gate); returns the op holding the result.
  int gemm(const Site& s, const std::string& leaf, OpFn fn, int64_t m, int64_t n, int64_t k,
           Epilogue epi, const std::vector<Dep>& deps, double weight_elems = -1,
           const ParamSource& src = {});
  // Attention with its flops 4 * batch * heads * q_len * kv_eff * head_dim, where kv_eff is
  // kv_len reduced by the causal mask and the window.
  struct AttnGeom {
    OpFn fn = OpFn::SelfAttention;
    int64_t batch = 1, heads = 0, kv_heads = 0, head_dim = 0, q_len = 0, kv_len = 0;
    int64_t window = 0;
    bool causal = false;
    int kv_source = -1;
    int64_t kv_cached = 0;
  };
  int attention(const Site& s, const std::string& leaf, const AttnGeom& a,
                const std::vector<Dep>& deps);
  // Normalisation of rows x width; affine adds width (and bias) parameters.
  int norm(const Site& s, const std::string& leaf, OpFn fn, int64_t rows, int64_t width,
           bool affine, bool bias, const std::vector<Dep>& deps, double flops_per_elem = 5);
  // Elementwise op over rows x width reading `inputs` tensors of that size (plus
  // weight_elems parameters when > 0).
  int eltwise(const Site& s, const std::string& leaf, OpFn fn, int64_t rows, int64_t width,
              double flops_per_elem, double inputs, const std::vector<Dep>& deps,
              double weight_elems = 0);
  // Table lookup of rows ids into a vocab x width table. weight_bytes is the whole table (it
  // must be resident); bytes_read counts only the rows gathered.
  int lookup(const Site& s, const std::string& leaf, int64_t rows, int64_t width, int64_t vocab,
             const std::vector<Dep>& deps);
  // Joins several producers into one rows x width buffer (a copy); returns the only producer
  // unchanged when there is one.
  int concat(const Site& s, const std::string& leaf, int64_t rows, int64_t width,
             const std::vector<Dep>& deps);
};

// A projection computing column blocks of one parameter matrix `src_leaf` ([k, src_n], with
// bias when pe.bias): `blocks` (leaf, columns) side by side from column col0. With qkv_fuse on
// (or one block) it is one GEMM named `fused_leaf`; else one GEMM per block gathered by a copy
// into one buffer `fused_leaf`_gather (columns in block order). Parameters come from src_leaf
// (Op::param) unless the GEMM is the whole of it. Counts a qkv_fuse site when there are several
// blocks. Returns the op holding the blocks side by side.
int split_proj(Ctx& c, const Site& s, const std::string& fused_leaf, const std::string& src_leaf,
               int64_t src_n, int64_t col0, const std::vector<std::pair<std::string, int64_t>>& blocks,
               int64_t rows, int64_t k, Epilogue pe, const std::vector<Dep>& deps);

// The attention half of a transformer block: norm, projections, optional RoPE, attention,
// output projection with the residual added. The inherited geometry is per sample (batch =
// attention batch); attn_part sets its fn, kv_source and kv_cached from `kv`.
struct AttnSpec : Ctx::AttnGeom {
  std::string tag = "attn";  // op names: <tag>_norm, qkv|q|kv, rope, <tag>, o (prefixed by tag)
  int64_t rows = 0;          // query rows, batch included
  int64_t width = 0;         // input/output width
  OpFn norm = OpFn::RMSNorm;
  bool norm_affine = true, norm_bias = false;
  bool qkv_bias = false, o_bias = false, rope = false, qk_norm = false;
  // Local: K/V from this block only. Joint: local K/V plus cached K/V of ext (kv_len includes
  // both). CrossCached: K/V all from ext. CrossProj: K/V projected here from ext's output
  // (ext_tokens x ext_width memory per sample).
  enum class Kv { Local, Joint, CrossCached, CrossProj } kv = Kv::Local;
  int ext = -1;
  double ext_bytes = 0;            // bytes of ext's K/V read (Joint / CrossCached)
  std::vector<Dep> ext_more;       // further K/V producers read (earlier decode steps)
  int64_t ext_tokens = 0;          // cached tokens per sample from ext (and ext_more)
  int64_t ext_width = 0;           // CrossProj memory width
  bool kv_only = false;            // only the K/V projection (last prefix layer)
  bool cache_kv = false;           // the local K/V is a cache: set kv_bytes on the kv op
  int ada = -1;                    // adaptive norm: conditioning op (batch x ada_width)
  int64_t ada_width = 0;
  int ada_chunks = 0;              // 2: scale+shift, 3: scale+shift+gate (gate on o proj)
};
struct AttnResult {
  int out = -1;  // output projection (residual added); the kv op when kv_only
  int kv = -1;   // op completing the local K/V (RoPE when used, else the projection)
};
AttnResult attn_part(Ctx& c, const Site& s, const AttnSpec& a, int x);

// The feed-forward half: norm, up (or fused gate+up), down with the residual added.
struct FfnSpec {
  std::string tag = "ffn";
  int64_t rows = 0, width = 0, mlp = 0;
  bool gated = true;
  Activation act = Activation::GeluTanh;
  OpFn norm = OpFn::RMSNorm;
  bool norm_affine = true, norm_bias = false, bias = false;
  int ada = -1;
  int64_t ada_width = 0;
  int ada_chunks = 0;
};
int ffn_part(Ctx& c, const Site& s, const FfnSpec& f, int x);

// Card reading helpers: each throws ConfigError located at the offending key.
int64_t dim(const ConfigNode& c, const std::string& key);                    // required, > 0
int64_t dim(const ConfigNode& c, const std::string& key, int64_t fallback);  // optional, > 0
// A required list of positive integers with at least min_size entries; `too_few` is the
// error when it has fewer.
std::vector<int64_t> positive_ints(const ConfigNode& c, const std::string& key, size_t min_size,
                                   const std::string& too_few);
Activation activation(const ConfigNode& c, const std::string& key, Activation fallback);
OpFn norm_fn(const ConfigNode& c, const std::string& key, OpFn fallback);
// head_dim (default width / heads) checked so that heads * head_dim == width.
int64_t square_head_dim(const ConfigNode& c, int64_t width, int64_t heads);
// kv_heads (default heads) checked to divide heads.
int64_t kv_heads_of(const ConfigNode& c, int64_t heads);

// Component builders. Each reads its card node `n`, appends its ops to c.g in stage `stage`,
// and records its output in c.outputs[name].
using BuildFn = void (*)(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage);
struct ComponentType {
  const char* type;
  const char* description;
  Stage stage;                    // default stage
  std::vector<std::string> keys;  // keys beyond the common ones
  BuildFn build;
};
// The registry of component types, in a fixed order.
const std::vector<ComponentType>& component_types();
const ComponentType* find_component_type(const std::string& type);

// The inputs of component n: its `inputs` list (names of earlier components) or, when absent,
// the previous component. Empty for the first component.
std::vector<Tensor> inputs_of(const Ctx& c, const ConfigNode& n);

void build_vit(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_encoder(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_projector(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_decoder(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_expert(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_dit(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_ar_decode(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_qtformer(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_head(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_resnet(Ctx&, const ConfigNode&, const std::string&, Stage);
void build_unet1d(Ctx&, const ConfigNode&, const std::string&, Stage);

}  // namespace vlasim::detail
