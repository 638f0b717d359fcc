#include "sim/costs/stack_eval.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>

#include "models/builder.h"
#include "sim/costs/shaped_cost_model.h"

namespace vlasim {

namespace fs = std::filesystem;

TraceManifest load_trace_manifest(const std::string& dir, const std::string& cards_dir, const Catalog& cat) {
  TraceManifest m;
  m.dir = dir;
  const std::string file = dir + "/traces.yaml";
  if (!fs::is_regular_file(file))
    throw ConfigError(file, 0, 0, "", "no trace manifest: --traces DIR needs DIR/traces.yaml listing the traces");
  m.cards_dir = fs::is_directory(dir + "/cards") ? dir + "/cards" : cards_dir;
  const ConfigNode root = ConfigNode::load_file(file);
  root.check_keys({"traces", "refused"});
  const ConfigNode list = root.required("traces");
  if (list.items().empty()) list.fail("no trace listed");
  for (const ConfigNode& n : list.items()) {
    n.check_keys({"file", "card", "gpu", "stack", "inference"});
    TraceCase c;
    c.where = n;
    c.file = n.required("file").as_string();
    c.path = dir + "/" + c.file;
    if (!fs::is_regular_file(c.path)) n.required("file").fail("cannot read '" + c.path + "': no such file");
    c.stack = n.get_string("stack", "eager");
    if (!stack_registry().find(c.stack))
      n.required("stack").fail("unknown stack '" + c.stack + "'; valid names are: " + join_names(stack_registry().names()));
    if (n.has("card")) {
      c.card = n.required("card").as_string();
      find_card(m.cards_dir, c.card, n.required("card"));
    } else if (c.stack == "eager") {
      n.fail("an eager trace needs its `card` (only graph and compiled traces are read without one, for their "
             "launch figures)");
    } else if (!n.has("inference")) {
      n.fail("a trace without a card needs `inference`: the range its figures are read in");
    }
    c.gpu = n.required("gpu").as_string();
    const DeviceSpec* d = cat.find(c.gpu);
    if (!d || d->type != DeviceType::Gpu) n.required("gpu").fail("'" + c.gpu + "' is no catalog GPU");
    c.inference = n.get_string("inference", c.inference);
    m.cases.push_back(std::move(c));
  }
  if (std::none_of(m.cases.begin(), m.cases.end(), [](const TraceCase& c) { return !c.card.empty(); }))
    list.fail("no trace with a card: nothing to predict (traces without one only give launch figures)");
  if (root.has("refused"))
    for (const ConfigNode& n : root.required("refused").items()) {
      n.check_keys({"file", "why"});
      m.refused.emplace_back(n.required("file").as_string(), n.required("why").as_string());
    }
  return m;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TraceFitData read_case(const TraceCase& c, const std::string& cards_dir) {
  TraceFitData f;
  f.c = &c;
  const TorchTrace t = read_torch_trace(c.path);
  std::string chosen;
  const std::vector<TraceInference> inf = trace_inferences(t, c.inference, &chosen);
  f.steps = trace_steps(t, inf);
  std::vector<size_t> order(f.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return f.steps[a].wall_s < f.steps[b].wall_s; });
  f.step = f.steps[order[order.size() / 2]];
  if (c.card.empty()) return f;
  const ModelCard card = find_card(cards_dir, c.card, c.where.required("card"));
  RunShape shape = card.defaults;
  if (c.stack == "eager") shape.passes = std::vector<std::string>{};
  f.graph = build_graph(card, shape);
  if (t.shapes) {
    const TraceMatch m = match_trace(t, f.graph, inf);
    for (size_t i = 0; i < f.graph.size(); ++i) {
      const Op& op = f.graph.op(static_cast<int>(i));
      if (op.kind != OpKind::Attention || m.op_occurrences[i] == 0) continue;
      KernelSample s;
      s.op = op;
      s.label = "attention";
      s.seconds = m.op_seconds[i];
      s.source = c.file;
      f.attention.push_back(s);
      f.attention_meas_s += s.seconds;
    }
  }
  return f;
}

double err(double pred, double meas) { return meas > 0 ? pred / meas - 1 : 0; }

}  // namespace

StackParams fit_stack(const std::vector<const TraceFitData*>& fit, const StackParams& prior) {
  StackParams p = prior;
  std::map<std::string, double> owned;
  std::map<std::string, int> ops;
  double all_owned = 0;
  int all_ops = 0;
  std::vector<double> step, launch, gap, compiled, node_launch;
  for (const TraceFitData* f : fit) {
    gap.insert(gap.end(), f->step.node_gap_s.begin(), f->step.node_gap_s.end());
    if (f->c && f->c->stack == "compiled" && f->step.device_events > 0)
      compiled.push_back(f->step.host_span_s / f->step.device_events);
    if (f->step.graph_nodes > 0) node_launch.push_back(f->step.graph_launch_s / f->step.graph_nodes);
    if (f->c && (f->c->card.empty() || f->c->stack != "eager")) continue;
    for (const auto& [c, s] : f->step.class_host_s) owned[c] += s, all_owned += s;
    for (const auto& [c, n] : f->step.class_ops) ops[c] += n, all_ops += n;
    step.push_back(f->step.step_host_s);
    launch.insert(launch.end(), f->step.launch_latency_s.begin(), f->step.launch_latency_s.end());
  }
  if (!compiled.empty()) p.compiled_dispatch_s = median(compiled);
  if (!node_launch.empty()) p.graph_node_launch_s = median(node_launch);
  if (!gap.empty()) p.node_gap_s = median(gap);
  if (all_ops == 0) return p;
  const double mean = all_owned / all_ops;
  for (const char* c : kStackClasses) p.dispatch_s[c] = ops[c] > 0 ? owned[c] / ops[c] : mean;
  p.step_s = median(step);
  if (!launch.empty()) p.launch_s = median(launch);
  return p;
}

std::vector<StackOp> stack_ops(const OpGraph& g, const DeviceSpec& d, const GpuKernelParams& kp, bool eager) {
  const ShapedParams sp;
  auto price = [&](const Op& op, const Op&) {
    const bool half = op.dtype == DType::BF16 || op.dtype == DType::F16;
    if (half && find_fit(kp, op)) return kernel_model_seconds(op, d, kp);
    return std::max(0.0, shaped_gpu_op_cost(op, d, d.sms, true, sp).seconds - d.graph_launch_s);
  };
  std::vector<int> ids;
  for (size_t i = 0; i < g.size(); ++i) ids.push_back(static_cast<int>(i));
  if (eager) return eager_lowering(g, ids, price);
  std::vector<StackOp> out;
  for (int id : ids)
    if (g.op(id).kind != OpKind::Transfer) out.push_back({stack_op_class(g.op(id)), price(g.op(id), g.op(id))});
  return out;
}

StackEvaluation evaluate_stacks(const TraceManifest& m, const std::vector<GpuSamples>& kernel_data, const Catalog& cat,
                                const std::function<void(const std::string&)>& progress) {
  StackEvaluation e;
  e.refused = m.refused;
  std::vector<TraceFitData> data;
  for (const TraceCase& c : m.cases) {
    if (progress) progress("reading " + c.file);
    data.push_back(read_case(c, m.cards_dir));
  }
  const StackParams prior;
  auto fit_where = [&](const std::function<bool(const TraceFitData&)>& keep) {
    std::vector<const TraceFitData*> f;
    for (const TraceFitData& d : data)
      if (keep(d)) f.push_back(&d);
    return fit_stack(f, prior);
  };
  std::vector<const TraceFitData*> everything;
  for (const TraceFitData& d : data) everything.push_back(&d);
  e.all_fit = fit_stack(everything, prior);
  std::map<std::string, GpuKernelParams> kernel_fits;  // by GPU
  // Measured attention kernels by GPU, from the traces.
  std::vector<GpuSamples> trace_attention;
  for (const TraceFitData& d : data) {
    auto g = std::find_if(trace_attention.begin(), trace_attention.end(),
                          [&](const GpuSamples& s) { return s.gpu == d.c->gpu; });
    if (g == trace_attention.end()) g = trace_attention.insert(trace_attention.end(), {d.c->gpu, "trace attention", {}, false});
    g->samples.insert(g->samples.end(), d.attention.begin(), d.attention.end());
  }
  std::vector<double> ew, em, eb, en;
  for (const TraceFitData& d : data) {
    const TraceCase& c = *d.c;
    if (c.card.empty()) {
      e.fit_only.push_back({c.file, c.gpu, c.stack, d.step});
      continue;
    }
    const DeviceSpec& spec = *cat.find(c.gpu);
    StackEvalRow r;
    r.trace = c.file, r.card = c.card, r.gpu = c.gpu, r.stack = c.stack;
    r.steps = int(d.steps.size());
    r.graph_ops = int(d.graph.size());
    for (const auto& [cl, n] : d.step.class_ops) r.launching_ops += n;
    r.meas_wall = d.step.wall_s, r.meas_busy = d.step.gpu_busy_s, r.meas_host_share = d.step.host_bound_share();
    r.meas_waited = d.step.waited_s;
    // The kernel model fitted without this GPU's kernels.
    bool has_own = false;
    for (const GpuSamples& s : kernel_data) has_own = has_own || s.gpu == c.gpu;
    if (!kernel_fits.count(c.gpu)) {
      if (progress) progress("fitting the kernel model without " + c.gpu);
      std::vector<const GpuSamples*> f;
      for (const GpuSamples& s : kernel_data)
        if (s.gpu != c.gpu) f.push_back(&s);
      for (const GpuSamples& s : trace_attention)
        if (s.gpu != c.gpu) f.push_back(&s);
      kernel_fits[c.gpu] = fit_kernel_model(f, cat);
    }
    r.kernel_fit = has_own ? "held out (its kernels left out)" : "every GPU (none of its kernels measured)";
    const std::vector<StackOp> ops = stack_ops(d.graph, spec, kernel_fits[c.gpu], c.stack == "eager");
    r.fold = fit_where([&](const TraceFitData& x) { return x.c->gpu != c.gpu; });
    const StackTiming t = make_stack(c.stack, r.fold)->run(ops);
    // Before the stack model: each graph op alone at max(kernel + the catalog's gap, the eager
    // host floor), as the kernel cost model prices an eager GPU (host_op_us 25).
    for (const StackOp& o : stack_ops(d.graph, spec, kernel_fits[c.gpu], false))
      r.pred_wall_per_op += std::max(o.kernel_s + spec.graph_launch_s, ShapedParams{}.host_op_s);
    r.meas_attention = d.attention_meas_s;
    for (const StackOp& o : ops)
      if (o.cls == "attention") r.pred_attention += o.kernel_s;
    r.pred_wall = t.wall_s, r.pred_busy = t.gpu_busy_s, r.pred_host_share = t.host_bound_share();
    r.pred_wall_model_out =
        make_stack(c.stack, fit_where([&](const TraceFitData& x) { return x.c->card != c.card; }))->run(ops).wall_s;
    r.pred_wall_in = make_stack(c.stack, e.all_fit)->run(ops).wall_s;
    r.device_name = c.gpu;
    ew.push_back(std::fabs(r.err_wall()));
    em.push_back(std::fabs(err(r.pred_wall_model_out, r.meas_wall)));
    eb.push_back(std::fabs(r.err_busy()));
    en.push_back(std::fabs(err(r.pred_wall_per_op, r.meas_wall)));
    e.rows.push_back(std::move(r));
  }
  auto worst = [](const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); };
  e.median_wall = median(ew), e.worst_wall = worst(ew);
  e.median_model_out = median(em), e.worst_model_out = worst(em);
  e.median_busy = median(eb);
  e.median_no_stack = median(en), e.worst_no_stack = worst(en);
  return e;
}

namespace {

std::string pct_signed(double x) {
  std::ostringstream o;
  o << std::showpos << std::fixed << std::setprecision(1) << 100 * x << '%';
  return o.str();
}
std::string fixed(double x, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << x;
  return o.str();
}
std::string params_text(const StackParams& p) {
  std::ostringstream o;
  o << "dispatch us:";
  for (const char* c : kStackClasses) o << ' ' << c << ' ' << fixed(p.dispatch(c) * 1e6, 1);
  o << "; launch " << fixed(p.launch_s * 1e6, 1) << " us; step " << fixed(p.step_s * 1e6, 0) << " us";
  return o.str();
}

}  // namespace

std::string stack_evaluation_markdown(const StackEvaluation& e, const std::string& command) {
  std::ostringstream o;
  o << "# End-to-end GPU latency: the software stack on real traces, leave one GPU out\n\n"
    << "Written by `" << command << "` (sim/costs/stack_eval.h says how each figure is made). Each trace is "
    << "predicted from its card's graph: kernels by the kernel model fitted without the trace's GPU, the stack "
    << "fitted on every other GPU's traces. Errors are predicted / measured - 1. Wall: the step's span less "
    << "synchronise calls waiting for work launched before it. Host-bound share: the part of the wall the GPU "
    << "is idle.\n\n"
    << "| trace | card | GPU | stack | wall meas (ms) | wall pred (ms) | error | GPU busy meas / pred (ms) | busy error "
       "| attention meas / pred (ms) | host-bound meas / pred | model out: error | in sample: error | no stack: error |\n"
    << "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const StackEvalRow& r : e.rows)
    o << "| " << r.trace << " | " << r.card << " | " << r.gpu << " | " << r.stack << " | " << fixed(r.meas_wall * 1e3, 3)
      << " | " << fixed(r.pred_wall * 1e3, 3) << " | " << pct_signed(r.err_wall()) << " | " << fixed(r.meas_busy * 1e3, 3)
      << " / " << fixed(r.pred_busy * 1e3, 3) << " | " << pct_signed(r.err_busy()) << " | "
      << fixed(r.meas_attention * 1e3, 3) << " / " << fixed(r.pred_attention * 1e3, 3) << " | "
      << fixed(100 * r.meas_host_share, 0) << "% / " << fixed(100 * r.pred_host_share, 0) << "% | "
      << pct_signed(r.pred_wall_model_out / r.meas_wall - 1) << " | " << pct_signed(r.pred_wall_in / r.meas_wall - 1)
      << " | " << pct_signed(r.pred_wall_per_op / r.meas_wall - 1) << " |\n";
  o << "\nWall time, held out by GPU: median |error| " << fixed(100 * e.median_wall, 1) << "%, worst "
    << fixed(100 * e.worst_wall, 1) << "% (targets 10% and 20%). Leaving the model out instead: median "
    << fixed(100 * e.median_model_out, 1) << "%, worst " << fixed(100 * e.worst_model_out, 1)
    << "%. GPU busy time (the kernel model alone): median |error| " << fixed(100 * e.median_busy, 1)
    << "%. Without a stack (each op at max(kernel + gap, 25 us), as the kernel cost model prices eager GPUs): "
       "median |error| "
    << fixed(100 * e.median_no_stack, 1) << "%, worst " << fixed(100 * e.worst_no_stack, 1) << "%.\n\n";
  o << "## The stacks that predicted each trace (fitted without its GPU)\n\n| trace | kernel fit | stack |\n|---|---|---|\n";
  for (const StackEvalRow& r : e.rows)
    o << "| " << r.trace << " | " << r.kernel_fit << " | " << params_text(r.fold) << " |\n";
  o << "\nFitted on every trace (shipped as sim/kernel_fit/stack_model.csv): " << params_text(e.all_fit)
    << "; from the traces without a card: compiled_dispatch " << fixed(e.all_fit.compiled_dispatch_s * 1e6, 1)
    << " us, graph_node_launch " << fixed(e.all_fit.graph_node_launch_s * 1e6, 2) << " us, node_gap "
    << fixed(e.all_fit.node_gap_s * 1e6, 2) << " us; not shown by any trace, kept at its prior: graph_launch "
    << fixed(e.all_fit.graph_launch_s * 1e6, 1) << " us.\n";
  if (!e.fit_only.empty()) {
    o << "\n## Traces without a card: launch figures\n\n| trace | GPU | stack | host span (us) | kernels | graph launch "
         "host (us) | graph nodes | node gap median (us) |\n|---|---|---|---:|---:|---:|---:|---:|\n";
    for (const auto& f : e.fit_only) {
      std::vector<double> g = f.step.node_gap_s;
      o << "| " << f.trace << " | " << f.gpu << " | " << f.stack << " | " << fixed(f.step.host_span_s * 1e6, 1) << " | "
        << f.step.device_events << " | " << fixed(f.step.graph_launch_s * 1e6, 1) << " | " << f.step.graph_nodes
        << " | " << (g.empty() ? std::string("-") : fixed(median(g) * 1e6, 2)) << " |\n";
    }
  }
  if (!e.refused.empty()) {
    o << "\n## Traces not evaluated\n\n| trace | why |\n|---|---|\n";
    for (const auto& [f, why] : e.refused) o << "| " << f << " | " << why << " |\n";
  }
  return o.str();
}

std::string stack_evaluation_csv(const StackEvaluation& e) {
  std::ostringstream o;
  o << "trace,card,gpu,stack,steps,graph_ops,launching_ops,meas_wall_ms,pred_wall_ms,err_wall,meas_busy_ms,"
       "pred_busy_ms,err_busy,meas_attention_ms,pred_attention_ms,meas_host_share,pred_host_share,pred_wall_model_out_ms,"
       "pred_wall_in_sample_ms,pred_wall_no_stack_ms\n";
  o << std::setprecision(6);
  for (const StackEvalRow& r : e.rows)
    o << r.trace << ',' << r.card << ',' << r.gpu << ',' << r.stack << ',' << r.steps << ',' << r.graph_ops << ','
      << r.launching_ops << ',' << r.meas_wall * 1e3 << ',' << r.pred_wall * 1e3 << ',' << r.err_wall() << ','
      << r.meas_busy * 1e3 << ',' << r.pred_busy * 1e3 << ',' << r.err_busy() << ',' << r.meas_attention * 1e3 << ','
      << r.pred_attention * 1e3 << ',' << r.meas_host_share << ','
      << r.pred_host_share << ',' << r.pred_wall_model_out * 1e3 << ',' << r.pred_wall_in * 1e3 << ','
      << r.pred_wall_per_op * 1e3 << '\n';
  return o.str();
}

}  // namespace vlasim
