// Matching a read PyTorch profiler trace to a graph: the keys that pair trace ops with graph ops,
// the trace's inferences, the match itself and the warnings about it. Reading the trace is in
// torch_trace.cc.
#include "sim/measured/torch_trace.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scenarios/config/config.h"

namespace vlasim {

namespace {

// Product of d[from, to), or -1 when an entry is negative or the product overflows.
int64_t prod(const std::vector<int64_t>& d, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, d.size()); ++i) {
    if (d[i] < 0 || (d[i] > 0 && p > INT64_MAX / d[i])) return -1;
    p *= d[i];
  }
  return p;
}
int64_t mul(int64_t a, int64_t b) { return prod({a, b}); }

std::string gemm_key(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return "";
  return "gemm m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

std::string elems_key(const std::string& what, int64_t e) {
  return e > 0 ? what + " " + std::to_string(e) : "";
}

// The name without its namespace and in-place / out suffixes: "aten::add_" -> "add".
std::string base_name(const std::string& n) {
  const size_t c = n.rfind("::");
  std::string b = c == std::string::npos ? n : n.substr(c + 2);
  while (!b.empty() && b.back() == '_') b.pop_back();
  while (!b.empty() && b.front() == '_') b.erase(b.begin());
  return b;
}

}  // namespace

std::string trace_op_key(const TraceOp& op) {
  const std::vector<std::vector<int64_t>>& d = op.dims;
  const std::string b = base_name(op.name);
  auto at = [&](size_t i) -> const std::vector<int64_t>& {
    static const std::vector<int64_t> none;
    return i < d.size() ? d[i] : none;
  };
  if (b == "linear" && at(0).size() >= 1 && at(1).size() == 2 && at(0).back() == at(1)[1])
    return gemm_key(prod(at(0), 0, at(0).size() - 1), at(1)[0], at(1)[1]);
  if (b == "addmm" && at(1).size() == 2 && at(2).size() == 2 && at(1)[1] == at(2)[0])
    return gemm_key(at(1)[0], at(2)[1], at(1)[1]);
  if ((b == "mm" || b == "matmul") && at(0).size() >= 2 && at(1).size() == 2 && at(0).back() == at(1)[0])
    return gemm_key(prod(at(0), 0, at(0).size() - 1), at(1)[1], at(1)[0]);
  if ((b == "conv2d" || b == "convolution") && at(0).size() == 4 && at(1).size() == 4) {
    const std::vector<int64_t>&x = at(0), &w = at(1);
    if (prod(x) < 0 || prod(w) <= 0 || x[2] % w[2] || x[3] % w[3]) return "";  // patch convs only (stride = kernel)
    return gemm_key(prod({x[0], x[2] / w[2], x[3] / w[3]}), w[0], prod(w, 1));
  }
  if (b == "scaled_dot_product_attention" && at(0).size() == 4 && at(1).size() == 4) {
    const int64_t bh = mul(at(0)[0], at(0)[1]);
    if (bh <= 0 || prod(at(0)) <= 0 || prod(at(1)) <= 0) return "";
    return "attention bh=" + std::to_string(bh) + " q=" + std::to_string(at(0)[2]) +
           " kv=" + std::to_string(at(1)[2]) + " d=" + std::to_string(at(0)[3]);
  }
  if (d.empty() || at(0).empty()) return "";
  if (b == "layer_norm") return elems_key("norm layernorm", prod(at(0)));
  if (b == "rms_norm") return elems_key("norm rmsnorm", prod(at(0)));
  if (b == "group_norm") return elems_key("norm groupnorm", prod(at(0)));
  int64_t out = 0;  // elements of a broadcast result
  for (const std::vector<int64_t>& x : d)
    if (!x.empty()) out = std::max(out, prod(x));
  if (b == "gelu") return elems_key("eltwise gelu", out);
  if (b == "silu") return elems_key("eltwise silu", out);
  if (b == "add") return elems_key("eltwise add", out);
  if (b == "mul") return elems_key("eltwise mul", out);
  if (b == "sub") return elems_key("eltwise sub", out);
  if (b == "softmax") return elems_key("eltwise softmax", out);
  if (b == "embedding" && at(0).size() == 2 && d.size() >= 2)
    return elems_key("embedding", prod(at(1)) < 0 ? -1 : mul(prod(at(1)), at(0)[1]));
  return "";
}

std::string graph_op_key(const Op& o) {
  switch (o.kind) {
    case OpKind::Gemm:
      return gemm_key(o.m * std::max<int64_t>(o.batch, 1), o.n, o.k);
    case OpKind::Attention:
      return "attention bh=" + std::to_string(o.batch * o.heads) + " q=" + std::to_string(o.q_len) +
             " kv=" + std::to_string(o.kv_len) + " d=" + std::to_string(o.head_dim);
    case OpKind::Norm:
      return elems_key(std::string("norm ") + to_string(o.fn), o.rows * o.width);
    case OpKind::Elementwise:
      switch (o.fn) {
        case OpFn::Gelu: return elems_key("eltwise gelu", o.rows * o.width);
        case OpFn::Silu: return elems_key("eltwise silu", o.rows * o.width);
        case OpFn::Add:
        case OpFn::BiasAdd: return elems_key("eltwise add", o.rows * o.width);
        case OpFn::Mul: return elems_key("eltwise mul", o.rows * o.width);
        case OpFn::Sub: return elems_key("eltwise sub", o.rows * o.width);
        case OpFn::Softmax: return elems_key("eltwise softmax", o.rows * o.width);
        default: return "";
      }
    case OpKind::Embedding:
      return elems_key("embedding", o.rows * o.width);
    default:
      return "";
  }
}

namespace {
// A range's name as inferences are counted: torch.profiler's schedule numbers its steps
// ("ProfilerStep#12"), which count as one name, "ProfilerStep#*".
std::string range_kind(const std::string& n) {
  return n.rfind("ProfilerStep#", 0) == 0 ? std::string("ProfilerStep#*") : n;
}
}  // namespace

std::vector<TraceInference> trace_inferences(const TorchTrace& t, const std::string& name, std::string* chosen) {
  // One sweep over the ranges (sorted by thread, then start, longer first): the stack holds
  // the ranges open at each start. A stage range marks the ranges around it as holding a
  // stage (each range once: a marked range's enclosing ones are marked already), and is
  // given to the innermost open range named `pick`.
  const size_t n = t.ranges.size();
  std::vector<int> stage_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    Stage s;
    if (parse_stage(t.ranges[i].name, &s)) stage_of[i] = int(s);
  }
  struct Open {
    size_t range;
    int inference;  // innermost open range named pick at or below this one, -1 when none
  };
  auto sweep = [&](const std::string& pick, std::vector<char>* holds, std::vector<TraceInference>* out) {
    std::vector<Open> stack;
    for (size_t i = 0; i < n; ++i) {
      const TraceRange& x = t.ranges[i];
      while (!stack.empty()) {
        const TraceRange& top = t.ranges[stack.back().range];
        if (top.thread != x.thread || x.ts_us >= top.ts_us + top.dur_us) stack.pop_back();
        else break;
      }
      int inference = stack.empty() ? -1 : stack.back().inference;
      if (stage_of[i] >= 0) {
        if (holds)
          for (size_t k = stack.size(); k-- > 0 && !(*holds)[stack[k].range];) (*holds)[stack[k].range] = 1;
        if (out && inference >= 0) {
          TraceInference& in = (*out)[size_t(inference)];
          const int k = stage_of[i];
          const double end = std::max(x.ts_us + x.dur_us, x.device_end_us);
          if (in.stage_start_us[k] < 0 || x.ts_us < in.stage_start_us[k]) in.stage_start_us[k] = x.ts_us;
          in.stage_end_us[k] = std::max(in.stage_end_us[k], end);
        }
      } else if (out && range_kind(x.name) == pick) {
        TraceInference in;
        in.start_us = x.ts_us;
        in.end_us = std::max(x.ts_us + x.dur_us, x.device_end_us);
        in.host_end_us = x.ts_us + x.dur_us;
        out->push_back(in);
        inference = int(out->size()) - 1;
      }
      stack.push_back({i, inference});
    }
  };
  std::string pick = name;
  if (pick.empty()) {
    std::vector<char> holds(n, 0);
    sweep("", &holds, nullptr);
    std::map<std::string, size_t> count;
    for (size_t i = 0; i < n; ++i)
      if (stage_of[i] < 0) ++count[range_kind(t.ranges[i].name)];
    size_t best = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string k = range_kind(t.ranges[i].name);
      if (holds[i] && count[k] > best) best = count[k], pick = k;
    }
    if (pick.empty()) {
      std::set<std::string> names;
      for (const TraceRange& r : t.ranges)
        if (names.size() < 12) names.insert(r.name);
      throw ConfigError(t.path, 0, 0, "user_annotation",
                        "no record_function range holds a range named after a stage (vision, prefix, action, "
                        "decode, head), so the trace has no inferences to compare; its ranges are: " +
                            (names.empty() ? std::string("none") : join_names({names.begin(), names.end()})));
    }
  }
  std::vector<TraceInference> out;
  sweep(pick, nullptr, &out);
  if (out.empty())
    throw ConfigError(t.path, 0, 0, "user_annotation", "no record_function range named '" + pick + "'");
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceInference& a, const TraceInference& b) { return a.start_us < b.start_us; });
  if (chosen) *chosen = pick;
  return out;
}

namespace {
// The activation a trace op computes, as folded into a GEMM: "gelu", "silu", "relu"; "" else.
std::string trace_act(const TraceOp& o) {
  const std::string b = base_name(o.name);
  return b == "gelu" || b == "silu" || b == "relu" ? b : "";
}
// The activation fused into a graph GEMM's output, named as trace_act; "" when none (or when
// it applies to the gate half of a gate_up GEMM, whose output is not what it reads).
std::string graph_act(const Op& o) {
  if (o.kind != OpKind::Gemm || o.epi.gate_up) return "";
  switch (o.epi.act) {
    case Activation::GeluTanh:
    case Activation::GeluErf: return "gelu";
    case Activation::Silu: return "silu";
    case Activation::Relu: return "relu";
    default: return "";
  }
}
// The activation `a` reads the output of a GEMM of key `gemm`: its first input has m x n
// elements and last size n.
bool reads_gemm_output(const TraceOp& a, const std::string& gemm) {
  long long m = 0, n = 0, k = 0;
  if (std::sscanf(gemm.c_str(), "gemm m=%lld n=%lld k=%lld", &m, &n, &k) != 3) return false;
  if (a.dims.empty() || a.dims[0].empty() || a.dims[0].back() != n) return false;
  const int64_t e = prod(a.dims[0]);
  return e > 0 && e == mul(m, n);
}
}  // namespace

TraceMatch match_trace(const TorchTrace& t, const OpGraph& g, const std::vector<TraceInference>& inferences) {
  TraceMatch m;
  m.device = t.kernels + t.copies + t.sets > 0;
  std::map<std::string, std::vector<int>> graph_keys;
  std::map<std::string, std::set<std::string>> fused_acts;  // GEMM key -> activations fused in some op of it
  m.graph_ops = g.size();
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string k = graph_op_key(g.op(int(i)));
    if (k.empty()) continue;
    graph_keys[k].push_back(int(i));
    const std::string act = graph_act(g.op(int(i)));
    if (!act.empty()) fused_acts[k].insert(act);
  }
  // the inferences' union as sorted disjoint intervals, searched per op
  std::vector<std::pair<double, double>> spans;
  for (const TraceInference& in : inferences) spans.push_back({in.start_us, in.end_us});
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& sp : spans)
    if (!merged.empty() && sp.first <= merged.back().second) merged.back().second = std::max(merged.back().second, sp.second);
    else merged.push_back(sp);
  auto in_inference = [&](const TraceOp& o) {
    if (inferences.empty()) return true;
    auto it = std::upper_bound(merged.begin(), merged.end(), std::make_pair(o.ts_us, 1e308));
    return it != merged.begin() && o.ts_us <= std::prev(it)->second;
  };
  // top-level ops, by thread then start (as t.ops)
  std::vector<size_t> top;
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (t.ops[i].parent < 0) top.push_back(i);
  auto seconds = [&](const TraceOp& o) { return (m.device ? o.device_us : o.dur_us) * 1e-6; };
  // samples by key; a GEMM's with an activation folded in under "KEY +ACT"
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, size_t> type_mismatch;
  std::vector<char> folded(top.size(), 0);
  for (size_t j = 0; j < top.size(); ++j) {
    const TraceOp& o = t.ops[top[j]];
    if (!in_inference(o)) continue;
    double s = seconds(o);
    m.total_s += s;
    if (folded[j]) continue;  // matched with the GEMM before it
    const std::string k = trace_op_key(o);
    if (!k.empty() && graph_keys.count(k)) {
      std::string sample = k;
      auto fa = fused_acts.find(k);
      if (fa != fused_acts.end() && j + 1 < top.size()) {
        const TraceOp& a = t.ops[top[j + 1]];
        const std::string act = trace_act(a);
        if (a.thread == o.thread && !act.empty() && fa->second.count(act) && in_inference(a) &&
            reads_gemm_output(a, k)) {
          folded[j + 1] = 1;
          const double as = seconds(a);
          const std::string ak = trace_op_key(a);
          TraceMatch::Unmatched& f = m.folded[(ak.empty() ? a.name : ak) + " into " + k];
          ++f.count;
          f.seconds += as;
          s += as;
          sample = k + " +" + act;
        }
      }
      times[sample].push_back(s);
      m.matched_s += s;
      for (const std::string& ty : o.types) {
        const bool f32 = ty == "float", bf16 = ty == "c10::BFloat16", f16 = ty == "c10::Half";
        if (!(f32 || bf16 || f16)) continue;
        const DType dt = f32 ? DType::F32 : bf16 ? DType::BF16 : DType::F16;
        if (dt != g.op(graph_keys[k].front()).dtype) ++type_mismatch[ty];
        break;
      }
    } else if (s > 0 || !k.empty()) {
      TraceMatch::Unmatched& u = m.unmatched[k.empty() ? o.name : k];
      ++u.count;
      u.seconds += s;
    }
  }
  // device time no op launched counts against coverage (wherever it ran)
  if (m.device) m.total_s += std::max(0.0, t.device_us() - t.launched_us) * 1e-6;
  m.op_seconds.assign(g.size(), 0);
  m.op_occurrences.assign(g.size(), 0);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  for (auto& [k, ids] : graph_keys) {
    // the key's samples: plain ones first, then those with each activation folded in
    std::vector<const std::vector<double>*> all;
    for (auto it = times.lower_bound(k); it != times.end() && it->first.compare(0, k.size(), k) == 0; ++it)
      if (it->first.size() == k.size() || it->first.compare(k.size(), 2, " +") == 0) all.push_back(&it->second);
    if (all.empty()) {
      m.unseen[k] += int(ids.size());
      continue;
    }
    for (int id : ids) {
      const std::string act = graph_act(g.op(id));
      auto own = times.find(act.empty() ? k : k + " +" + act);
      const std::vector<double>& v = own != times.end() ? own->second : *all.front();
      m.op_seconds[size_t(id)] = median(v);
      m.op_occurrences[size_t(id)] = int(v.size());
      ++m.graph_ops_matched;
    }
  }
  for (const auto& [ty, n] : type_mismatch)
    m.notes.push_back(std::to_string(n) + " matched trace ops read " + ty + " inputs, not the graph's " +
                      to_string(g.op(0).dtype));
  return m;
}

namespace {
// Words of a name: runs of letters and digits, upper-cased.
std::vector<std::string> upper_words(const std::string& s) {
  std::vector<std::string> w(1);
  for (char ch : s) {
    if (std::isalnum(static_cast<unsigned char>(ch))) w.back() += char(std::toupper(static_cast<unsigned char>(ch)));
    else if (!w.back().empty()) w.emplace_back();
  }
  if (w.back().empty()) w.pop_back();
  return w;
}
}  // namespace

std::string trace_device_mismatch(const TorchTrace& t, const std::string& key, const std::string& description) {
  if (t.device_name.empty()) return "";
  std::string model;
  for (const std::string& w : upper_words(description)) {
    const bool digit = std::any_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    const bool size = w.size() > 2 && w.compare(w.size() - 2, 2, "GB") == 0 &&
                      std::all_of(w.begin(), w.end() - 2, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digit && !size) {
      model = w;
      break;
    }
  }
  if (model.empty()) return "";
  for (const std::string& w : upper_words(t.device_name))
    if (w == model) return "";
  return "the trace ran on '" + t.device_name + "', not on the catalog's " + key + " (" + description +
         "): its times are that GPU's";
}

std::string trace_match_warning(const TorchTrace& t, const TraceMatch& m, const std::string& model) {
  if (m.total_s <= 0 || m.matched_s >= 0.5 * m.total_s) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "only %.1f%% of the trace's %s time (%zu of %zu graph ops) matches the ops of ",
                100 * m.matched_s / m.total_s, m.device ? "device" : "op", m.graph_ops_matched, m.graph_ops);
  std::string w = std::string(buf) + model + ": a trace of another model, a model fused differently (--passes), or " +
                  "kernels launched outside the ops vlasim keys";
  std::vector<std::string> why;
  if (m.device && t.graph_us > 0) {
    std::snprintf(buf, sizeof buf, "%.1f%% of the device time is CUDA/HIP graph replays (cudaGraphLaunch)",
                  t.device_us() > 0 ? 100 * t.graph_us / t.device_us() : 0.0);
    why.push_back(buf);
  }
  double compiled = 0;
  for (const auto& [k, u] : m.unmatched)
    if (k.find("Compiled") != std::string::npos) compiled += u.seconds;
  if (compiled > 0) {
    std::snprintf(buf, sizeof buf, "%.1f%% of it is inside torch.compile regions (ops named *Compiled*)",
                  100 * compiled / m.total_s);
    why.push_back(buf);
  }
  if (!why.empty()) {
    w += "; here ";
    for (size_t i = 0; i < why.size(); ++i) w += (i ? " and " : "") + why[i];
  }
  return w;
}

}  // namespace vlasim
