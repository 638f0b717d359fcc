// Attention: S = Q K^T / sqrt(hd) (batched oneDNN matmuls over [batch, kv head, heads per
// kv head] reading Q, K, V in place through strides: no K/V copies), a mask loop, softmax_v2,
// O = P V. Cached keys and local keys are two key sources writing adjacent score columns;
// the second P V matmul accumulates with a sum post-op.
#include <cmath>
#include <limits>

#include "executors/onednn_kernels.h"

namespace vlasim::onednn {

using dnnl::matmul;
using dnnl::memory;

namespace {

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(const Context& c, const OpPlan& p) : c_(c), o_(c.g->op(p.op)) {
    const int64_t B = o_.batch, H = o_.heads, KV = o_.kv_heads, hd = o_.head_dim;
    const int64_t R = H / KV, q = o_.q_len, T = o_.kv_len, kvc = o_.kv_cached;
    const int64_t L = T - kvc;
    const memory::data_type dt = c.dt();
    rows_ = B * H * q;
    T_ = T;
    scores_ = Buffer(*c.arena, static_cast<size_t>(rows_ * T * 4));
    if (c.dtype != DType::F32) probs_ = Buffer(*c.arena, static_cast<size_t>(rows_ * T * c.elem_bytes()));
    char* probs = c.dtype == DType::F32 ? scores_.data() : probs_.data();

    // Allowed keys of query i: [lo_[i], hi_[i]].
    lo_.resize(static_cast<size_t>(q));
    hi_.resize(static_cast<size_t>(q));
    for (int64_t i = 0; i < q; ++i) {
      int64_t pos = T - q + i, lo = 0, hi = T - 1;
      if (o_.causal) hi = std::min(hi, pos);
      if (o_.window > 0) {
        lo = std::max(lo, pos / o_.window * o_.window);
        hi = std::min(hi, pos / o_.window * o_.window + o_.window - 1);
      }
      lo_[static_cast<size_t>(i)] = lo;
      hi_[static_cast<size_t>(i)] = hi;
      if (lo > 0 || hi < T - 1) masked_ = true;
    }

    const Slot& sq = p.in[kQ];
    const int64_t ldq = sq.t.cols;
    memory::desc qmd({B, KV, R, q, hd}, dt, memory::dims{q * ldq, R * hd, hd, ldq, 1});
    memory::desc omd({B, KV, R, q, hd}, dt, memory::dims{q * H * hd, R * hd, hd, H * hd, 1});
    struct Source {
      const Slot* k;
      const Slot* v;
      int64_t n, col;
    };
    std::vector<Source> srcs;
    if (kvc > 0) srcs.push_back({&p.in[kCacheK], &p.in[kCacheV], kvc, 0});
    if (L > 0) srcs.push_back({&p.in[kK], &p.in[kV], L, kvc});
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    for (size_t si = 0; si < srcs.size(); ++si) {
      const Source& s = srcs[si];
      const int64_t ldk = s.k->t.cols, ldv = s.v->t.cols;
      memory::desc kmd({B, KV, 1, hd, s.n}, dt, memory::dims{s.n * ldk, hd, hd, 1, ldk});
      memory::desc smd({B, KV, R, q, s.n}, memory::data_type::f32,
                       memory::dims{KV * R * q * T, R * q * T, q * T, T, 1});
      dnnl::primitive_attr a;
      a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      a.set_output_scales(0, {scale});
      matmul::primitive_desc pd(matmul::desc(qmd, kmd, smd), a, c.eng);
      Exec e;
      e.prim = matmul(pd);
      e.scratch_md = pd.scratchpad_desc();
      e.arg(DNNL_ARG_SRC, memory(qmd, c.eng, c.ptr(sq)));
      e.arg(DNNL_ARG_WEIGHTS, memory(kmd, c.eng, c.ptr(*s.k)));
      e.arg(DNNL_ARG_DST, memory(smd, c.eng, scores_.data() + s.col * 4));
      qk_.push_back(std::move(e));

      memory::desc pmd({B, KV, R, q, s.n}, dt, memory::dims{KV * R * q * T, R * q * T, q * T, T, 1});
      memory::desc vmd({B, KV, 1, s.n, hd}, dt, memory::dims{s.n * ldv, hd, hd, ldv, 1});
      dnnl::primitive_attr b;
      b.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (si > 0) {
        dnnl::post_ops po;
        po.append_sum(1.f);
        b.set_post_ops(po);
      }
      matmul::primitive_desc pv(matmul::desc(pmd, vmd, omd), b, c.eng);
      Exec f;
      f.prim = matmul(pv);
      f.scratch_md = pv.scratchpad_desc();
      f.arg(DNNL_ARG_SRC, memory(pmd, c.eng, probs + s.col * c.elem_bytes()));
      f.arg(DNNL_ARG_WEIGHTS, memory(vmd, c.eng, c.ptr(*s.v)));
      f.arg(DNNL_ARG_DST, memory(omd, c.eng, c.ptr(p.out)));
      pv_.push_back(std::move(f));
    }

    memory::desc s2({rows_, T}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc p2({rows_, T}, dt, memory::format_tag::ab);
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::softmax_v2_forward::primitive_desc sd(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::softmax_accurate, s2, p2, 1),
        a, c.eng);
    softmax_.prim = dnnl::softmax_v2_forward(sd);
    softmax_.scratch_md = sd.scratchpad_desc();
    softmax_.arg(DNNL_ARG_SRC, memory(s2, c.eng, scores_.data()));
    softmax_.arg(DNNL_ARG_DST, memory(p2, c.eng, probs));
  }

  void run(const dnnl::stream& s) override {
    for (const Exec& e : qk_) e.run(s);
    if (masked_) mask();
    softmax_.run(s);
    for (const Exec& e : pv_) e.run(s);
  }

  std::vector<Exec*> execs() override {
    std::vector<Exec*> v;
    for (Exec& e : qk_) v.push_back(&e);
    for (Exec& e : pv_) v.push_back(&e);
    v.push_back(&softmax_);
    return v;
  }

 private:
  void mask() {
    float* s = reinterpret_cast<float*>(scores_.data());
    const int64_t q = o_.q_len, T = T_;
    const float ninf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t i = r % q, lo = lo_[static_cast<size_t>(i)], hi = hi_[static_cast<size_t>(i)];
      float* row = s + r * T;
      for (int64_t j = 0; j < lo; ++j) row[j] = ninf;
      for (int64_t j = hi + 1; j < T; ++j) row[j] = ninf;
    }
  }

  Context c_;
  const Op& o_;
  int64_t rows_ = 0, T_ = 0;
  bool masked_ = false;
  std::vector<int64_t> lo_, hi_;
  Buffer scores_, probs_;
  std::vector<Exec> qk_, pv_;
  Exec softmax_;
};

}  // namespace

std::unique_ptr<Kernel> make_attention(const Context& c, const OpPlan& p) {
  return std::make_unique<AttentionKernel>(c, p);
}

}  // namespace vlasim::onednn
