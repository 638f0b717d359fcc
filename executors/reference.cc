#include "executors/reference.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

namespace vlasim {

double ref_activation(Activation a, double x) {
  switch (a) {
    case Activation::None: return x;
    case Activation::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::GeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::Silu: return x / (1.0 + std::exp(-x));
    case Activation::Relu: return x > 0 ? x : 0.0;
  }
  return x;
}

ReferenceExecutor::ReferenceExecutor(ExecOptions opt) : opt_(std::move(opt)) {
  if (opt_.dtype != DType::F32 && opt_.dtype != DType::BF16 && opt_.dtype != DType::F16)
    throw std::invalid_argument(std::string("reference executor: dtype ") +
                                to_string(opt_.dtype) + " is not supported (fp32, bf16, fp16)");
}

std::string ReferenceExecutor::device() const {
  return std::string("cpu (float64 reference, values rounded to ") + to_string(opt_.dtype) + ")";
}

ReferenceExecutor::Segment& ReferenceExecutor::seg(int id) {
  if (id < 0 || static_cast<size_t>(id) >= segments_.size())
    throw std::out_of_range("reference executor: no segment " + std::to_string(id));
  return segments_[static_cast<size_t>(id)];
}
const ReferenceExecutor::Segment& ReferenceExecutor::seg(int id) const {
  return const_cast<ReferenceExecutor*>(this)->seg(id);
}

const std::vector<double>& ReferenceExecutor::weight(const Op& o, const char* part, int64_t n) {
  std::string key = param_key(o, part);
  auto it = weights_.find(key);
  if (it != weights_.end() && static_cast<int64_t>(it->second.size()) == n) return it->second;
  std::vector<float> f(static_cast<size_t>(n));
  fill_weight(o, part, opt_.seed, f.data(), n);
  std::vector<double> d(f.size());
  for (size_t i = 0; i < f.size(); ++i) d[i] = round_to(opt_.dtype, f[i]);
  return weights_[key] = std::move(d);
}

int ReferenceExecutor::prepare(const OpGraph& g, const std::vector<int>& ops) {
  Segment s;
  s.g = &g;
  s.plan = plan_segment(g, ops);
  for (const TensorInfo& t : segment_inputs(s.plan)) {
    std::vector<float> f(static_cast<size_t>(t.elems()));
    fill_input(t, opt_.seed, f.data());
    std::vector<double> d(f.size());
    for (size_t i = 0; i < f.size(); ++i) d[i] = t.is_int ? f[i] : round_to(opt_.dtype, f[i]);
    s.tensors[t.key] = std::move(d);
  }
  for (const OpPlan& p : s.plan) {
    s.tensors[p.out.key].assign(static_cast<size_t>(p.out.elems()), 0.0);
    s.timing.ops.push_back(p.op);
  }
  s.timing.seconds.assign(s.plan.size(), 0.0);
  segments_.push_back(std::move(s));
  return static_cast<int>(segments_.size()) - 1;
}

std::vector<TensorInfo> ReferenceExecutor::inputs(int segment) const {
  return segment_inputs(seg(segment).plan);
}

void ReferenceExecutor::set_input(int segment, TensorKey key, const std::vector<float>& data) {
  Segment& s = seg(segment);
  for (const TensorInfo& t : segment_inputs(s.plan))
    if (t.key == key) {
      if (static_cast<int64_t>(data.size()) != t.elems())
        throw std::invalid_argument("set_input: " + input_key(key) + " holds " +
                                    std::to_string(t.elems()) + " values, got " +
                                    std::to_string(data.size()));
      std::vector<double>& d = s.tensors[key];
      for (size_t i = 0; i < data.size(); ++i)
        d[i] = t.is_int ? std::round(data[i]) : round_to(opt_.dtype, data[i]);
      return;
    }
  throw std::invalid_argument("set_input: " + input_key(key) + " is not an input of segment " +
                              std::to_string(segment));
}

std::vector<float> ReferenceExecutor::get_output(int segment, int op) const {
  const Segment& s = seg(segment);
  auto it = s.tensors.find(TensorKey{op, -1});
  if (it == s.tensors.end())
    throw std::invalid_argument("get_output: op " + std::to_string(op) + " is not in segment " +
                                std::to_string(segment));
  return std::vector<float>(it->second.begin(), it->second.end());
}

const SegmentTiming& ReferenceExecutor::run(int segment) {
  Segment& s = seg(segment);
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < s.plan.size(); ++i) {
    auto a = std::chrono::steady_clock::now();
    run_op(s, s.plan[i]);
    s.timing.seconds[i] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  }
  s.timing.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s.timing;
}

namespace {

// Rotates the first `span` columns of out[R, C] in place, per head of `hd`, at position
// r % per (the RoPE op's rule, executors/plan.h).
void rope_in_place(double* out, int64_t R, int64_t C, int64_t span, int64_t hd, int64_t per) {
  const int64_t half = hd / 2;
  for (int64_t r = 0; r < R; ++r) {
    const double pos = static_cast<double>(r % per);
    for (int64_t h0 = 0; h0 < span; h0 += hd)
      for (int64_t i = 0; i < half; ++i) {
        const double th = pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
        const double x0 = out[r * C + h0 + i], x1 = out[r * C + h0 + half + i];
        out[r * C + h0 + i] = x0 * std::cos(th) - x1 * std::sin(th);
        out[r * C + h0 + half + i] = x1 * std::cos(th) + x0 * std::sin(th);
      }
  }
}

// Element (r, c) of a slot's view.
struct View {
  const double* base;
  int64_t ld;
  double operator()(int64_t r, int64_t c) const { return base[r * ld + c]; }
};

using Tensors = std::map<TensorKey, std::vector<double>>;
// The executor's weight `part` of the op run, n values (ReferenceExecutor::weight).
using WeightFn = std::function<const std::vector<double>&(const char* part, int64_t n)>;

// One planned op of a segment: the op, its plan, the segment's tensors and its output [R, C].
struct RefOp {
  const Op& o;
  const OpPlan& p;
  const Tensors& tensors;
  std::vector<double>& out;
  int64_t R, C;
  // The view of input slot `role`.
  View in(int role) const {
    const Slot& sl = p.in[role];
    return View{tensors.at(sl.t.key).data() + sl.offset(), sl.t.cols};
  }
};

// out = epilogue(x w + b): activation (gate_up: act(first half) x second half), gate,
// residual, then RoPE on the first rope_cols columns.
void ref_gemm(const RefOp& a, const WeightFn& weight) {
  const Op& o = a.o;
  const int64_t R = a.R, C = a.C, K = o.k, N = o.n;
  std::vector<double>& out = a.out;
  const std::vector<double>& w = weight("w", K * N);
  const std::vector<double>* b = o.epi.bias ? &weight("b", N) : nullptr;
  View x = a.in(kX);
  std::vector<double> acc(static_cast<size_t>(N));
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t j = 0; j < N; ++j) acc[j] = b ? (*b)[j] : 0.0;
    for (int64_t kk = 0; kk < K; ++kk) {
      double xv = x(r, kk);
      const double* wr = &w[kk * N];
      for (int64_t j = 0; j < N; ++j) acc[j] += xv * wr[j];
    }
    for (int64_t j = 0; j < C; ++j) {
      double v = o.epi.gate_up ? ref_activation(o.epi.act, acc[j]) * acc[C + j]
                               : ref_activation(o.epi.act, acc[j]);
      if (o.epi.gate) v *= a.in(kGate)(r, j);
      if (o.epi.residual) v += a.in(kResidual)(r, j);
      out[r * C + j] = v;
    }
  }
  if (o.epi.rope()) rope_in_place(out.data(), R, C, o.epi.rope_cols, o.epi.rope_head_dim, R / o.epi.rope_batch);
}

// Scaled dot-product attention per (batch, head) over the cached and the new K|V rows,
// with the op's causal mask and window; grouped kv heads.
void ref_attention(const RefOp& a) {
  const Op& o = a.o;
  const int64_t C = a.C;
  std::vector<double>& out = a.out;
  const int64_t B = o.batch, H = o.heads, hd = o.head_dim, G = H / o.kv_heads;
  const int64_t kvc = o.kv_cached, L = o.kv_len - kvc, q = o.q_len, T = o.kv_len;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  View Q = a.in(kQ);
  std::vector<double> sc(static_cast<size_t>(T));
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t h = 0; h < H; ++h) {
      int64_t kvh = h / G;
      for (int64_t i = 0; i < q; ++i) {
        int64_t pos = T - q + i;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < T; ++j) {
          bool ok = (!o.causal || j <= pos) && (o.window <= 0 || j / o.window == pos / o.window);
          if (!ok) {
            sc[j] = -std::numeric_limits<double>::infinity();
            continue;
          }
          View Kv = j < kvc ? a.in(kCacheK) : a.in(kK);
          int64_t row = j < kvc ? bb * kvc + j : bb * L + (j - kvc);
          double d = 0;
          for (int64_t c = 0; c < hd; ++c) d += Q(bb * q + i, h * hd + c) * Kv(row, kvh * hd + c);
          sc[j] = d * scale;
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          sc[j] = std::isinf(sc[j]) ? 0.0 : std::exp(sc[j] - mx);
          sum += sc[j];
        }
        for (int64_t c = 0; c < hd; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) {
            if (sc[j] == 0.0) continue;
            View Vv = j < kvc ? a.in(kCacheV) : a.in(kV);
            int64_t row = j < kvc ? bb * kvc + j : bb * L + (j - kvc);
            acc += sc[j] * Vv(row, kvh * hd + c);
          }
          out[(bb * q + i) * C + h * hd + c] = acc / sum;
        }
      }
    }
}

// RMSNorm (no mean, no shift) or LayerNorm per row, eps 1e-6.
void ref_norm(const RefOp& a, const WeightFn& weight) {
  const Op& o = a.o;
  const int64_t R = a.R, C = a.C;
  std::vector<double>& out = a.out;
  const std::vector<double>& sc = weight("scale", C);
  const std::vector<double>* sh = o.fn == OpFn::LayerNorm ? &weight("shift", C) : nullptr;
  View x = a.in(kA);
  for (int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    if (sh) {
      for (int64_t c = 0; c < C; ++c) mean += x(r, c);
      mean /= static_cast<double>(C);
    }
    for (int64_t c = 0; c < C; ++c) var += (x(r, c) - mean) * (x(r, c) - mean);
    var /= static_cast<double>(C);
    double inv = 1.0 / std::sqrt(var + 1e-6);
    for (int64_t c = 0; c < C; ++c)
      out[r * C + c] = (x(r, c) - mean) * inv * sc[c] + (sh ? (*sh)[c] : 0.0);
  }
}

// A concatenation (by rows or by columns): each part's block copied to its place in out.
void ref_concat(const RefOp& a) {
  const int64_t C = a.C;
  std::vector<double>& out = a.out;
  for (const ConcatBlock& b : concat_blocks(a.p)) {
    const Slot& sl = a.p.parts[static_cast<size_t>(b.part)];
    View v{a.tensors.at(sl.t.key).data() + sl.offset(), sl.t.cols};
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t c = 0; c < sl.width; ++c)
        out[(b.dst_row + r) * C + b.dst_col + c] = v(b.src_row + r, c);
  }
}

// An elementwise fn other than a concatenation; throws std::logic_error for one unplanned.
void ref_elementwise(const RefOp& args, const WeightFn& weight) {
  const Op& o = args.o;
  const int64_t R = args.R, C = args.C;
  std::vector<double>& out = args.out;
  View a = args.in(kA);
  switch (o.fn) {
    case OpFn::Add: case OpFn::Mul: case OpFn::Sub: {
      View b = args.in(kB);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c)
          out[r * C + c] = o.fn == OpFn::Add   ? a(r, c) + b(r, c)
                           : o.fn == OpFn::Sub ? b(r, c) - a(r, c)
                                               : a(r, c) * b(r, c);
      break;
    }
    case OpFn::EulerUpdate: {
      View b = args.in(kB);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) out[r * C + c] = a(r, c) + args.p.dt * b(r, c);
      break;
    }
    case OpFn::BiasAdd: {
      const std::vector<double>& bias = weight("b", C);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) out[r * C + c] = a(r, c) + bias[static_cast<size_t>(c)];
      break;
    }
    case OpFn::Gelu: case OpFn::Silu: case OpFn::Copy:
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c)
          out[r * C + c] = ref_activation(o.fn == OpFn::Gelu   ? Activation::GeluTanh
                                          : o.fn == OpFn::Silu ? Activation::Silu
                                                               : Activation::None,
                                          a(r, c));
      break;
    case OpFn::Softmax:
      for (int64_t r = 0; r < R; ++r) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t c = 0; c < C; ++c) mx = std::max(mx, a(r, c));
        for (int64_t c = 0; c < C; ++c) sum += std::exp(a(r, c) - mx);
        for (int64_t c = 0; c < C; ++c) out[r * C + c] = std::exp(a(r, c) - mx) / sum;
      }
      break;
    case OpFn::RoPE: {
      const int64_t hd = o.head_dim > 0 ? o.head_dim : C;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) out[r * C + c] = a(r, c);
      rope_in_place(out.data(), R, C, o.heads > 0 ? (o.heads + o.kv_heads) * hd : C, hd, R / o.batch);
      break;
    }
    default:
      throw std::logic_error("reference: unplanned elementwise fn");
  }
}

// Row r of out is row idx(r, 0) of the embedding table.
void ref_embedding(const RefOp& a, const WeightFn& weight) {
  const int64_t R = a.R, C = a.C;
  const std::vector<double>& tab = weight("table", a.o.vocab * C);
  View idx = a.in(kIndices);
  for (int64_t r = 0; r < R; ++r) {
    int64_t i = static_cast<int64_t>(idx(r, 0));
    for (int64_t c = 0; c < C; ++c) a.out[r * C + c] = tab[i * C + c];
  }
}

}  // namespace

void ReferenceExecutor::run_op(Segment& s, const OpPlan& p) {
  const Op& o = s.g->op(p.op);
  const RefOp a{o, p, s.tensors, s.tensors.at(p.out.key), p.out.rows, p.out.cols};
  const WeightFn w = [&](const char* part, int64_t n) -> const std::vector<double>& { return weight(o, part, n); };
  switch (o.kind) {
    case OpKind::Gemm: ref_gemm(a, w); break;
    case OpKind::Attention: ref_attention(a); break;
    case OpKind::Norm: ref_norm(a, w); break;
    case OpKind::Elementwise:
      if (!p.parts.empty()) ref_concat(a);
      else ref_elementwise(a, w);
      break;
    case OpKind::Embedding: ref_embedding(a, w); break;
    case OpKind::Transfer: {
      const std::vector<double>& in = s.tensors.at(p.in[kA].t.key);
      for (size_t i = 0; i < a.out.size(); ++i) a.out[i] = in[i];
      break;
    }
  }
}

}  // namespace vlasim
