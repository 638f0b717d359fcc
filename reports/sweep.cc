#include "reports/sweep.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scheduler/policy.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/plan.h"

namespace vlasim {

namespace {

ConfigError cli_error(const std::string& msg) { return ConfigError("<command line>", 0, 0, "--set", msg); }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The node at a dotted path inside `root` (numbers index sequences). Throws ConfigError
// naming the first component that does not exist.
YAML::Node at_path(YAML::Node root, const std::string& key, const std::string& file) {
  YAML::Node n = root;
  std::stringstream ss(key);
  std::string part, walked;
  while (std::getline(ss, part, '.')) {
    walked += (walked.empty() ? "" : ".") + part;
    bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (n.IsSequence() && index) {
      const size_t i = part.size() > 9 ? n.size() : std::stoul(part);
      if (i >= n.size()) throw ConfigError(file, 0, 0, walked, "index out of range (" + std::to_string(n.size()) + " entries)");
      n.reset(n[i]);
    } else if (n.IsMap() && n[part].IsDefined()) {
      YAML::Node child = n[part];
      n.reset(child);
    } else {
      throw ConfigError(file, 0, 0, walked, "not in the scenario; a sweep changes an existing key");
    }
  }
  return n;
}

}  // namespace

SweepAxis parse_sweep_axis(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw cli_error("expected KEY=VALUES (a:b, a:b:step or v1,v2,...), got '" + text + "'");
  SweepAxis a;
  a.key = text.substr(0, eq);
  std::string spec = text.substr(eq + 1);
  if (spec.find(':') != std::string::npos) {
    std::vector<double> p;
    std::stringstream ss(spec);
    std::string x;
    while (std::getline(ss, x, ':')) {
      char* end = nullptr;
      double v = std::strtod(x.c_str(), &end);
      if (x.empty() || *end) throw cli_error("'" + x + "' in '" + spec + "' is not a number");
      p.push_back(v);
    }
    if (p.size() < 2 || p.size() > 3) throw cli_error("a range is a:b or a:b:step, got '" + spec + "'");
    double step = p.size() == 3 ? p[2] : 1;
    if (!(step > 0) || p[1] < p[0]) throw cli_error("range '" + spec + "' needs a <= b and step > 0");
    for (double v : p)
      if (!std::isfinite(v)) throw cli_error("range '" + spec + "' needs finite numbers");
    if ((p[1] - p[0]) / step >= 10000) throw cli_error("range '" + spec + "' has more than 10000 values");
    if (p[0] + step == p[0] || p[1] + step == p[1])
      throw cli_error("range '" + spec + "': step " + fmt(step) + " is lost against " + fmt(p[0]) +
                      " in floating point; use a larger step");
    const int n = static_cast<int>(std::floor((p[1] - p[0]) / step + 1e-9)) + 1;
    for (int i = 0; i < n; ++i) a.values.push_back(fmt(p[0] + i * step));
  } else {
    std::stringstream ss(spec);
    std::string x;
    while (std::getline(ss, x, ','))
      if (!x.empty()) a.values.push_back(x);
  }
  if (a.values.empty()) throw cli_error("no values in '" + spec + "'");
  return a;
}

SweepResult run_sweep(const std::string& path, const std::string& catalog_dir,
                      const std::string& cards_dir, const SweepAxis& axis, SplitGoal goal,
                      double memory_cap_bytes, const std::string& memory_device,
                      const std::function<void(double)>& progress, DType auto_cpu_dtype,
                      const std::string& profile, const SimOptions& sim_options) {
  SweepResult out;
  out.key = axis.key;
  out.goal = goal == SplitGoal::Throughput ? "throughput" : goal == SplitGoal::Latency ? "latency" : "memory";
  std::vector<SplitOutcome> outcomes;
  // The sweep's whole work, bounded before any point runs by the number of values times the
  // larger of its end points' requests (a swept rate, duration or count grows toward one end).
  double most = 0;
  for (size_t i : {size_t{0}, axis.values.size() - 1}) {
    try {
      ConfigNode root = ConfigNode::load_file(path);
      at_path(root.raw(), axis.key, path) = axis.values[i];
      Scenario s = load_scenario_node(root, catalog_dir, cards_dir);
      resolve_auto_dtypes(s, auto_cpu_dtype);
      if (!profile.empty()) use_profiled_cost_model(s, profile);
      Plan plan = plan_scenario(s);
      resolve_stream_loads(s, plan);
      most = std::max(most, estimate_work(s, plan, 0).requests);
    } catch (const ConfigError&) {
      // A value that fails makes a row of its own below.
    }
  }
  const double total = most * static_cast<double>(axis.values.size());
  if (total > sim_options.max_requests) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the sweep would simulate up to %.3g requests (%zu values, up to %.3g each); "
                  "the limit is %.3g (--max-requests raises it)",
                  total, axis.values.size(), most, sim_options.max_requests);
    throw ConfigError("<command line>", 0, 0, "--set", buf);
  }
  for (size_t i = 0; i < axis.values.size(); ++i) {
    ConfigNode root = ConfigNode::load_file(path);  // fresh each time: edits are in place
    YAML::Node target = at_path(root.raw(), axis.key, path);
    if (!target.IsScalar()) throw ConfigError(path, 0, 0, axis.key, "a sweep sets single values only");
    target = axis.values[i];
    SweepRow row;
    row.value = axis.values[i];
    SplitOutcome& o = row.outcome;
    char* end = nullptr;
    double num = std::strtod(row.value.c_str(), &end);
    o.after_block = *end ? static_cast<int>(i) : static_cast<int>(std::lround(num));
    try {
      Scenario s = load_scenario_node(root, catalog_dir, cards_dir);
      resolve_auto_dtypes(s, auto_cpu_dtype);
      if (!profile.empty()) use_profiled_cost_model(s, profile);
      if (out.scenario.empty()) out.scenario = s.name;
      Plan plan = plan_scenario(s);
      resolve_stream_loads(s, plan);
      SimResult r = simulate(s, plan, sim_options);
      row.report = make_report(s, plan, r, "simulate");
      row.ok = true;
      o.mean_latency_s = row.report.latency.mean;
      o.p99_latency_s = row.report.latency.p99;
      o.throughput_hz = row.report.throughput_hz;
      std::string dev = memory_device.empty() ? s.devices.front().name : memory_device;
      if (s.device_index(dev) < 0) throw ConfigError("<command line>", 0, 0, "--memory-device", "no device '" + dev + "' in the scenario");
      out.memory_device = dev;
      o.peak_memory_bytes = plan.memory[s.device_index(dev)].total();
    } catch (const ConfigError& e) {
      if (e.file() == "<command line>") throw;
      // Only a refusal that depends on the value (a placement that does not fit, a split
      // beyond the model) makes a row; the same error at every value is the file's fault.
      row.error = e.what();
      o.fits = false;
    }
    outcomes.push_back(o);
    out.rows.push_back(std::move(row));
    if (progress) progress(static_cast<double>(i + 1) / static_cast<double>(axis.values.size()));
  }
  bool any = false;
  for (auto& r : out.rows) any = any || r.ok;
  if (!any) throw ConfigError(path, 0, 0, axis.key, "refused at every value; first error: " + out.rows.front().error);
  out.best = best_split(outcomes, goal, memory_cap_bytes);
  return out;
}

std::string sweep_table(const SweepResult& r) {
  std::ostringstream os;
  os << "| " << r.key << " | mean latency ms | p99 latency ms | throughput req/s | deadline attainment | "
     << r.memory_device << " peak memory GB | note |\n|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    os << "| " << row.value << " | ";
    if (row.ok) {
      char b[256];
      std::snprintf(b, sizeof b, "%.2f | %.2f | %.3f | %.1f%% | %.2f | ", row.report.latency.mean * 1e3,
                    row.report.latency.p99 * 1e3, row.report.throughput_hz,
                    100 * row.report.deadline_attainment, row.outcome.peak_memory_bytes / 1e9);
      os << b << (static_cast<int>(i) == r.best ? "best for " + r.goal : "") << " |\n";
    } else {
      os << "- | - | - | - | - | refused: " << row.error << " |\n";
    }
  }
  return os.str();
}

std::vector<std::string> write_sweep(const SweepResult& r, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::vector<std::string> files;
  std::string csv = dir + "/sweep.csv";
  {
    std::ofstream out(csv);
    if (!out) throw std::runtime_error(csv + ": cannot open for writing");
    out << "value,ok,mean_latency_s,p50_latency_s,p99_latency_s,throughput_hz,deadline_attainment,peak_memory_bytes,best,error\n";
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const SweepRow& row = r.rows[i];
      out << row.value << ',' << (row.ok ? 1 : 0) << ',';
      if (row.ok)
        out << fmt(row.report.latency.mean) << ',' << fmt(row.report.latency.p50) << ',' << fmt(row.report.latency.p99)
            << ',' << fmt(row.report.throughput_hz) << ',' << fmt(row.report.deadline_attainment) << ','
            << fmt(row.outcome.peak_memory_bytes);
      else
        out << ",,,,,";
      std::string err = row.error;
      for (char& c : err)
        if (c == ',' || c == '\n') c = ';';
      out << ',' << (static_cast<int>(i) == r.best ? 1 : 0) << ',' << err << '\n';
    }
  }
  files.push_back(csv);
  std::string md = dir + "/sweep.md";
  {
    std::ofstream out(md);
    out << "# Sweep of " << r.key << " in " << r.scenario << "\n\n" << sweep_table(r);
  }
  files.push_back(md);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "warning: gnuplot not found; no sweep.svg\n");
    return files;
  }
  std::string data = dir + "/sweep.dat", script = dir + "/sweep.gp", svg = dir + "/sweep.svg";
  {
    std::ofstream d(data);
    for (const auto& row : r.rows)
      if (row.ok)
        d << row.value << ' ' << row.report.latency.mean * 1e3 << ' ' << row.report.latency.p99 * 1e3 << ' '
          << row.report.throughput_hz << ' ' << row.outcome.peak_memory_bytes / 1e9 << '\n';
    std::ofstream g(script);
    g << "set terminal svg size 900,900 dynamic\nset output '" << svg << "'\n"
      << "set multiplot layout 3,1 title 'sweep of " << r.key << " (" << r.scenario << ")'\n"
      << "set grid\nset xlabel '" << r.key << "'\n"
      << "set ylabel 'latency (ms)'\nplot '" << data << "' using 1:2 with linespoints title 'mean', '' using 1:3 with linespoints title 'p99'\n"
      << "set ylabel 'throughput (req/s)'\nplot '" << data << "' using 1:4 with linespoints title 'throughput'\n"
      << "set ylabel '" << r.memory_device << " memory (GB)'\nplot '" << data << "' using 1:5 with linespoints title 'peak memory'\n"
      << "unset multiplot\n";
  }
  std::string cmd = "gnuplot '" + script + "' 2>'" + dir + "/gnuplot.log'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "warning: gnuplot failed on %s (see %s/gnuplot.log)\n", script.c_str(), dir.c_str());
  else
    files.push_back(svg);
  return files;
}

}  // namespace vlasim
