#include "sim/costs/stack_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

#include "scenarios/config/data_dir.h"
#include "sim/costs/cost_model.h"
#include "sim/costs/gpu_kernel_model.h"

namespace vlasim {

std::string stack_op_class(const Op& op) { return kernel_class(op); }

std::vector<StackOp> eager_lowering(const OpGraph& g, const std::vector<int>& ids,
                                    const std::function<double(const Op& op, const Op& source)>& kernel_s) {
  std::vector<StackOp> out;
  for (int id : ids) {
    const Op& op = g.op(id);
    if (op.kind == OpKind::Transfer) continue;
    if (op.kind == OpKind::Elementwise && op.fn == OpFn::Copy) continue;
    if (op.kind == OpKind::Elementwise && op.fn == OpFn::BiasAdd && !out.empty() && out.back().cls == "gemm") {
      out.back().kernel_s += kernel_s(op, op);
      continue;
    }
    if (op.kind == OpKind::Norm && op.fn == OpFn::RMSNorm) {
      // HF transformers' RMSNorm (LlamaRMSNorm, Qwen2RMSNorm, ...): to(fp32), pow, mean, add,
      // rsqrt, mul, to(bf16), mul(weight); six passes over the tensor, two over one value a row.
      Op pass = op;
      pass.id = -1;
      pass.kind = OpKind::Elementwise;
      pass.fn = OpFn::Mul;
      const double full = kernel_s(pass, op);
      Op row = pass;
      row.width = 1;
      row.flops = double(row.rows);
      row.bytes_read = row.bytes_written = row.out_bytes = double(row.rows) * 4;
      const double tiny = kernel_s(row, op);
      struct Kernel {
        const char* cls;
        bool per_row;
      };
      for (Kernel k : {Kernel{"other", false}, {"elementwise", false}, {"other", false}, {"elementwise", true},
                       {"elementwise", true}, {"elementwise", false}, {"other", false}, {"elementwise", false}})
        out.push_back({k.cls, k.per_row ? tiny : full});
      continue;
    }
    if (op.kind == OpKind::Elementwise && op.fn == OpFn::RoPE) {
      // HF transformers' apply_rotary_pos_emb, for q and for k: mul, neg, cat (rotate_half),
      // mul, add; each a pass over half the op's tensors.
      const double half = 0.5 * kernel_s(op, op);
      for (int qk = 0; qk < 2; ++qk)
        for (const char* c : {"elementwise", "elementwise", "other", "elementwise", "elementwise"})
          out.push_back({c, half});
      continue;
    }
    out.push_back({stack_op_class(op), kernel_s(op, op)});
    if (op.kind != OpKind::Gemm || op.epi.act == Activation::None) continue;
    Op act;
    act.id = -1;
    act.kind = OpKind::Elementwise;
    act.fn = op.epi.act == Activation::Silu ? OpFn::Silu : OpFn::Gelu;
    act.stage = op.stage;
    act.dtype = op.dtype;
    const int64_t rows = op.m * std::max<int64_t>(op.batch, 1);
    act.rows = rows;
    act.width = op.epi.gate_up ? op.n / 2 : op.n;
    const double elems = double(act.rows) * double(act.width), bytes = elems * dtype_bytes(op.dtype);
    act.flops = elems;
    act.bytes_read = op.epi.gate_up ? 2 * bytes : bytes;
    act.bytes_written = act.out_bytes = bytes;
    if (op.epi.gate_up) act.bytes_read = bytes;  // act(gate), then the mul below
    out.push_back({"elementwise", kernel_s(act, op)});
    if (op.epi.gate_up) {
      Op mul = act;
      mul.fn = OpFn::Mul;
      mul.bytes_read = 2 * bytes;
      out.push_back({"elementwise", kernel_s(mul, op)});
    }
  }
  return out;
}

double StackParams::dispatch(const std::string& cls) const {
  if (auto it = dispatch_s.find(cls); it != dispatch_s.end()) return it->second;
  if (auto it = dispatch_s.find("other"); it != dispatch_s.end()) return it->second;
  return 20e-6;
}

namespace {

// The launch queue: each kernel queued at the host time its dispatch ends.
StackTiming run_queue(const std::vector<StackOp>& ops, const StackParams& p, bool compiled, bool with_step) {
  StackTiming t;
  double host = with_step ? p.step_s : 0, gpu = 0;
  for (const StackOp& o : ops) {
    host += compiled ? p.compiled_dispatch_s : p.dispatch(o.cls);
    const double start = std::max(gpu, host + p.launch_s);
    gpu = start + o.kernel_s;
    t.gpu_busy_s += o.kernel_s;
  }
  t.host_s = host;
  t.wall_s = std::max(host, gpu);
  t.gpu_idle_s = t.wall_s - t.gpu_busy_s;
  return t;
}

class EagerStack : public StackModel {
 public:
  explicit EagerStack(StackParams p, bool compiled) : p_(std::move(p)), compiled_(compiled) {}
  StackTiming run(const std::vector<StackOp>& ops, bool with_step) const override {
    return run_queue(ops, p_, compiled_, with_step);
  }
  std::string mode() const override { return compiled_ ? "compiled" : "eager"; }
  bool fused() const override { return compiled_; }

 private:
  StackParams p_;
  bool compiled_;
};

class GraphStack : public StackModel {
 public:
  explicit GraphStack(StackParams p) : p_(std::move(p)) {}
  StackTiming run(const std::vector<StackOp>& ops, bool with_step) const override {
    StackTiming t;
    for (const StackOp& o : ops) t.gpu_busy_s += o.kernel_s;
    if (ops.size() > 1) t.gpu_busy_s += p_.node_gap_s * double(ops.size() - 1);
    t.host_s = (with_step ? p_.step_s : 0) + p_.graph_launch_s + p_.graph_node_launch_s * double(ops.size());
    t.wall_s = t.host_s + (ops.empty() ? 0 : p_.launch_s) + t.gpu_busy_s;
    t.gpu_idle_s = t.wall_s - t.gpu_busy_s;
    return t;
  }
  std::string mode() const override { return "graph"; }
  bool fused() const override { return true; }

 private:
  StackParams p_;
};

// Figures of the CSV, in order, with their place in StackParams.
struct Figure {
  std::string name;
  double StackParams::*field;  // null: a dispatch class (name after "dispatch_")
};
std::vector<Figure> figures() {
  std::vector<Figure> f;
  for (const char* c : kStackClasses) f.push_back({std::string("dispatch_") + c, nullptr});
  f.push_back({"launch", &StackParams::launch_s});
  f.push_back({"step", &StackParams::step_s});
  f.push_back({"compiled_dispatch", &StackParams::compiled_dispatch_s});
  f.push_back({"graph_launch", &StackParams::graph_launch_s});
  f.push_back({"graph_node_launch", &StackParams::graph_node_launch_s});
  f.push_back({"node_gap", &StackParams::node_gap_s});
  return f;
}

double& field_of(StackParams& p, const Figure& f) {
  return f.field ? p.*f.field : p.dispatch_s[f.name.substr(std::string("dispatch_").size())];
}

constexpr double kMaxFigureUs = 100000;

StackParams load_fit(const Params& prm) {
  StackParams p;
  read_fit_param(prm, default_stack_fit_path(), "stack fit",
                 [&](const std::string& text, const std::string& file) { p = parse_stack_params(text, file); });
  return p;
}

// The fit with the entry's overrides (<figure>_us keys) applied.
StackParams with_overrides(const Params& prm) {
  StackParams p = load_fit(prm);
  for (const Figure& f : figures()) {
    const std::string key = f.name + "_us";
    if (!prm.node().has(key)) continue;
    const double us = prm.get_double(key, 0);
    if (!(us >= 0 && us <= kMaxFigureUs))
      prm.node().required(key).fail("must be from 0 to " + std::to_string(int(kMaxFigureUs)) + " us");
    field_of(p, f) = us * 1e-6;
  }
  return p;
}

std::vector<ParamSpec> stack_param_specs(const std::vector<std::string>& used) {
  std::vector<ParamSpec> s{{"fit", "stack parameters CSV (vlasim gpu-eval --traces --stack-out); relative: beside the "
                                   "scenario, else here; default: the shipped fit",
                            "sim/kernel_fit/stack_model.csv"}};
  for (const std::string& u : used) s.push_back({u + "_us", "override of the fit's " + u + " figure, us", "the fit's"});
  return s;
}

}  // namespace

std::unique_ptr<StackModel> make_stack(const std::string& mode, const StackParams& p) {
  if (mode == "eager") return std::make_unique<EagerStack>(p, false);
  if (mode == "compiled") return std::make_unique<EagerStack>(p, true);
  if (mode == "graph") return std::make_unique<GraphStack>(p);
  throw std::invalid_argument("unknown stack '" + mode + "'");
}

void register_stacks(StackRegistry& r) {
  std::vector<std::string> eager;
  for (const char* c : kStackClasses) eager.push_back(std::string("dispatch_") + c);
  eager.insert(eager.end(), {"launch", "step"});
  r.add({"eager",
         "eager PyTorch: host dispatch per operator by class, kernels queued as dispatched, the GPU idle while "
         "the host is behind; unfused operators",
         stack_param_specs(eager), [](const Params& prm) { return make_stack("eager", with_overrides(prm)); }});
  r.add({"graph", "a captured CUDA Graph replayed: one launch, a gap per node; fused operators",
         stack_param_specs({"launch", "step", "graph_launch", "graph_node_launch", "node_gap"}),
         [](const Params& prm) { return make_stack("graph", with_overrides(prm)); }});
  r.add({"compiled",
         "torch.compile without CUDA Graphs: the graph passes' fused kernels, each dispatched by the compiler's "
         "launcher, queued as eager",
         stack_param_specs({"launch", "step", "compiled_dispatch"}),
         [](const Params& prm) { return make_stack("compiled", with_overrides(prm)); }});
}

const StackRegistry& stack_registry() {
  static const StackRegistry r = [] {
    StackRegistry reg("stack");
    register_stacks(reg);
    return reg;
  }();
  return r;
}

std::string check_stack_name(const std::string& name, const ConfigNode& where) {
  if (name != "none" && name != "auto" && !stack_registry().find(name))
    where.fail("unknown stack '" + name + "'; valid names are: none, auto, " + join_names(stack_registry().names()));
  return name;
}

std::string stack_params_csv(const StackParams& p, const std::string& note) {
  std::ostringstream o;
  o << "# " << note << "\nfigure,us\n";
  StackParams q = p;
  for (const Figure& f : figures()) {
    const double v = f.field ? q.*f.field : q.dispatch(f.name.substr(std::string("dispatch_").size()));
    o << f.name << ',' << std::setprecision(6) << v * 1e6 << '\n';
  }
  return o.str();
}

StackParams parse_stack_params(const std::string& text, const std::string& where) {
  StackParams p;
  std::set<std::string> seen;
  const std::vector<Figure> all = figures();
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!header) {
      if (line != "figure,us") throw ConfigError(where, n, 1, "header", "expected the header 'figure,us'");
      header = true;
      continue;
    }
    const size_t comma = line.find(',');
    const std::string name = line.substr(0, comma);
    auto f = std::find_if(all.begin(), all.end(), [&](const Figure& x) { return x.name == name; });
    if (f == all.end()) throw ConfigError(where, n, 1, "figure", "unknown figure '" + name + "'");
    if (!seen.insert(name).second) throw ConfigError(where, n, 1, name, "figure '" + name + "' given twice");
    const std::string v = comma == std::string::npos ? "" : line.substr(comma + 1);
    char* end = nullptr;
    const double us = v.empty() ? NAN : std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(us >= 0 && us <= kMaxFigureUs))
      throw ConfigError(where, n, int(comma + 2), name,
                        "'" + v + "' is no number from 0 to " + std::to_string(int(kMaxFigureUs)) + " us");
    field_of(p, *f) = us * 1e-6;
  }
  if (!header) throw ConfigError(where, n, 1, "header", "no 'figure,us' header: an empty or truncated file");
  for (const Figure& f : all)
    if (!seen.count(f.name)) throw ConfigError(where, n, 1, f.name, "figure '" + f.name + "' missing");
  return p;
}

std::string default_stack_fit_path() {
  return find_data_dir("VLASIM_KERNEL_FIT", "kernel_fit", VLASIM_KERNEL_FIT_DIR) + "/stack_model.csv";
}

}  // namespace vlasim
