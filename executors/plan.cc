#include "executors/plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>

namespace vlasim {

namespace {

std::string op_label(const Op& o) {
  return "op " + std::to_string(o.id) + " '" + o.name + "' (" + to_string(o.kind) + "/" +
         to_string(o.fn) + ")";
}

Slot slot_of(const TensorInfo& t, int64_t col, int64_t width, int64_t row = 0) {
  Slot s;
  s.used = true;
  s.t = t;
  s.row = row;
  s.col = col;
  s.width = width;
  return s;
}

TensorInfo synthetic(int op, int role, int64_t rows, int64_t cols) {
  TensorInfo t;
  t.key = TensorKey{op, role};
  t.rows = rows;
  t.cols = cols;
  return t;
}

// Predecessors' outputs, in id order, without duplicates, excluding `skip`.
std::vector<TensorInfo> pred_outputs(const OpGraph& g, int id, int skip) {
  std::vector<TensorInfo> out;
  int last = -1;
  for (int p : g.preds(id))
    if (p != skip && p != last) {
      out.push_back(output_info(g, p));
      last = p;
    }
  return out;
}

// Index of the latest (or earliest) entry satisfying `ok`, or -1.
template <class F>
int find(const std::vector<TensorInfo>& v, bool latest, F ok) {
  if (latest) {
    for (size_t i = v.size(); i-- > 0;)
      if (ok(v[i])) return static_cast<int>(i);
  } else {
    for (size_t i = 0; i < v.size(); ++i)
      if (ok(v[i])) return static_cast<int>(i);
  }
  return -1;
}

TensorInfo take_at(std::vector<TensorInfo>& v, int i) {
  TensorInfo t = v[static_cast<size_t>(i)];
  v.erase(v.begin() + i);
  return t;
}

// Binds `role` to a [rows, cols] view of a pred (see the header comment) or a synthetic.
Slot bind_role(std::vector<TensorInfo>& preds, int op, int role, int64_t rows, int64_t cols,
               bool latest) {
  int i = find(preds, latest, [&](const TensorInfo& t) { return t.elems() == rows * cols; });
  if (i >= 0) {
    TensorInfo t = take_at(preds, i);
    t.rows = rows;
    t.cols = cols;
    return slot_of(t, 0, cols);
  }
  i = find(preds, latest, [&](const TensorInfo& t) { return t.cols == cols && t.rows > rows; });
  if (i >= 0) {
    TensorInfo t = take_at(preds, i);
    return slot_of(t, 0, cols, t.rows - rows);
  }
  i = find(preds, latest, [&](const TensorInfo& t) { return t.rows == rows && t.cols > cols; });
  if (i >= 0) return slot_of(take_at(preds, i), 0, cols);
  return slot_of(synthetic(op, role, rows, cols), 0, cols);
}

void plan_attention(const OpGraph& g, const Op& o, OpPlan* p) {
  const int64_t B = o.batch, H = o.heads, KV = o.kv_heads, hd = o.head_dim;
  const int64_t Hq = H * hd, Kd = KV * hd;
  const int64_t L = o.kv_len - o.kv_cached;  // local keys per batch
  std::vector<TensorInfo> preds = pred_outputs(g, o.id, o.kv_source);
  int i = find(preds, true, [&](const TensorInfo& t) {
    return t.rows == B * o.q_len && (t.cols == Hq + 2 * Kd || t.cols == Hq + Kd || t.cols == Hq);
  });
  if (i >= 0) {
    TensorInfo t = take_at(preds, i);
    p->in[kQ] = slot_of(t, 0, Hq);
    if (L > 0 && L == o.q_len && t.cols >= Hq + Kd) p->in[kK] = slot_of(t, Hq, Kd);
    if (L > 0 && L == o.q_len && t.cols == Hq + 2 * Kd) p->in[kV] = slot_of(t, Hq + Kd, Kd);
  } else {
    p->in[kQ] = slot_of(synthetic(o.id, kQ, B * o.q_len, Hq), 0, Hq);
  }
  if (L > 0) {
    while (!p->in[kK].used || !p->in[kV].used) {
      i = find(preds, true, [&](const TensorInfo& t) {
        return t.rows == B * L && (t.cols == Hq + 2 * Kd || t.cols == 2 * Kd);
      });
      if (i < 0) break;
      TensorInfo t = take_at(preds, i);
      if (!p->in[kK].used) p->in[kK] = slot_of(t, t.cols - 2 * Kd, Kd);
      if (!p->in[kV].used) p->in[kV] = slot_of(t, t.cols - Kd, Kd);
    }
    for (int role : {kK, kV})
      if (!p->in[role].used) p->in[role] = bind_role(preds, o.id, role, B * L, Kd, false);
  }
  if (o.kv_cached > 0) {
    const int64_t rows = B * o.kv_cached;
    if (o.kv_source < 0) {
      TensorInfo t = synthetic(o.id, kCacheK, rows, 2 * Kd);
      p->in[kCacheK] = slot_of(t, 0, Kd);
      p->in[kCacheV] = slot_of(t, Kd, Kd);
      return;
    }
    TensorInfo t = output_info(g, o.kv_source);
    const Op& src = g.op(o.kv_source);
    const bool rope = src.kind == OpKind::Elementwise && src.fn == OpFn::RoPE;
    if (t.rows != rows || t.cols < (rope ? Kd : 2 * Kd))
      throw std::invalid_argument(
          op_label(o) + ": kv_source op " + std::to_string(o.kv_source) + " outputs [" +
          std::to_string(t.rows) + ", " + std::to_string(t.cols) + "], expected " +
          std::to_string(rows) + " rows (batch x kv_cached) and at least " +
          std::to_string(rope ? Kd : 2 * Kd) + " columns (" + (rope ? "K" : "K|V") + ")");
    if (!rope) {
      p->in[kCacheK] = slot_of(t, t.cols - 2 * Kd, Kd);
      p->in[kCacheV] = slot_of(t, t.cols - Kd, Kd);
      return;
    }
    p->in[kCacheK] = slot_of(t, t.cols - Kd, Kd);
    std::vector<TensorInfo> sp = pred_outputs(g, o.kv_source, -1);
    i = find(sp, true, [&](const TensorInfo& v) {
      return v.rows == rows && (v.cols == Hq + 2 * Kd || v.cols == 2 * Kd);
    });
    p->in[kCacheV] = i >= 0 ? slot_of(sp[static_cast<size_t>(i)], sp[static_cast<size_t>(i)].cols - Kd, Kd)
                            : slot_of(synthetic(o.id, kCacheV, rows, Kd), 0, Kd);
  }
}

// Copy as a concatenation (see the header comment): by rows, else by columns.
void plan_concat(const OpGraph& g, const Op& o, OpPlan* p) {
  const std::vector<TensorInfo> preds = pred_outputs(g, o.id, -1);
  std::vector<Slot> parts;
  int64_t rows = 0;
  for (const TensorInfo& t : preds)
    if (t.cols == o.width) {
      parts.push_back(slot_of(t, 0, t.cols));
      rows += t.rows;
    }
  if (parts.size() >= 2 && rows == o.rows) {
    p->parts = parts;
    p->concat_cols = false;
    p->concat_batch = 1;
    if (o.batch > 1) {
      bool even = true;
      for (const Slot& s : parts) even = even && s.t.rows % o.batch == 0;
      if (even) p->concat_batch = o.batch;
    }
    return;
  }
  parts.clear();
  int64_t width = 0;
  for (const TensorInfo& t : preds)
    if (t.rows == o.rows) {
      parts.push_back(slot_of(t, 0, t.cols));
      width += t.cols;
    }
  if (parts.size() >= 2 && width == o.width) {
    p->parts = parts;
    p->concat_cols = true;
  }
}

}  // namespace

TensorInfo output_info(const OpGraph& g, int id) {
  const Op& o = g.op(id);
  TensorInfo t;
  t.key = TensorKey{id, -1};
  switch (o.kind) {
    case OpKind::Gemm:
      t.rows = o.batch * o.m;
      t.cols = o.epi.gate_up ? o.n / 2 : o.n;
      break;
    case OpKind::Attention:
      t.rows = o.batch * o.q_len;
      t.cols = o.heads * o.head_dim;
      break;
    case OpKind::Norm:
    case OpKind::Elementwise:
    case OpKind::Embedding:
      t.rows = o.rows;
      t.cols = o.width;
      break;
    case OpKind::Transfer: {
      std::vector<int> p = g.preds(id);
      if (!p.empty()) {
        t = output_info(g, p.front());
        t.key = TensorKey{id, -1};
      } else {
        t.rows = 1;
        t.cols = static_cast<int64_t>(o.out_bytes) / dtype_bytes(o.dtype);
      }
      break;
    }
  }
  return t;
}

bool op_supported(const Op& o, std::string* why) {
  auto no = [&](const std::string& w) {
    *why = w;
    return false;
  };
  switch (o.kind) {
    case OpKind::Gemm:
      if (o.fn != OpFn::Linear && o.fn != OpFn::PatchEmbed && o.fn != OpFn::Conv)
        return no(std::string("gemm fn ") + to_string(o.fn) + " is not supported");
      if (o.m <= 0 || o.n <= 0 || o.k <= 0 || o.batch <= 0)
        return no("gemm needs m, n, k, batch > 0");
      if (o.epi.gate_up && o.n % 2 != 0) return no("gate_up needs an even n");
      if (o.epi.rope()) {
        if (o.epi.gate_up || o.epi.act != Activation::None || o.epi.residual || o.epi.gate)
          return no("a rope epilogue needs a GEMM without activation, gate_up, residual or gate");
        if (o.epi.rope_head_dim % 2 != 0 || o.epi.rope_cols <= 0 || o.epi.rope_cols > o.n ||
            o.epi.rope_cols % o.epi.rope_head_dim != 0)
          return no("a rope epilogue needs an even head_dim dividing its rotated columns (at most n)");
        if (o.epi.rope_batch <= 0 || (o.batch * o.m) % o.epi.rope_batch != 0)
          return no("a rope epilogue needs rows % batch == 0");
      }
      return true;
    case OpKind::Attention:
      if (o.fn != OpFn::SelfAttention && o.fn != OpFn::CrossAttention)
        return no(std::string("attention fn ") + to_string(o.fn) + " is not supported");
      if (o.batch <= 0 || o.heads <= 0 || o.kv_heads <= 0 || o.head_dim <= 0 ||
          o.q_len <= 0 || o.kv_len <= 0)
        return no("attention needs batch, heads, kv_heads, head_dim, q_len, kv_len > 0");
      if (o.heads % o.kv_heads != 0) return no("heads must be a multiple of kv_heads");
      if (o.kv_cached < 0 || o.kv_cached > o.kv_len) return no("kv_cached outside [0, kv_len]");
      if (o.kv_len - o.q_len < 0 && o.causal) return no("causal attention needs kv_len >= q_len");
      return true;
    case OpKind::Norm:
      if (o.fn != OpFn::RMSNorm && o.fn != OpFn::LayerNorm)
        return no(std::string("norm fn ") + to_string(o.fn) + " is not supported");
      if (o.rows <= 0 || o.width <= 0) return no("norm needs rows, width > 0");
      return true;
    case OpKind::Elementwise:
      switch (o.fn) {
        case OpFn::Add: case OpFn::Mul: case OpFn::Sub: case OpFn::Gelu: case OpFn::Silu: case OpFn::BiasAdd:
        case OpFn::EulerUpdate: case OpFn::Softmax: case OpFn::Copy:
          break;
        case OpFn::RoPE: {
          int64_t hd = o.head_dim > 0 ? o.head_dim : o.width;
          int64_t span = o.heads > 0 ? (o.heads + o.kv_heads) * hd : o.width;
          if (hd % 2 != 0 || span > o.width || span % hd != 0)
            return no("rope needs an even head_dim dividing the rotated columns");
          if (o.batch <= 0 || o.rows % o.batch != 0) return no("rope needs rows % batch == 0");
          break;
        }
        default:
          return no(std::string("elementwise fn ") + to_string(o.fn) + " is not supported");
      }
      if (o.rows <= 0 || o.width <= 0) return no("elementwise needs rows, width > 0");
      return true;
    case OpKind::Embedding:
      if (o.fn != OpFn::Lookup) return no("embedding fn must be lookup");
      if (o.rows <= 0 || o.width <= 0 || o.vocab <= 0)
        return no("embedding needs rows, width, vocab > 0");
      return true;
    case OpKind::Transfer:
      return true;
  }
  return no("unknown kind");
}

std::vector<OpPlan> plan_segment(const OpGraph& g, const std::vector<int>& ops) {
  if (ops.empty()) throw std::invalid_argument("segment has no ops");
  std::vector<OpPlan> plan;
  plan.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    int id = ops[i];
    if (id < 0 || static_cast<size_t>(id) >= g.size())
      throw std::invalid_argument("segment names op " + std::to_string(id) + " but the graph has " +
                                  std::to_string(g.size()) + " ops");
    if (i > 0 && id <= ops[i - 1])
      throw std::invalid_argument("segment ops must be in increasing id order (op " +
                                  std::to_string(id) + " after " + std::to_string(ops[i - 1]) +
                                  ")");
    const Op& o = g.op(id);
    std::string why;
    if (!op_supported(o, &why))
      throw std::invalid_argument("cannot run " + op_label(o) + ": " + why);
    OpPlan p;
    p.op = id;
    p.out = output_info(g, id);
    if (p.out.elems() <= 0)
      throw std::invalid_argument("cannot run " + op_label(o) + ": empty output");
    switch (o.kind) {
      case OpKind::Gemm: {
        std::vector<TensorInfo> preds = pred_outputs(g, id, -1);
        p.in[kX] = bind_role(preds, id, kX, o.batch * o.m, o.k, true);
        if (o.epi.residual) p.in[kResidual] = bind_role(preds, id, kResidual, p.out.rows, p.out.cols, false);
        if (o.epi.gate) p.in[kGate] = bind_role(preds, id, kGate, p.out.rows, p.out.cols, false);
        break;
      }
      case OpKind::Attention:
        plan_attention(g, o, &p);
        break;
      case OpKind::Norm: {
        std::vector<TensorInfo> preds = pred_outputs(g, id, -1);
        p.in[kA] = bind_role(preds, id, kA, o.rows, o.width, true);
        break;
      }
      case OpKind::Elementwise: {
        std::vector<TensorInfo> preds = pred_outputs(g, id, -1);
        if (o.fn == OpFn::Add || o.fn == OpFn::Mul || o.fn == OpFn::Sub) {
          p.in[kA] = bind_role(preds, id, kA, o.rows, o.width, false);
          p.in[kB] = bind_role(preds, id, kB, o.rows, o.width, false);
        } else if (o.fn == OpFn::EulerUpdate) {
          p.in[kB] = bind_role(preds, id, kB, o.rows, o.width, true);
          p.in[kA] = bind_role(preds, id, kA, o.rows, o.width, true);
          p.dt = g.steps > 0 ? -1.0 / g.steps : -0.1;
        } else if (o.fn == OpFn::Copy && find(preds, true, [&](const TensorInfo& t) {
                     return t.elems() == o.rows * o.width;
                   }) < 0 && (plan_concat(g, o, &p), !p.parts.empty())) {
          // concatenation
        } else {
          p.in[kA] = bind_role(preds, id, kA, o.rows, o.width, true);
        }
        break;
      }
      case OpKind::Embedding: {
        TensorInfo t = synthetic(id, kIndices, o.rows, 1);
        t.is_int = true;
        t.int_limit = o.vocab;
        p.in[kIndices] = slot_of(t, 0, 1);
        break;
      }
      case OpKind::Transfer: {
        std::vector<int> pr = g.preds(id);
        TensorInfo t = pr.empty() ? synthetic(id, kA, p.out.rows, p.out.cols)
                                  : output_info(g, pr.front());
        p.in[kA] = slot_of(t, 0, t.cols);
        break;
      }
    }
    plan.push_back(p);
  }
  // Synthetic inputs take their values from the op's name, which a graph rewrite that adds
  // or removes ops elsewhere (e.g. DP-Cache) leaves alone, unlike its id.
  for (OpPlan& p : plan) {
    auto name = [&](Slot& sl) {
      if (sl.used && sl.t.key.role >= 0) {
        sl.t.stream = g.op(sl.t.key.op).name;
        sl.t.const_rows = g.op(sl.t.key.op).const_rows;
      }
    };
    for (Slot& sl : p.in) name(sl);
    for (Slot& sl : p.parts) name(sl);
  }
  return plan;
}

std::vector<ConcatBlock> concat_blocks(const OpPlan& p) {
  std::vector<ConcatBlock> out;
  if (p.concat_cols) {
    int64_t col = 0;
    for (size_t i = 0; i < p.parts.size(); ++i) {
      const Slot& s = p.parts[i];
      out.push_back(ConcatBlock{static_cast<int>(i), 0, 0, col, s.t.rows - s.row});
      col += s.width;
    }
    return out;
  }
  const int64_t B = std::max<int64_t>(1, p.concat_batch);
  int64_t dst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (size_t i = 0; i < p.parts.size(); ++i) {
      const Slot& s = p.parts[i];
      const int64_t n = (s.t.rows - s.row) / B;
      out.push_back(ConcatBlock{static_cast<int>(i), b * n, dst, 0, n});
      dst += n;
    }
  return out;
}

std::vector<TensorInfo> segment_inputs(const std::vector<OpPlan>& plan) {
  std::set<int> produced;
  for (const OpPlan& p : plan) produced.insert(p.op);
  std::vector<TensorInfo> out;
  std::set<TensorKey> seen;
  auto add = [&](const Slot& s) {
    if (!s.used) return;
    if (s.t.key.role < 0 && produced.count(s.t.key.op)) return;
    if (seen.insert(s.t.key).second) out.push_back(s.t);
  };
  for (const OpPlan& p : plan) {
    for (const Slot& s : p.in) add(s);
    for (const Slot& s : p.parts) add(s);
  }
  std::sort(out.begin(), out.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.key < b.key; });
  return out;
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t synth_stream(uint64_t seed, const std::string& key) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  return splitmix(h ^ splitmix(seed));
}

float synth_value(uint64_t stream, uint64_t i) {
  uint64_t r = splitmix(stream + i * 0x9e3779b97f4a7c15ULL);
  return static_cast<float>(static_cast<double>(r >> 11) * (1.0 / 4503599627370496.0) - 1.0);
}

void synth_fill(float* dst, int64_t n, uint64_t stream, float scale, float offset) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = scale * synth_value(stream, static_cast<uint64_t>(i)) + offset;
}

void synth_fill_indices(int32_t* dst, int64_t n, uint64_t stream, int64_t limit) {
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = splitmix(stream + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL);
    dst[i] = static_cast<int32_t>(r % static_cast<uint64_t>(limit));
  }
}

std::string weight_key(const Op& o, const char* part) {
  // Without a weight_id, by name (as synthetic inputs are): an op inserted before it (DP-Cache's
  // delta, a pass) must not change its weights.
  const std::string owner = !o.weight_id.empty() ? o.weight_id : !o.name.empty() ? "op:" + o.name : "op" + std::to_string(o.id);
  return owner + "/" + part;
}

std::string input_key(TensorKey k) {
  return "in" + std::to_string(k.op) + "." + std::to_string(k.role);
}

std::string param_key(const Op& o, const char* part) {
  std::string key = weight_key(o, part);
  if (o.kind == OpKind::Norm && o.scale_folded) key += "|folded";
  const ParamSource& p = o.param;
  if ((o.kind == OpKind::Gemm || o.fn == OpFn::BiasAdd) && !p.empty())
    key += "|" + p.weight_id + ":" + std::to_string(p.src_k) + "x" + std::to_string(p.src_n) + "@" +
           std::to_string(p.row0) + "," + std::to_string(p.col0) + "/" + std::to_string(o.k) + "x" +
           std::to_string(o.n) + "|" + p.row_scale +
           (std::string(part) == "b" ? "|" + p.fold_input + "@" + std::to_string(p.fold_row0) + "+" +
                                           std::to_string(p.fold_cols)
                                     : std::string());
  return key;
}

namespace {

// A GEMM's parameter `part` ("w" or "b") as Op::param derives it from the source matrix.
void fill_derived(const Op& o, const std::string& part, uint64_t seed, float* dst, int64_t n) {
  const ParamSource& ps = o.param;
  const std::string id = ps.weight_id.empty() ? (o.weight_id.empty() ? "op" + std::to_string(o.id) : o.weight_id)
                                              : ps.weight_id;
  const int64_t K = o.k, N = o.n;
  const int64_t sk = ps.src_k > 0 ? ps.src_k : K, sn = ps.src_n > 0 ? ps.src_n : N;
  const uint64_t ws = synth_stream(seed, id + "/w");
  const double wscale = std::sqrt(3.0 / static_cast<double>(sk));
  auto src_w = [&](int64_t row, int64_t col) {
    return wscale * synth_value(ws, static_cast<uint64_t>(row * sn + col));
  };
  if (part == "w") {
    if (n != K * N) throw std::logic_error("fill_weight: " + o.name + " w needs k * n values");
    std::vector<double> scale(static_cast<size_t>(K), 1.0);
    if (!ps.row_scale.empty()) {
      const uint64_t ss = synth_stream(seed, ps.row_scale + "/scale");
      for (int64_t r = 0; r < K; ++r) scale[static_cast<size_t>(r)] = 0.1 * synth_value(ss, static_cast<uint64_t>(r)) + 1;
    }
    for (int64_t r = 0; r < K; ++r)
      for (int64_t j = 0; j < N; ++j)
        dst[r * N + j] = static_cast<float>(src_w(ps.row0 + r, ps.col0 + j) * scale[static_cast<size_t>(r)]);
    return;
  }
  if (n != N) throw std::logic_error("fill_weight: " + o.name + " b needs n values");
  const uint64_t bs = synth_stream(seed, id + "/b");
  for (int64_t j = 0; j < N; ++j) dst[j] = 0.1f * synth_value(bs, static_cast<uint64_t>(ps.col0 + j));
  if (!ps.fold_input.empty()) {
    // The per-step constant input's row (fill_input of a const_rows tensor) times its rows of W.
    const uint64_t xs = synth_stream(seed, "in:" + ps.fold_input + ".0");
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < ps.fold_cols; ++i)
        acc += static_cast<double>(synth_value(xs, static_cast<uint64_t>(i))) * src_w(ps.fold_row0 + i, ps.col0 + j);
      dst[j] = static_cast<float>(dst[j] + acc);
    }
  }
}

}  // namespace

void fill_weight(const Op& o, const char* part, uint64_t seed, float* dst, int64_t n) {
  std::string p = part;
  if (o.kind == OpKind::Gemm && (p == "w" || p == "b") && !o.param.empty()) return fill_derived(o, p, seed, dst, n);
  if (o.fn == OpFn::BiasAdd && p == "b" && !o.param.weight_id.empty()) {
    // The bias of the GEMM it was split from: columns [col0, col0 + n) of its source's bias.
    const uint64_t bs = synth_stream(seed, o.param.weight_id + "/b");
    for (int64_t j = 0; j < n; ++j) dst[j] = 0.1f * synth_value(bs, static_cast<uint64_t>(o.param.col0 + j));
    return;
  }
  if (o.kind == OpKind::Norm && o.scale_folded && p == "scale") {
    std::fill(dst, dst + n, 1.0f);
    return;
  }
  uint64_t s = synth_stream(seed, weight_key(o, part));
  if (p == "w") synth_fill(dst, n, s, static_cast<float>(std::sqrt(3.0 / static_cast<double>(o.k))), 0);
  else if (p == "b" || p == "shift") synth_fill(dst, n, s, 0.1f, 0);
  else if (p == "scale") synth_fill(dst, n, s, 0.1f, 1);
  else synth_fill(dst, n, s, 1, 0);
}

void fill_input(const TensorInfo& t, uint64_t seed, float* dst) {
  uint64_t s = synth_stream(seed, t.stream.empty() ? input_key(t.key)
                                                   : "in:" + t.stream + "." + std::to_string(t.key.role));
  if (t.is_int) {
    std::vector<int32_t> idx(static_cast<size_t>(t.elems()));
    synth_fill_indices(idx.data(), t.elems(), s, t.int_limit);
    for (int64_t i = 0; i < t.elems(); ++i) dst[i] = static_cast<float>(idx[static_cast<size_t>(i)]);
  } else if (t.const_rows) {
    synth_fill(dst, t.cols, s, 1, 0);
    for (int64_t r = 1; r < t.rows; ++r) std::copy(dst, dst + t.cols, dst + r * t.cols);
  } else {
    synth_fill(dst, t.elems(), s, 1, 0);
  }
}

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) {  // inf / nan: truncate
    u &= 0xffff0000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
  }
  std::memcpy(&x, &u, 4);
  return x;
}

// x rounded to the nearest IEEE half (ties to even; subnormals, and infinity past 65504), as
// a float. By hand: _Float16 is not available on every target this builds for.
float round_f16(float x) {
  if (!std::isfinite(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.f) return std::copysign(INFINITY, x);
  int e = 0;
  std::frexp(a, &e);                                   // a = m 2^e, m in [0.5, 1)
  const float ulp = std::ldexp(1.0f, std::max(e - 11, -24));  // 11 significant bits; subnormal spacing 2^-24
  return std::copysign(std::nearbyint(a / ulp) * ulp, x);     // the default rounding: to nearest, ties to even
}

float round_to(DType dtype, float x) {
  if (dtype == DType::BF16) return round_bf16(x);
  if (dtype == DType::F16) return round_f16(x);
  return x;
}

}  // namespace vlasim
