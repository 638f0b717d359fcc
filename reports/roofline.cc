#include "reports/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "reports/plot.h"
#include "sim/costs/cost_model.h"
#include "scenarios/config/csv.h"

namespace vlasim {

namespace {

std::string file_safe(const std::string& s) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
  return out;
}

struct Acc {
  int ops = 0, measured = 0;
  double flops = 0, bytes = 0, seconds = 0, compute = 0, memory = 0, overhead = 0;
  double peak = 0, bw = 0;
};

}  // namespace

std::vector<double> predicted_op_seconds(const Scenario& s, const Plan& p, int m, std::vector<double>* stack_host) {
  const ModelPlan& mp = p.models.at(static_cast<size_t>(m));
  std::vector<double> out(mp.op_costs.size()), host(mp.op_costs.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = mp.op_costs[i].seconds;
    host[i] = mp.op_costs[i].overhead_seconds;
  }
  for (const Segment& seg : mp.segments) {
    // The units a stack priced (Plan::unit_stack): GPU streams under a scenario's stack.
    if (seg.transfer || seg.ops.empty() || !p.unit_stack(s, p.units.at(static_cast<size_t>(seg.unit)))) continue;
    const double wall = std::max(0.0, seg.seconds - seg.overhead);
    double kernels = 0;
    for (int id : seg.ops) kernels += std::max(0.0, mp.op_costs[size_t(id)].kernel_only());
    for (int id : seg.ops) {
      const double k = std::max(0.0, mp.op_costs[size_t(id)].kernel_only());
      out[size_t(id)] = kernels > 0 ? wall * k / kernels : wall / double(seg.ops.size());
      host[size_t(id)] = std::max(0.0, out[size_t(id)] - k);
    }
  }
  if (stack_host) *stack_host = std::move(host);
  return out;
}

RooflineReport make_roofline(const Scenario& s, const Plan& p, int m) {
  RooflineReport r;
  r.scenario = s.name;
  r.stack = s.stack.name;
  std::vector<double> host;
  const std::vector<double> op_s = predicted_op_seconds(s, p, m, &host);
  r.model = s.models.at(static_cast<size_t>(m)).name;
  const ModelPlan& mp = p.models.at(static_cast<size_t>(m));
  // Keyed by (device index, unit, stage, kind, dtype): the order the report lists them in;
  // every op of one key sees the same roof.
  std::map<std::tuple<int, int, int, int, int>, Acc> acc;
  for (size_t i = 0; i < mp.graph.size(); ++i) {
    const Op& op = mp.graph.op(static_cast<int>(i));
    if (op.kind == OpKind::Transfer) continue;
    const UnitInfo& u = p.units.at(static_cast<size_t>(mp.op_unit.at(i)));
    const DeviceInstance& dev = s.devices.at(static_cast<size_t>(u.device));
    const UnitDecl& unit = dev.units.at(static_cast<size_t>(u.unit));
    const OpCost& c = mp.op_costs.at(i);
    Acc& a = acc[{u.device, u.unit, static_cast<int>(op.stage), static_cast<int>(op.kind), static_cast<int>(op.dtype)}];
    ++a.ops;
    if (c.measured) ++a.measured;
    a.flops += op.flops;
    a.bytes += op.bytes_read + op.bytes_written;
    a.seconds += op_s[i];
    a.compute += c.compute_seconds;
    a.memory += c.memory_seconds;
    a.overhead += host[i];
    a.peak = unit_peak_flops(dev, unit, op);
    a.bw = unit_bandwidth(dev, unit);
    r.request_seconds += op_s[i];
  }
  for (const auto& [key, a] : acc) {
    const auto [d, unit, stage, kind, dtype] = key;
    RooflineRow row;
    const DeviceInstance& dev = s.devices[static_cast<size_t>(d)];
    row.device = dev.name;
    row.catalog = dev.spec.name;
    row.unit = dev.units.at(static_cast<size_t>(unit)).name;
    row.dtype = to_string(static_cast<DType>(dtype));
    row.stage = to_string(static_cast<Stage>(stage));
    row.op_class = to_string(static_cast<OpKind>(kind));
    row.ops = a.ops;
    row.measured_ops = a.measured;
    row.flops = a.flops;
    row.bytes = a.bytes;
    row.seconds = a.seconds;
    row.intensity = a.bytes > 0 ? a.flops / a.bytes : 0;
    row.peak_flops = a.peak;
    row.bandwidth = a.bw;
    row.ridge = a.bw > 0 ? a.peak / a.bw : 0;
    row.bound = row.intensity >= row.ridge ? "compute" : "memory";
    // The cost model's own split: max(compute, memory) + overhead per op, summed here.
    row.limiter = a.overhead >= std::max(a.compute, a.memory) ? "overhead"
                  : a.compute >= a.memory                     ? "compute"
                                                              : "memory";
    row.attainable_flops = std::min(a.peak, row.intensity * a.bw);
    row.achieved_flops = a.seconds > 0 ? a.flops / a.seconds : 0;
    row.share = r.request_seconds > 0 ? a.seconds / r.request_seconds : 0;
    r.rows.push_back(row);
  }
  return r;
}

std::string roofline_markdown(const RooflineReport& r) {
  std::ostringstream os;
  os << "# Roofline: " << r.model << " (" << r.scenario << ")\n\n"
     << "One request, predicted. Intensity: FLOP per DRAM byte (every read and write of the operators, no "
        "cache reuse). Bound: intensity against the unit's ridge point. Limiter: what the cost model's time "
        "is mostly made of (compute, memory or launch/dispatch overhead). Attainable: min(peak, intensity x "
        "bandwidth); achieved: FLOPs over the predicted time, which can pass attainable where activations stay "
        "in L2/LLC (the cost model charges them less than DRAM traffic).\n";
  if (r.stack != "none")
    os << "\nGPU ops under the " << r.stack << " software stack: each segment's stack wall time split over its ops "
          "in proportion to their kernel times; the overhead limiter is the stack's host, launch and gap time.\n";
  std::string device;
  for (const RooflineRow& x : r.rows) {
    if (x.device != device) {
      device = x.device;
      os << "\n## " << x.device << " (" << x.catalog << "): bandwidth " << printf_number("%.4g", x.bandwidth / 1e9)
         << " GB/s\n\n"
         << "| unit | stage | class | dtype | ops | measured | GFLOP | MB | FLOP/B | ridge | bound | limiter | "
            "attainable TFLOP/s | achieved TFLOP/s | of peak | ms | share |\n"
         << "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|\n";
    }
    os << "| " << x.unit << " | " << x.stage << " | " << x.op_class << " | " << x.dtype << " | " << x.ops << " | " << x.measured_ops << " | " << printf_number("%.4g", x.flops / 1e9) << " | "
       << printf_number("%.4g", x.bytes / 1e6) << " | " << printf_number("%.3g", x.intensity) << " | " << printf_number("%.3g", x.ridge) << " | "
       << x.bound << " | " << x.limiter << " | " << printf_number("%.4g", x.attainable_flops / 1e12) << " | "
       << printf_number("%.4g", x.achieved_flops / 1e12) << " | "
       << printf_number("%.1f%%", x.peak_flops > 0 ? 100 * x.achieved_flops / x.peak_flops : 0) << " | "
       << printf_number("%.4g", x.seconds * 1e3) << " | " << printf_number("%.1f%%", 100 * x.share) << " |\n";
  }
  return os.str();
}

std::string roofline_csv(const RooflineReport& r) {
  std::ostringstream os;
  os << "model,device,catalog,unit,stage,class,dtype,ops,flops,bytes,intensity,peak_flops,bandwidth,ridge,bound,"
        "limiter,attainable_flops,achieved_flops,seconds,share,measured_ops"
     << (r.stack != "none" ? ",stack\n" : "\n");  // without a stack: the columns stacks came before
  for (const RooflineRow& x : r.rows)
    os << csv_field(r.model) << ',' << csv_field(x.device) << ',' << csv_field(x.catalog) << ',' << csv_field(x.unit) << ','
       << csv_field(x.stage) << ',' << csv_field(x.op_class) << ',' << csv_field(x.dtype) << ',' << x.ops << ','
       << printf_number("%.9g", x.flops) << ',' << printf_number("%.9g", x.bytes) << ',' << printf_number("%.9g", x.intensity) << ','
       << printf_number("%.9g", x.peak_flops) << ',' << printf_number("%.9g", x.bandwidth) << ',' << printf_number("%.9g", x.ridge) << ','
       << csv_field(x.bound) << ',' << csv_field(x.limiter) << ',' << printf_number("%.9g", x.attainable_flops) << ','
       << printf_number("%.9g", x.achieved_flops) << ',' << printf_number("%.9g", x.seconds) << ',' << printf_number("%.9g", x.share) << ',' << x.measured_ops
       << (r.stack != "none" ? ',' + csv_field(r.stack) : std::string()) << '\n';
  return os.str();
}

std::vector<std::string> write_roofline(const RooflineReport& r, const std::string& dir,
                                        std::vector<std::string>* warnings) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const fs::path base(dir);
  std::vector<std::string> written;
  write_into(dir, "roofline.md", roofline_markdown(r), &written);
  write_into(dir, "roofline.csv", roofline_csv(r), &written);
  if (!on_path("gnuplot")) {
    warnings->push_back("gnuplot is not on PATH: roofline plots skipped");
    return written;
  }
  std::map<std::string, std::vector<const RooflineRow*>> by_device;
  for (const RooflineRow& x : r.rows) by_device[x.device].push_back(&x);
  for (const auto& [device, rows] : by_device) {
    const std::string stem = "roofline_" + file_safe(device);
    double matrix = 0, vector = 0, bw = rows.front()->bandwidth, xmin = 1e300, xmax = 0;
    std::ostringstream data;
    for (const RooflineRow* x : rows) {
      if (x->op_class == "gemm" || x->op_class == "attention")
        matrix = std::max(matrix, x->peak_flops);
      else
        vector = std::max(vector, x->peak_flops);
      if (x->intensity <= 0 || x->achieved_flops <= 0) continue;
      xmin = std::min(xmin, x->intensity);
      xmax = std::max(xmax, x->intensity);
      data << printf_number("%.9g", x->intensity) << ' ' << printf_number("%.9g", x->achieved_flops / 1e12) << " \"" << x->stage << '.'
           << x->op_class << "\"\n";
    }
    if (xmax <= 0) continue;
    if (matrix <= 0) matrix = vector;
    if (vector <= 0) vector = matrix;
    xmin = std::min(xmin, 0.5 * vector / bw) / 4;
    xmax = std::max(xmax, 2 * matrix / bw) * 4;
    const std::string dat = (base / (stem + ".dat")).string(), gp = (base / (stem + ".gp")).string(),
                      svg = (base / (stem + ".svg")).string();
    write_file(dat, data.str());
    std::ostringstream s;
    const std::string bwt = printf_number("%.9g", bw / 1e12);
    s << kSvgHeader << "set output " << gp_quote(stem + ".svg") << '\n'
      << "set title " << gp_quote("Roofline: " + r.model + " on " + device + " (" + rows.front()->catalog + ")") << '\n'
      << "set logscale xy\nset xlabel 'arithmetic intensity (FLOP per DRAM byte)'\n"
      << "set ylabel 'TFLOP/s'\nset key left top\nset grid\nset samples 400\n"
      << "set xrange [" << printf_number("%.6g", xmin) << ":" << printf_number("%.6g", xmax) << "]\n"
      << "m(x) = x * " << bwt << " < " << printf_number("%.9g", matrix / 1e12) << " ? x * " << bwt << " : "
      << printf_number("%.9g", matrix / 1e12) << "\n"
      << "v(x) = x * " << bwt << " < " << printf_number("%.9g", vector / 1e12) << " ? x * " << bwt << " : "
      << printf_number("%.9g", vector / 1e12) << "\n"
      << "plot m(x) with lines lw 2 lc rgb '#1f77b4' title 'matrix roof', \\\n"
      << "     v(x) with lines lw 2 dt 2 lc rgb '#2ca02c' title 'vector roof', \\\n"
      << "     " << gp_quote(stem + ".dat") << " using 1:2 with points pt 7 ps 1 lc rgb '#d62728' title "
      << "'predicted (stage.class)', \\\n"
      << "     " << gp_quote(stem + ".dat") << " using 1:2:3 with labels offset 1,0.6 left font ',9' notitle\n";
    write_file(gp, s.str());
    const std::string error = run_gnuplot(gp, svg);
    if (!error.empty())
      warnings->push_back(error);
    else
      written.push_back(svg);
  }
  return written;
}

}  // namespace vlasim
