// Operator graphs: what a model does in one inference, as a DAG of operators with their
// shapes and costs. Produced by the builder (models/builder.h) from a model card; consumed by
// the simulator (sim/), which predicts each operator's time, and by the executors
// (executors/), which run each operator for real.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <stdexcept>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vlasim {

enum class DType { F32, BF16, F16, I8 };
// Bytes per element of `t`.
int dtype_bytes(DType t);
const char* to_string(DType t);
// Parses "fp32"/"f32", "bf16", "fp16"/"f16", "int8"/"i8"; returns false if unknown.
bool parse_dtype(const std::string& s, DType* out);

// What an operator is, coarsely: the cost model and the executors dispatch on it.
enum class OpKind { Gemm, Attention, Norm, Elementwise, Embedding, Transfer };
const char* to_string(OpKind k);

// The precise function within a kind (the executors need it; the roofline mostly does not).
enum class OpFn {
  None,
  // Gemm
  Linear,        // out[m,n] = in[m,k] * W[k,n] (+ epilogue)
  PatchEmbed,    // a strided convolution written as a GEMM over im2col patches
  Conv,          // any other convolution written as a GEMM (im2col)
  // Attention
  SelfAttention,   // Q, K, V all from this block's input
  CrossAttention,  // K, V (or part of them) from another stage's cache (kv_source)
  // Norm
  RMSNorm, LayerNorm, GroupNorm,
  // Elementwise
  RoPE, Add, Mul, Gelu, Silu, EulerUpdate, Softmax, Copy,
  Sub,  // the later input (id order) minus the earlier one
  BiasAdd,  // the input plus a bias vector (parameter "b") on every row (epilogue_fuse off)
  // Embedding
  Lookup,
  // Transfer (inserted by placement, never by the builder)
  HostToDevice, DeviceToHost, DeviceToDevice,
};
const char* to_string(OpFn f);

// Where an operator sits in the inference.
enum class Stage { Vision, Prefix, Action, Decode, Head };
const char* to_string(Stage s);
bool parse_stage(const std::string& s, Stage* out);

enum class Activation { None, GeluTanh, GeluErf, Silu, Relu };
const char* to_string(Activation a);

// Work fused into a GEMM's output.
struct Epilogue {
  bool bias = false;
  Activation act = Activation::None;
  // out = act(gate) * up, where the GEMM computes [gate | up] with n = 2 * width and writes
  // only m x width (fused gate+up of GeGLU / SwiGLU). act applies to the gate half.
  bool gate_up = false;
  bool residual = false;  // out += residual input of shape m x n
  bool gate = false;      // out *= gate input of shape m x n (adaptive-norm gating)
  // RoPE applied to the output (rope_fold): the first rope_cols columns rotated per head of
  // rope_head_dim at position row % (rows / rope_batch), as a RoPE op does (executors/plan.h);
  // off when rope_head_dim == 0. Only on a GEMM without activation, gate_up, residual, gate.
  int64_t rope_cols = 0, rope_head_dim = 0, rope_batch = 0;
  bool rope() const { return rope_head_dim > 0; }
};

// Where a GEMM's synthetic parameters come from when a graph pass (models/passes/passes.h)
// derived them from another parameter, so that a rewritten graph computes what the original
// did. By default (all fields empty) an op's parameters are its own (executors/plan.h).
struct ParamSource {
  // W is rows [row0, row0 + k) and columns [col0, col0 + n) of parameter `weight_id`'s
  // [src_k, src_n] matrix (and the bias columns [col0, col0 + n) of its bias); empty: the
  // op's own weight_id, src_k = k, src_n = n.
  std::string weight_id;
  int64_t src_k = 0, src_n = 0, row0 = 0, col0 = 0;
  // rmsnorm_fold: row r of W is multiplied by value r of the scale of the norm whose
  // weight_id this is.
  std::string row_scale;
  // time_bias_fold: the bias gains x . S where x is one row (fold_cols values) of the
  // synthetic input stream `fold_input` (an op name, role 0) and S rows
  // [fold_row0, fold_row0 + fold_cols) of the source W (all src_n columns, then col0..).
  std::string fold_input;
  int64_t fold_row0 = 0, fold_cols = 0;
  bool empty() const { return weight_id.empty() && row_scale.empty() && fold_input.empty(); }
};

struct Op {
  int id = -1;        // index in the graph, equals the vertex descriptor
  std::string name;   // unique within the graph, e.g. "prefix.b3.ffn.gate_up"
  OpKind kind = OpKind::Elementwise;
  OpFn fn = OpFn::None;
  Stage stage = Stage::Prefix;
  int step = -1;      // denoising / decoding step for Action and Decode ops, else -1
  int block = -1;     // transformer block within its stage's component, -1 outside blocks
  std::string component;  // the card component that made it ("vision", "backbone", ...)
  DType dtype = DType::BF16;

  // Gemm: out[batch][m, n] = in[batch][m, k] * W[k, n]. W is shared by the batch.
  int64_t m = 0, n = 0, k = 0;
  Epilogue epi;
  // Attention: batch x heads query heads over kv_heads key/value heads (MQA/GQA), q_len
  // queries against kv_len keys of head_dim; window > 0 restricts each query to a window
  // of that many tokens (block-local attention); causal masks future keys.
  int64_t batch = 1, heads = 0, kv_heads = 0, head_dim = 0, q_len = 0, kv_len = 0;
  int64_t window = 0;
  bool causal = false;
  int kv_source = -1;     // CrossAttention: op id whose output holds the K/V cache read
  int64_t kv_cached = 0;  // keys of kv_len that come from kv_source (the rest are local)
  // Norm / Elementwise / Embedding: rows x width elements (Embedding: width = hidden size,
  // vocab = table rows).
  int64_t rows = 0, width = 0, vocab = 0;

  // Costs of one execution (all of batch included).
  double flops = 0;
  double bytes_read = 0;     // activations + weights + KV cache read
  double bytes_written = 0;  // activations + KV cache written
  double weight_bytes = 0;   // parameter bytes read (part of bytes_read)
  double kv_bytes = 0;       // KV-cache bytes written (K/V projections) or read (attention)
  double out_bytes = 0;      // size of the op's output tensor
  // Name of the parameter tensor(s) this op reads; ops that share parameters (an action
  // expert's blocks over denoising steps) share the id, so memory counts them once.
  std::string weight_id;
  // True when this op's output is a K/V cache that later stages read.
  bool kv_cache = false;
  // Gemm: where its parameters come from when a pass derived them (ParamSource).
  ParamSource param;
  // Norm: its scale was folded into the GEMMs it feeds (rmsnorm_fold): the executors do not
  // scale.
  bool scale_folded = false;
  // Elementwise Copy without predecessors: its synthetic input has one row repeated (a
  // per-step constant such as pi0's time embedding, the same for every action token).
  bool const_rows = false;
};

// A dependency: `bytes` of tensor flow from the source op to the target op.
struct Edge {
  double bytes = 0;
};

// The most ops one graph may hold (about 300 MB of graph): pi0 at 10 flow steps has ~1900.
constexpr size_t kMaxGraphOps = 500000;

// Thrown by OpGraph::add past kMaxGraphOps.
class GraphTooLarge : public std::length_error {
 public:
  using std::length_error::length_error;
};

using GraphImpl =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, Edge>;

// The boost graph behind a pointer, so that an OpGraph moves without copying it (Boost 1.74's
// adjacency_list declares a copy constructor and no move, so moving one copies it). Copies
// copy the graph; a moved-from holder holds an empty graph.
class GraphHolder {
 public:
  GraphHolder() : p_(std::make_unique<GraphImpl>()) {}
  GraphHolder(const GraphHolder& o) : p_(std::make_unique<GraphImpl>(*o.p_)) {}
  GraphHolder(GraphHolder&& o) : p_(std::exchange(o.p_, std::make_unique<GraphImpl>())) {}
  GraphHolder& operator=(const GraphHolder& o) {
    if (this != &o) p_ = std::make_unique<GraphImpl>(*o.p_);
    return *this;
  }
  GraphHolder& operator=(GraphHolder&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  GraphImpl& operator*() { return *p_; }
  const GraphImpl& operator*() const { return *p_; }

 private:
  std::unique_ptr<GraphImpl> p_;
};

// One inference of one model at one run-time shape. Ops are stored in a valid execution
// order (every edge goes from a lower to a higher id).
class OpGraph {
 public:
  // Appends an op and returns its id. REQUIRES: op.name unique. Throws GraphTooLarge when the
  // graph already holds kMaxGraphOps.
  int add(Op op);
  // Throws GraphTooLarge (add's message) when `more` ops would take the graph past
  // kMaxGraphOps: a builder that repeats a part many times calls it after the first, so a
  // graph far past the limit is refused at once instead of at its 500000th op.
  void check_room(size_t more) const;
  // Records that `to` reads `bytes` produced by `from`. REQUIRES: from < to.
  void depend(int from, int to, double bytes);

  size_t size() const { return boost::num_vertices(*g_); }
  const Op& op(int id) const { return (*g_)[static_cast<size_t>(id)]; }
  Op& op(int id) { return (*g_)[static_cast<size_t>(id)]; }
  std::vector<int> preds(int id) const;
  std::vector<int> succs(int id) const;
  double edge_bytes(int from, int to) const;  // 0 if no edge
  const GraphImpl& impl() const { return *g_; }

  // Sum of flops over ops satisfying the filter (all ops when stage is unset).
  double flops() const;
  double flops(Stage s) const;
  // Unique parameter bytes (each weight_id once).
  double param_bytes() const;
  double param_bytes(Stage s) const;
  // Number of blocks of `stage` (max block index + 1, 0 if none).
  int blocks(Stage s) const;

  std::string model;       // card name
  int views = 0, prompt = 0, chunk = 0, steps = 0, batch = 1;
  int64_t prefix_tokens = 0, suffix_tokens = 0;

 private:
  GraphHolder g_;
};

}  // namespace vlasim
