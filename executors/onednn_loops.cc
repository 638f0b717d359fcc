// Norms, RoPE, elementwise ops, embedding lookups and transfers as OpenMP loops over rows
// (fp32 arithmetic, values stored in the dtype).
#include <cmath>
#include <cstring>
#include <limits>

#include "executors/onednn_kernels.h"

namespace vlasim::onednn {

namespace {

// A read-only view of a slot: element (r, c) is base[r * ld + c].
template <class T>
struct In {
  const T* base;
  int64_t ld;
  float operator()(int64_t r, int64_t c) const { return load(base, r * ld + c); }
};

template <class T>
class LoopKernel : public Kernel {
 public:
  LoopKernel(const Context& c, const OpPlan& p) : c_(c), p_(p), o_(c.g->op(p.op)) {
    out_ = reinterpret_cast<T*>(c.ptr(p.out));
    for (int r = 0; r < kRoles; ++r)
      if (p.in[r].used) {
        in_[r] = In<T>{reinterpret_cast<const T*>(c.ptr(p.in[r])), p.in[r].t.cols};
        raw_[r] = c.ptr(p.in[r]);
      }
    const int64_t C = p.out.cols;
    blocks_ = concat_blocks(p);
    if (o_.kind == OpKind::Norm) {
      scale_ = c.vec(o_, "scale", C).data();
      if (o_.fn == OpFn::LayerNorm) shift_ = c.vec(o_, "shift", C).data();
    }
    if (o_.fn == OpFn::BiasAdd) shift_ = c.vec(o_, "b", C).data();
    if (o_.kind == OpKind::Embedding) {
      memory_table_ = c.matrix(o_, "table", o_.vocab, C, 0, C,
                               dnnl::memory::desc({o_.vocab, C}, c.dt(), dnnl::memory::format_tag::ab));
      table_ = reinterpret_cast<const T*>(memory_table_.get_data_handle());
    }
    if (o_.fn == OpFn::RoPE) {
      hd_ = o_.head_dim > 0 ? o_.head_dim : C;
      span_ = o_.heads > 0 ? (o_.heads + o_.kv_heads) * hd_ : C;
      per_ = p.out.rows / o_.batch;
      rope_tables(per_, hd_, &cos_, &sin_);
    }
  }

  void run(const dnnl::stream&) override {
    const int64_t R = p_.out.rows, C = p_.out.cols;
    T* out = out_;
    const In<T> a = in_[kA], b = in_[kB];
    switch (o_.kind) {
      case OpKind::Norm: {
        const float* sc = scale_;
        const float* sh = shift_;
        const bool ln = sh != nullptr;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r) {
          float mean = 0, var = 0;
          if (ln) {
            for (int64_t j = 0; j < C; ++j) mean += a(r, j);
            mean /= static_cast<float>(C);
          }
          for (int64_t j = 0; j < C; ++j) {
            float d = a(r, j) - mean;
            var += d * d;
          }
          const float inv = 1.f / std::sqrt(var / static_cast<float>(C) + 1e-6f);
          if (ln)
            for (int64_t j = 0; j < C; ++j) store(out, r * C + j, (a(r, j) - mean) * inv * sc[j] + sh[j]);
          else
            for (int64_t j = 0; j < C; ++j) store(out, r * C + j, a(r, j) * inv * sc[j]);
        }
        break;
      }
      case OpKind::Elementwise:
        if (!p_.parts.empty()) {  // concatenation (by rows or by columns)
          for (const ConcatBlock& b : blocks_) {
            const Slot& s = p_.parts[static_cast<size_t>(b.part)];
            const T* src = reinterpret_cast<const T*>(c_.ptr(s)) + b.src_row * s.t.cols;
            T* dst = out + b.dst_row * C + b.dst_col;
            if (s.width == C && s.t.cols == C) {
              std::memcpy(dst, src, static_cast<size_t>(b.rows * C) * sizeof(T));
            } else {
              for (int64_t r = 0; r < b.rows; ++r)
                std::memcpy(dst + r * C, src + r * s.t.cols, static_cast<size_t>(s.width) * sizeof(T));
            }
          }
          break;
        }
        elementwise(R, C, a, b);
        break;
      case OpKind::Embedding: {
        const int32_t* idx = reinterpret_cast<const int32_t*>(raw_[kIndices]);
        const T* tab = table_;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          std::memcpy(out + r * C, tab + static_cast<int64_t>(idx[r]) * C, static_cast<size_t>(C) * sizeof(T));
        break;
      }
      case OpKind::Transfer:
        std::memcpy(out, raw_[kA], static_cast<size_t>(R * C) * sizeof(T));
        break;
      default:
        break;
    }
  }

 private:
  void elementwise(int64_t R, int64_t C, In<T> a, In<T> b) {
    T* out = out_;
    switch (o_.fn) {
      case OpFn::Add:
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, a(r, j) + b(r, j));
        break;
      case OpFn::Mul:
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, a(r, j) * b(r, j));
        break;
      case OpFn::Sub:  // the later input (b) minus the earlier (a)
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, b(r, j) - a(r, j));
        break;
      case OpFn::EulerUpdate: {
        const float dt = static_cast<float>(p_.dt);
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, a(r, j) + dt * b(r, j));
        break;
      }
      case OpFn::BiasAdd: {
        const float* bias = shift_;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, a(r, j) + bias[j]);
        break;
      }
      case OpFn::Gelu:
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) {
            float x = a(r, j);
            store(out, r * C + j, 0.5f * x * (1.f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))));
          }
        break;
      case OpFn::Silu:
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) {
            float x = a(r, j);
            store(out, r * C + j, x / (1.f + std::exp(-x)));
          }
        break;
      case OpFn::Copy:
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, a(r, j));
        break;
      case OpFn::Softmax:
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r) {
          float mx = -std::numeric_limits<float>::infinity(), sum = 0;
          for (int64_t j = 0; j < C; ++j) mx = std::max(mx, a(r, j));
          for (int64_t j = 0; j < C; ++j) sum += std::exp(a(r, j) - mx);
          const float inv = 1.f / sum;
          for (int64_t j = 0; j < C; ++j) store(out, r * C + j, std::exp(a(r, j) - mx) * inv);
        }
        break;
      case OpFn::RoPE:
        rope_rows(a, out, R, C, span_, hd_, per_, cos_.data(), sin_.data());
        break;
      default:
        break;
    }
  }

  Context c_;
  OpPlan p_;
  const Op& o_;
  T* out_ = nullptr;
  In<T> in_[kRoles] = {};
  const char* raw_[kRoles] = {};
  const float* scale_ = nullptr;
  const float* shift_ = nullptr;
  dnnl::memory memory_table_;
  const T* table_ = nullptr;
  int64_t hd_ = 0, span_ = 0, per_ = 1;
  std::vector<float> cos_, sin_;
  std::vector<ConcatBlock> blocks_;
};

}  // namespace

void rope_tables(int64_t positions, int64_t head_dim, std::vector<float>* cos, std::vector<float>* sin) {
  const int64_t half = head_dim / 2;
  cos->resize(static_cast<size_t>(positions * half));
  sin->resize(cos->size());
  for (int64_t pos = 0; pos < positions; ++pos)
    for (int64_t i = 0; i < half; ++i) {
      const double th = static_cast<double>(pos) *
                        std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      (*cos)[static_cast<size_t>(pos * half + i)] = static_cast<float>(std::cos(th));
      (*sin)[static_cast<size_t>(pos * half + i)] = static_cast<float>(std::sin(th));
    }
}

std::unique_ptr<Kernel> make_loop_kernel(const Context& c, const OpPlan& p) {
  if (c.dtype == DType::BF16) return std::make_unique<LoopKernel<uint16_t>>(c, p);
  return std::make_unique<LoopKernel<float>>(c, p);
}

}  // namespace vlasim::onednn
