// Gemm ops (Linear, PatchEmbed, Conv as GEMM) as oneDNN matmuls with fused epilogues.
#include <cmath>

#include "executors/onednn_kernels.h"

namespace vlasim::onednn {

using dnnl::algorithm;
using dnnl::matmul;
using dnnl::memory;

namespace {

bool act_algorithm(Activation a, algorithm* alg) {
  switch (a) {
    case Activation::None: return false;
    case Activation::GeluTanh: *alg = algorithm::eltwise_gelu_tanh; return true;
    case Activation::GeluErf: *alg = algorithm::eltwise_gelu_erf; return true;
    case Activation::Silu: *alg = algorithm::eltwise_swish; return true;
    case Activation::Relu: *alg = algorithm::eltwise_relu; return true;
  }
  return false;
}

float act_f32(Activation a, float x) {
  switch (a) {
    case Activation::None: return x;
    case Activation::GeluTanh:
      return 0.5f * x * (1.f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    case Activation::GeluErf: return 0.5f * x * (1.f + std::erf(x * 0.7071067812f));
    case Activation::Silu: return x / (1.f + std::exp(-x));
    case Activation::Relu: return x > 0 ? x : 0.f;
  }
  return x;
}

memory::desc view_md(const Slot& s, int64_t rows, memory::data_type dt) {
  return memory::desc({rows, s.width}, dt, memory::dims{s.t.cols, 1});
}

class GemmKernel : public Kernel {
 public:
  GemmKernel(const Context& c, const OpPlan& p) : c_(c), p_(p), o_(c.g->op(p.op)) {
    const int64_t M = p.out.rows, N = o_.n, W = p.out.cols;
    const memory::data_type dt = c.dt();
    memory::desc src = view_md(p.in[kX], M, dt);
    char* out = c.ptr(p.out);
    if (!o_.epi.gate_up) {
      main_ = build(src, 0, N, N, o_.epi.act, nullptr, out, true);
    } else if (c.gate_up == GateUpMode::TwoMatmuls) {
      tmp_ = Buffer(*c.arena, static_cast<size_t>(M * W * c.elem_bytes()));
      gate_ = build(src, 0, W, N, o_.epi.act, nullptr, tmp_.data(), false);
      main_ = build(src, W, W, N, Activation::None, tmp_.data(), out, true);
    } else {
      tmp_ = Buffer(*c.arena, static_cast<size_t>(M * N * c.elem_bytes()));
      main_ = build(src, 0, N, N, Activation::None, nullptr, tmp_.data(), false);
    }
    if (o_.epi.rope()) rope_tables(M / o_.epi.rope_batch, o_.epi.rope_head_dim, &cos_, &sin_);
  }

  void run(const dnnl::stream& s) override {
    if (o_.epi.gate_up && c_.gate_up == GateUpMode::TwoMatmuls) gate_.run(s);
    main_.run(s);
    if (o_.epi.gate_up && c_.gate_up == GateUpMode::OneMatmul) {
      if (c_.dtype == DType::BF16)
        finish(reinterpret_cast<const uint16_t*>(tmp_.data()));
      else
        finish(reinterpret_cast<const float*>(tmp_.data()));
    }
    if (o_.epi.rope()) {
      if (c_.dtype == DType::BF16)
        rope(reinterpret_cast<uint16_t*>(c_.ptr(p_.out)));
      else
        rope(reinterpret_cast<float*>(c_.ptr(p_.out)));
    }
  }

  std::vector<Exec*> execs() override {
    if (o_.epi.gate_up && c_.gate_up == GateUpMode::TwoMatmuls) return {&gate_, &main_};
    return {&main_};
  }

 private:
  // A matmul over weight columns [col0, col0 + cols) of the [k, full] weight, with
  // activation `act`, then * mul_by (a [M, cols] tensor in the dtype) when given, then the
  // op's gate and residual when `epilogue`.
  Exec build(const memory::desc& src, int64_t col0, int64_t cols,
             int64_t full, Activation act, char* mul_by, char* dst_ptr, bool epilogue) {
    const int64_t M = p_.out.rows, K = o_.k;
    const memory::data_type dt = c_.dt();
    memory::desc dst({M, cols}, dt, memory::dims{cols, 1});
    memory::desc wany({K, cols}, dt, memory::format_tag::any);
    memory::desc bias({1, cols}, dt, memory::format_tag::ab);
    dnnl::post_ops po;
    std::vector<std::pair<memory::desc, char*>> bins;
    algorithm alg;
    if (act_algorithm(act, &alg)) po.append_eltwise(1.f, alg, act == Activation::Silu ? 1.f : 0.f, 0.f);
    auto binary = [&](algorithm a, const memory::desc& md, char* ptr) {
      po.append_binary(a, md);
      bins.push_back({md, ptr});
    };
    if (mul_by) binary(algorithm::binary_mul, dst, mul_by);
    if (epilogue && o_.epi.gate)
      binary(algorithm::binary_mul, view_md(p_.in[kGate], M, dt), c_.ptr(p_.in[kGate]));
    if (epilogue && o_.epi.residual)
      binary(algorithm::binary_add, view_md(p_.in[kResidual], M, dt), c_.ptr(p_.in[kResidual]));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(po);
    matmul::primitive_desc pd =
        o_.epi.bias ? matmul::primitive_desc(matmul::desc(src, wany, bias, dst), attr, c_.eng)
                    : matmul::primitive_desc(matmul::desc(src, wany, dst), attr, c_.eng);
    Exec e;
    e.prim = matmul(pd);
    e.scratch_md = pd.scratchpad_desc();
    e.arg(DNNL_ARG_SRC, memory(src, c_.eng, c_.ptr(p_.in[kX])));
    e.arg(DNNL_ARG_WEIGHTS, c_.matrix(o_, "w", K, full, col0, cols, pd.weights_desc()));
    if (o_.epi.bias) e.arg(DNNL_ARG_BIAS, c_.matrix(o_, "b", 1, full, col0, cols, pd.bias_desc()));
    e.arg(DNNL_ARG_DST, memory(dst, c_.eng, dst_ptr));
    int first_bin = po.len() - static_cast<int>(bins.size());
    for (size_t i = 0; i < bins.size(); ++i)
      e.arg(DNNL_ARG_ATTR_MULTIPLE_POST_OP(first_bin + static_cast<int>(i)) | DNNL_ARG_SRC_1,
            memory(bins[i].first, c_.eng, bins[i].second));
    return e;
  }

  template <class T>
  void finish(const T* t) {
    const int64_t M = p_.out.rows, W = p_.out.cols, N = o_.n;
    T* out = reinterpret_cast<T*>(c_.ptr(p_.out));
    const T* gate = o_.epi.gate ? reinterpret_cast<const T*>(c_.ptr(p_.in[kGate])) : nullptr;
    const T* res = o_.epi.residual ? reinterpret_cast<const T*>(c_.ptr(p_.in[kResidual])) : nullptr;
    const int64_t lg = p_.in[kGate].t.cols, lr = p_.in[kResidual].t.cols;
    const Activation act = o_.epi.act;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t j = 0; j < W; ++j) {
        float v = act_f32(act, load(t, r * N + j)) * load(t, r * N + W + j);
        if (gate) v *= load(gate, r * lg + j);
        if (res) v += load(res, r * lr + j);
        store(out, r * W + j, v);
      }
  }

  // The rope epilogue, in place on the output (as the RoPE op of onednn_loops.cc).
  template <class T>
  void rope(T* out) {
    const int64_t M = p_.out.rows, C = p_.out.cols;
    rope_rows([out, C](int64_t r, int64_t j) { return load(out, r * C + j); }, out, M, C, o_.epi.rope_cols,
              o_.epi.rope_head_dim, M / o_.epi.rope_batch, cos_.data(), sin_.data());
  }

  Context c_;
  OpPlan p_;
  const Op& o_;
  Buffer tmp_;
  Exec gate_, main_;
  std::vector<float> cos_, sin_;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm(const Context& c, const OpPlan& p) {
  return std::make_unique<GemmKernel>(c, p);
}

}  // namespace vlasim::onednn
