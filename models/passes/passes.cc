#include "models/passes/passes.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace vlasim {

namespace {

// A GEMM that only multiplies: no activation, fused gate/up, residual, gate or rope epilogue,
// and parameters of its own.
bool plain_linear(const Op& o) {
  return o.kind == OpKind::Gemm && o.fn == OpFn::Linear && o.epi.act == Activation::None &&
         !o.epi.gate_up && !o.epi.residual && !o.epi.gate && !o.epi.rope() && o.param.fold_input.empty();
}

}  // namespace

const std::vector<GraphPass>& graph_passes() {
  static const std::vector<GraphPass> passes = {
      {"qkv_fuse", "Q, K and V projections as one GEMM writing Q|K|V (else three GEMMs and a gather)",
       true, nullptr, "it has no attention with its own K/V projections"},
      {"gateup_fuse", "gated FFN's gate and up projections as one GEMM writing act(gate)*up (else two GEMMs and a multiply)",
       true, nullptr, "it has no gated feed-forward block"},
      {"epilogue_fuse",
       "bias, activation (gelu_tanh, silu) and residual add in the GEMM's epilogue (else an op each after it)",
       true, nullptr, "no Linear GEMM has a bias, activation or residual to fuse"},
      {"last_layer_skip", "the last prefix layer read only for its K/V computes only its K/V (no Q, attention or FFN)",
       true, nullptr, "no flow-matching expert reads a decoder's K/V cache"},
      {"rmsnorm_fold", "RMSNorm scale folded into the weight rows of the GEMMs it feeds", false, fold_rmsnorm,
       "no RMSNorm with a scale feeds only GEMMs"},
      {"rope_fold", "RoPE applied in the epilogue of the Q|K|V (or K|V) GEMM instead of as its own op", false,
       fold_rope, "no RoPE op reads a plain GEMM (it needs qkv_fuse: separate projections are gathered first)"},
      {"time_bias_fold",
       "action-time embedding folded into per-step biases of the time MLP (one table, precomputed): its "
       "input GEMM reads only the action embedding",
       false, fold_time_bias, "no GEMM with a bias (epilogue_fuse) reads an activation concatenated with a per-step time embedding"},
  };
  return passes;
}

const GraphPass* find_pass(const std::string& name) {
  for (const GraphPass& p : graph_passes())
    if (name == p.name) return &p;
  return nullptr;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> out;
  for (const GraphPass& p : graph_passes()) out.push_back(p.name);
  return out;
}

std::vector<std::string> ordered_passes(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const GraphPass& p : graph_passes())
    if (std::find(names.begin(), names.end(), p.name) != names.end()) out.push_back(p.name);
  return out;
}

OpGraph rebuild_graph(const OpGraph& g, const std::vector<int>& redirect) {
  const int n = static_cast<int>(g.size());
  if (static_cast<int>(redirect.size()) != n) throw std::logic_error("rebuild_graph: redirect size");
  // Where an edge out of op `id` leaves from after the rewrite (-1: nowhere).
  auto source = [&](int id) {
    for (int hops = 0; id >= 0 && redirect[static_cast<size_t>(id)] != id; ++hops) {
      if (hops > n) throw std::logic_error("rebuild_graph: redirect cycle");
      id = redirect[static_cast<size_t>(id)];
    }
    return id;
  };
  std::vector<int> new_id(static_cast<size_t>(n), -1);
  OpGraph out;
  for (int id = 0; id < n; ++id) {
    if (redirect[static_cast<size_t>(id)] != id) continue;
    Op o = g.op(id);
    new_id[static_cast<size_t>(id)] = out.add(o);
  }
  for (int id = 0; id < n; ++id) {
    const int to = new_id[static_cast<size_t>(id)];
    if (to < 0) continue;
    Op& o = out.op(to);
    if (o.kv_source >= 0) {
      const int s = source(o.kv_source);
      if (s < 0) throw std::logic_error("rebuild_graph: " + o.name + " reads a K/V cache that was dropped");
      o.kv_source = new_id[static_cast<size_t>(s)];
    }
    std::map<int, std::pair<double, bool>> in;  // new source -> bytes, redirected
    const GraphImpl& gi = g.impl();
    for (auto [it, end] = boost::in_edges(static_cast<size_t>(id), gi); it != end; ++it) {  // parallel edges each
      const int p = static_cast<int>(boost::source(*it, gi));
      const int s = source(p);
      if (s < 0 || s == id) continue;
      auto& e = in[new_id[static_cast<size_t>(s)]];
      e.first += gi[*it].bytes;
      e.second = e.second || s != p;
    }
    for (const auto& [from, e] : in) {
      if (from < 0 || from >= to) throw std::logic_error("rebuild_graph: edge does not go forward");
      const double cap = out.op(from).out_bytes;
      out.depend(from, to, e.second ? std::min(e.first, cap) : e.first);
    }
  }
  out.model = g.model;
  out.views = g.views;
  out.prompt = g.prompt;
  out.chunk = g.chunk;
  out.steps = g.steps;
  out.batch = g.batch;
  out.prefix_tokens = g.prefix_tokens;
  out.suffix_tokens = g.suffix_tokens;
  return out;
}

int fold_rmsnorm(OpGraph& g) {
  int sites = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    Op& nrm = g.op(static_cast<int>(i));
    if (nrm.kind != OpKind::Norm || nrm.fn != OpFn::RMSNorm || nrm.weight_id.empty() || nrm.scale_folded)
      continue;
    if (g.preds(nrm.id).size() != 1) continue;  // an adaptive norm also reads its modulation
    const std::vector<int> readers = g.succs(nrm.id);
    if (readers.empty()) continue;
    bool ok = true;
    for (int r : readers) {
      const Op& o = g.op(r);
      // Scaling X's columns is scaling W's rows, whatever the epilogue does after the product.
      ok = ok && o.kind == OpKind::Gemm && o.fn == OpFn::Linear && o.k == nrm.width && o.param.row_scale.empty() &&
           o.param.fold_input.empty() && g.preds(r).size() == 1;
    }
    if (!ok) continue;
    for (int r : readers) g.op(r).param.row_scale = nrm.weight_id;
    nrm.scale_folded = true;
    nrm.bytes_read -= nrm.weight_bytes;
    nrm.weight_bytes = 0;
    nrm.flops = 4.0 * double(nrm.rows) * double(nrm.width);  // no multiply by the scale
    ++sites;
  }
  return sites;
}

int fold_rope(OpGraph& g) {
  const int n = static_cast<int>(g.size());
  std::vector<int> redirect(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) redirect[static_cast<size_t>(i)] = i;
  int sites = 0;
  for (int i = 0; i < n; ++i) {
    const Op& r = g.op(i);
    if (r.kind != OpKind::Elementwise || r.fn != OpFn::RoPE) continue;
    std::vector<int> preds = g.preds(i);
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());  // K|V passes V on as a second edge
    if (preds.size() != 1) continue;
    Op& p = g.op(preds[0]);
    if (!plain_linear(p) || p.m * p.batch != r.rows || r.width > p.n) continue;
    const int64_t hd = r.head_dim > 0 ? r.head_dim : r.width;
    p.epi.rope_head_dim = hd;
    p.epi.rope_cols = r.heads > 0 ? (r.heads + r.kv_heads) * hd : r.width;
    p.epi.rope_batch = r.batch;
    p.flops += r.flops;
    p.kv_bytes = std::max(p.kv_bytes, r.kv_bytes);
    p.kv_cache = p.kv_cache || r.kv_cache;
    redirect[static_cast<size_t>(i)] = p.id;
    ++sites;
  }
  if (sites > 0) g = rebuild_graph(g, redirect);
  return sites;
}

int fold_time_bias(OpGraph& g) {
  const int n = static_cast<int>(g.size());
  std::vector<int> redirect(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) redirect[static_cast<size_t>(i)] = i;
  int sites = 0;
  for (int i = 0; i < n; ++i) {
    Op& m = g.op(i);
    if (m.kind != OpKind::Gemm || m.fn != OpFn::Linear || !m.epi.bias || m.epi.gate_up || m.epi.residual ||
        m.epi.gate || m.epi.rope() || !m.param.empty())
      continue;
    const std::vector<int> mp = g.preds(i);
    if (mp.size() != 1) continue;
    const Op& cat = g.op(mp[0]);
    if (cat.kind != OpKind::Elementwise || cat.fn != OpFn::Copy || cat.width != m.k || cat.rows != m.m * m.batch ||
        g.succs(cat.id).size() != 1)
      continue;
    const std::vector<int> parts = g.preds(cat.id);
    if (parts.size() != 2) continue;
    int act = -1, tim = -1;
    for (int p : parts) {
      const Op& o = g.op(p);
      if (o.kind == OpKind::Elementwise && o.fn == OpFn::Copy && o.const_rows && g.preds(p).empty() &&
          g.succs(p).size() == 1)
        tim = p;
      else
        act = p;
    }
    if (act < 0 || tim < 0) continue;
    const Op& a = g.op(act);
    const Op& t = g.op(tim);
    const int64_t a_cols = a.kind == OpKind::Gemm ? (a.epi.gate_up ? a.n / 2 : a.n) : a.width;
    const int64_t a_rows = a.kind == OpKind::Gemm ? a.m * a.batch : a.rows;
    if (a_rows != cat.rows || t.rows != cat.rows || a_cols + t.width != cat.width) continue;
    // Columns of the concatenation follow its parts in id order.
    const bool act_first = act < tim;
    const double eb = dtype_bytes(m.dtype);
    m.param.weight_id = m.weight_id;
    m.param.src_k = m.k;
    m.param.src_n = m.n;
    m.param.row0 = act_first ? 0 : t.width;
    m.param.fold_input = t.name;
    m.param.fold_row0 = act_first ? a_cols : 0;
    m.param.fold_cols = t.width;
    m.k = a_cols;
    m.flops = 2.0 * double(m.m) * double(m.n) * double(m.k) * double(m.batch);
    m.weight_bytes = double(m.k * m.n + m.n) * eb;
    m.bytes_read = double(m.m * m.batch * m.k) * eb + m.weight_bytes;
    redirect[static_cast<size_t>(tim)] = -1;
    redirect[static_cast<size_t>(cat.id)] = act;
    ++sites;
  }
  if (sites > 0) g = rebuild_graph(g, redirect);
  return sites;
}

}  // namespace vlasim
