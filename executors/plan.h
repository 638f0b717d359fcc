// What each op of a segment reads and writes, shared by every executor so that they run the
// same computation on the same synthetic data.
//
// Tensors are row-major 2-D [rows, cols] in the executor's dtype. Output shapes:
//   Gemm        [batch*m, n] ([batch*m, n/2] with epi.gate_up: n holds gate | up)
//   Attention   [batch*q_len, heads*head_dim] (token-major, heads side by side)
//   Norm, Elementwise, Embedding  [rows, width]
//   Transfer    the shape of its first predecessor, else [1, out_bytes / dtype bytes]
// Input binding. A role needs a [rows, cols] view. A predecessor feeds it when its output
// has the same element count (read as [rows, cols]); failing that, when it has the same
// columns and more rows (its last `rows` rows: e.g. the action tokens after a state token),
// or the same rows and more columns (its first `cols` columns: e.g. RoPE over Q|K of a QKV
// output). Predecessors that match no role are ordering-only edges; a role nothing feeds
// gets a synthetic input of its own.
//   Gemm        X [batch*m, k] = the latest matching pred; then residual, then gate
//               [rows, out cols] = the earliest remaining matching preds, in id order.
//               out = act(X W + bias) (gate_up: act(X Wg + bg) * (X Wu + bu)), then
//               out *= gate, then out += residual. A rope epilogue then rotates the first
//               rope_cols columns as a RoPE op with that head_dim and batch would.
//   Attention   Q is the first H hd columns of the latest pred with B*q_len rows and
//               (H + 2 KV) hd (Q|K|V), (H + KV) hd (Q|K, e.g. after RoPE) or H hd columns;
//               local K and V (L = kv_len - kv_cached keys per batch) follow Q in that pred
//               when present, else come from a pred with B*L rows holding Q|K|V or K|V
//               (V = its last KV hd columns), or K then V [B*L, KV hd] each.
//               Cached keys (kv_cached > 0, kv_cached rows per batch) come from op
//               kv_source: when it is a RoPE op, K is its last KV hd columns and V the last
//               KV hd columns of its latest pred holding Q|K|V or K|V; otherwise its last
//               2 KV hd columns are K then V. Query i of a batch sits at key
//               position kv_len - q_len + i; causal allows keys j <= that position;
//               window w > 0 allows keys in the same block of w positions. Keys: cached
//               first, then local. Query head h reads kv head h / (H / KV).
//   Norm        X [rows, width]; RMSNorm: x / sqrt(mean x^2 + 1e-6) * scale;
//               LayerNorm: (x - mean) / sqrt(var + 1e-6) * scale + shift.
//   Elementwise Add/Mul: a, b (id order); Sub: b - a (the later minus the earlier); BiasAdd:
//               a + the op's parameter "b" on every row (a split GEMM's: Op::param names it); Gelu (tanh), Silu, Softmax (per row): a;
//               Copy: a, or else a concatenation of its preds in id order: by rows when
//               preds of `width` columns have rows adding up to `rows` (with batch > 1 and
//               every part's rows a multiple of batch, sample by sample: sample b holds
//               part 0's b-th row block, then part 1's, ...), else by columns when preds
//               of `rows` rows have columns adding up to `width` (side by side, e.g. the
//               [action | time] input of pi0's time MLP);
//               EulerUpdate: x (earlier), v (latest): out = x + dt v, dt = -1 / graph steps
//               (-0.1 when the graph has no steps); RoPE: rotates pairs (i, i + hd/2) of each
//               head_dim chunk of the first (heads + kv_heads) * head_dim columns (all
//               columns when heads = 0; hd = width when head_dim = 0) at position
//               row % (rows / batch), theta_i = pos * 10000^(-2i / hd).
//   Embedding   Lookup: synthetic int indices [rows, 1] in [0, vocab) into a table
//               [vocab, width].
//   Transfer    copies its first predecessor (or a synthetic input) unchanged.
// Synthetic values (weights and inputs) are a function of (seed, key, index) only; a weight's
// key is its weight_id, an input's its op's name and role.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"

namespace vlasim {

// Names a tensor: the output of op `op` (role -1), or op `op`'s synthetic input for
// role `role` (role >= 0).
struct TensorKey {
  int op = -1;
  int role = -1;
  bool operator==(const TensorKey& o) const { return op == o.op && role == o.role; }
  bool operator<(const TensorKey& o) const {
    return op != o.op ? op < o.op : role < o.role;
  }
};

struct TensorInfo {
  TensorKey key;
  int64_t rows = 0, cols = 0;
  bool is_int = false;  // embedding indices
  int64_t int_limit = 0;  // values are in [0, int_limit) when is_int
  // A synthetic input's values come from this name (the op's name; plan_segment sets it),
  // else from the key.
  std::string stream;
  // A synthetic input whose rows all hold row 0's values (Op::const_rows).
  bool const_rows = false;
  int64_t elems() const { return rows * cols; }
};

// One input role of an op: columns [col, col + width) of rows [row, ...) of tensor `t`
// (row stride t.cols).
struct Slot {
  bool used = false;
  TensorInfo t;
  int64_t row = 0, col = 0, width = 0;
  int64_t offset() const { return row * t.cols + col; }  // in elements
};

enum Role : int {
  kX = 0, kResidual = 1, kGate = 2,                 // Gemm
  kQ = 0, kK = 1, kV = 2, kCacheK = 3, kCacheV = 4,  // Attention
  kA = 0, kB = 1,                                    // Elementwise (Euler: a = x, b = v)
  kIndices = 0,                                      // Embedding
  kRoles = 5,
};

struct OpPlan {
  int op = -1;
  TensorInfo out;
  Slot in[kRoles];
  // Copy: when non-empty, the output is a concatenation of these views (concat_blocks).
  std::vector<Slot> parts;
  bool concat_cols = false;   // parts side by side (else stacked by rows)
  int64_t concat_batch = 1;   // row concatenation sample by sample over this many samples
  double dt = 0;  // EulerUpdate
};

// One block of a concatenation: rows [src_row, src_row + rows) of part `part`'s view (all its
// width columns) land at output rows [dst_row, dst_row + rows), columns from dst_col.
struct ConcatBlock {
  int part = 0;
  int64_t src_row = 0, dst_row = 0, dst_col = 0, rows = 0;
};
// The blocks of a Copy concatenation plan (empty when p.parts is empty), in output order.
std::vector<ConcatBlock> concat_blocks(const OpPlan& p);

// Output shape of op `id` of `g` (see the header comment).
TensorInfo output_info(const OpGraph& g, int id);
// True when executors can run op `o`; else false with `why` set.
bool op_supported(const Op& o, std::string* why);
// Plans a segment. Throws std::invalid_argument if `ops` is empty, not increasing, names a
// missing op, or holds an op that cannot run (naming the op and why).
std::vector<OpPlan> plan_segment(const OpGraph& g, const std::vector<int>& ops);
// The tensors the segment reads but does not produce, in key order, without duplicates.
std::vector<TensorInfo> segment_inputs(const std::vector<OpPlan>& plan);

// Deterministic synthetic values uniform in [-1, 1): value i of stream `key`.
uint64_t synth_stream(uint64_t seed, const std::string& key);
float synth_value(uint64_t stream, uint64_t i);
// Fills dst[0..n) with scale * synth_value + offset.
void synth_fill(float* dst, int64_t n, uint64_t stream, float scale, float offset);
// Synthetic int indices in [0, limit).
void synth_fill_indices(int32_t* dst, int64_t n, uint64_t stream, int64_t limit);
// The stream key of an op's parameter `part` ("w", "b", "scale", "shift", "table"):
// weight_id (or "op:<name>" when empty, "op<id>" when the op has no name either) + "/" + part.
std::string weight_key(const Op& o, const char* part);
// Fills dst[0..n) with op `o`'s synthetic parameter `part`: "w" (Gemm [k, n] row-major,
// uniform with variance 1/k), "b" (bias, +-0.1), "scale" (1 +- 0.1), "shift" (+-0.1),
// "table" (embedding [vocab, width], +-1). A GEMM with an Op::param takes "w" and "b" from its
// source as a graph pass derived them (a block of the source's [src_k, src_n] matrix, rows
// scaled by a norm's scale, a per-step input folded into the bias); a Norm with scale_folded
// has a scale of ones.
void fill_weight(const Op& o, const char* part, uint64_t seed, float* dst, int64_t n);
// The key under which executors cache op `o`'s parameter `part`: weight_key, plus what makes
// a pass-derived parameter differ from others of the same weight_id.
std::string param_key(const Op& o, const char* part);
// Fills an input tensor with its synthetic values (+-1, or indices when t.is_int).
void fill_input(const TensorInfo& t, uint64_t seed, float* dst);
// The stream key of an input tensor.
std::string input_key(TensorKey k);

// Rounds to the nearest bf16 value (ties to even), kept as float.
float round_bf16(float x);
// Rounds `x` to what `dtype` stores (identity for F32).
float round_to(DType dtype, float x);

// How the oneDNN executor runs a fused gate+up GEMM (epi.gate_up).
enum class GateUpMode {
  TwoMatmuls,  // gate matmul with the activation post-op, then up matmul * gate (binary mul)
  OneMatmul,   // one matmul n = 2 width into a scratch tensor, then act(gate) * up in a loop
};

}  // namespace vlasim
