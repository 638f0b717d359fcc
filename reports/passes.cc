#include "reports/passes.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "models/passes/passes.h"
#include "reports/plot.h"
#include "sim/engine/plan.h"
#include "scenarios/config/csv.h"
#include "sim/engine/planner.h"

namespace vlasim {

namespace {

// `v` joined by `sep` (join_names joins by ", ").
std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

}  // namespace

PassTable make_pass_table(const Scenario& s, int m, const PassTableOptions& o,
                          const std::function<void(double)>& progress) {
  const ModelInstance& mi = s.models.at(static_cast<size_t>(m));
  PassTable t;
  t.scenario = s.name;
  t.model = mi.name;
  t.card = mi.card.name;
  t.shape = mi.shape;
  t.executor = o.prepare ? o.executor : "";
  t.reps = o.prepare ? o.reps : 0;
  bool gpu = false;
  std::vector<std::string> devices;
  for (const DeviceInstance& d : s.devices) {
    devices.push_back(d.name + " (" + d.spec.name + ")");
    gpu = gpu || d.spec.type == DeviceType::Gpu;
  }
  t.devices = join_names(devices);
  for (const std::string& p : o.passes)
    if (!find_pass(p))
      throw ConfigError("<command line>", 0, 0, "--passes",
                        "unknown pass '" + p + "'; valid are: " + join_names(pass_names()));
  std::vector<PassRow> rows;
  rows.push_back({.step = "naive", .passes = {}});
  if (gpu) rows.push_back({.step = "graph capture", .passes = {}, .graph_capture = true});
  std::vector<std::string> on;
  for (const std::string& p : pass_names()) {
    if (o.none) break;
    if (!o.passes.empty() && std::find(o.passes.begin(), o.passes.end(), p) == o.passes.end()) continue;
    std::vector<std::string> next = on;
    next.push_back(p);
    if (const PassesProblem e = passes_problem(mi.card, next, mi.shape); e.index >= 0) {
      t.skipped.push_back(p + ": " + e.why);
      continue;
    }
    on = next;
    rows.push_back({.step = "+" + p, .passes = on, .graph_capture = gpu});
  }
  std::vector<OpGraph> graphs;  // each row's, to run
  for (size_t i = 0; i < rows.size(); ++i) {
    PassRow& r = rows[i];
    Scenario v = s;
    v.models[static_cast<size_t>(m)].shape.passes = r.passes;
    for (DeviceInstance& d : v.devices)
      if (d.spec.type == DeviceType::Gpu) d.graph_capture = r.graph_capture;
    const Plan p = plan_scenario(v);
    const ModelPlan& mp = p.models.at(static_cast<size_t>(m));
    r.predicted_s = mp.alone_seconds;
    const OpGraph& g = mp.graph;
    for (size_t k = 0; k < g.size(); ++k) {
      const Op& op = g.op(static_cast<int>(k));
      if (op.kind == OpKind::Transfer) continue;
      ++r.ops;
      r.gemm_ops += op.kind == OpKind::Gemm || op.kind == OpKind::Attention;
      r.flops += op.flops;
      r.bytes += op.bytes_read + op.bytes_written;
    }
    r.params = g.param_bytes() / dtype_bytes(v.models[static_cast<size_t>(m)].shape.dtype);
    graphs.push_back(g);  // what was planned is what runs
    if (progress) progress(double(i + 1) / double(rows.size()) * (o.prepare ? 0.2 : 1.0));
  }
  if (o.prepare) {
    std::vector<std::function<double()>> runs;
    for (const OpGraph& g : graphs) runs.push_back(o.prepare(g));
    std::vector<std::vector<double>> times(rows.size());
    for (int round = 0; round <= o.reps; ++round) {
      for (size_t i = 0; i < rows.size(); ++i) {
        const double sec = runs[i]();
        if (round > 0) times[i].push_back(sec);  // round 0 warms up
      }
      if (progress) progress(0.2 + 0.8 * double(round + 1) / double(o.reps + 1));
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<double>& x = times[i];
      std::sort(x.begin(), x.end());
      rows[i].measured_s = x[x.size() / 2];
      rows[i].measured_iqr_s = x[(3 * x.size()) / 4] - x[x.size() / 4];
    }
  }
  t.rows = std::move(rows);
  return t;
}

std::string pass_table_markdown(const PassTable& t) {
  std::ostringstream os;
  const RunShape& sh = t.shape;
  os << "# Graph passes: " << t.model << " (card " << t.card << ") of scenario " << t.scenario << "\n\n"
     << "Devices: " << t.devices << ". Shape: " << sh.views << " views, prompt " << sh.prompt << ", chunk "
     << sh.chunk << ", " << sh.steps << " steps, batch " << sh.batch << ", " << to_string(sh.dtype) << ".\n"
     << "Each row adds its step to the one above; predicted = the model alone as planned.\n";
  if (!t.executor.empty())
    os << "Measured: " << t.executor << ", median of " << t.reps << " timed runs per step (steps in turn, after a "
       << "warm-up round); +- is the interquartile range.\n";
  const bool measured = !t.executor.empty();
  os << "\n| step | kernels | GEMM-like | GFLOP | MB moved | params (M) | predicted ms | speed-up |";
  if (measured) os << " measured ms | speed-up | error |";
  os << "\n|---|---|---|---|---|---|---|---|" << (measured ? "---|---|---|" : "") << "\n";
  const PassRow* first = t.rows.empty() ? nullptr : &t.rows.front();
  for (const PassRow& r : t.rows) {
    os << "| " << r.step << " | " << r.ops << " | " << r.gemm_ops << " | " << printf_number("%.3f", r.flops / 1e9) << " | "
       << printf_number("%.1f", r.bytes / 1e6) << " | " << printf_number("%.1f", r.params / 1e6) << " | "
       << printf_number("%.3f", r.predicted_s * 1e3) << " | " << printf_number("%.2fx", first->predicted_s / r.predicted_s) << " |";
    if (measured)
      os << " " << printf_number("%.3f", r.measured_s * 1e3) << " +- " << printf_number("%.3f", r.measured_iqr_s * 1e3) << " | " << printf_number("%.2fx", first->measured_s / r.measured_s)
         << " | " << printf_number("%+.1f%%", (r.predicted_s / r.measured_s - 1) * 100) << " |";
    os << "\n";
  }
  if (!t.skipped.empty()) {
    os << "\nNot applied (no site in this graph):\n";
    for (const std::string& s : t.skipped) os << "- " << s << "\n";
  }
  return os.str();
}

std::string pass_table_csv(const PassTable& t) {
  std::ostringstream os;
  os << "step,passes,graph_capture,kernels,gemm_like,flops,bytes,params,predicted_s,measured_s,measured_iqr_s\n";
  for (const PassRow& r : t.rows)
    os << csv_field(r.step) << "," << csv_field(joined(r.passes, ";")) << "," << (r.graph_capture ? 1 : 0) << "," << r.ops << ","
       << r.gemm_ops << "," << printf_number("%.6g", r.flops) << "," << printf_number("%.6g", r.bytes) << "," << printf_number("%.6g", r.params)
       << "," << printf_number("%.6g", r.predicted_s) << "," << (r.measured_s < 0 ? "" : printf_number("%.6g", r.measured_s)) << ","
       << (r.measured_s < 0 ? "" : printf_number("%.6g", r.measured_iqr_s)) << "\n";
  return os.str();
}

}  // namespace vlasim
