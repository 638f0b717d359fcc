#include "reports/sweep.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "reports/plot.h"
#include "scheduler/policy.h"
#include "sim/costs/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "scenarios/config/csv.h"
#include "sim/engine/planner.h"

namespace vlasim {

namespace {

ConfigError cli_error(const std::string& msg) { return ConfigError("<command line>", 0, 0, "--set", msg); }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

YAML::Node scenario_key(YAML::Node root, const std::string& key, const std::string& file) {
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

std::vector<std::string> linked_keys(const std::string& key) {
  std::vector<std::string> out;
  std::stringstream ss(key);
  std::string k;
  while (std::getline(ss, k, '+')) out.push_back(k);
  if (key.empty() || key.back() == '+' ||
      std::any_of(out.begin(), out.end(), [](const std::string& x) { return x.empty(); }))
    throw cli_error("'" + key + "' has an empty key; link keys as KEY1+KEY2");
  return out;
}

void set_scenario_key(YAML::Node root, const std::string& key, const std::string& value, const std::string& file) {
  for (const std::string& k : linked_keys(key)) {
    YAML::Node t = scenario_key(root, k, file);
    if (!t.IsScalar()) throw ConfigError(file, 0, 0, k, "a sweep sets single values only");
    t = value;
  }
}

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

namespace {

// The spec's scenario with the key set to value i: loaded, dtypes resolved, cost model chosen.
Scenario load_at(const SweepSpec& spec, ConfigNode& root) {
  Scenario s = load_scenario_node(root, spec.catalog_dir, spec.cards_dir);
  resolve_auto_dtypes(s, spec.auto_cpu_dtype);
  if (!spec.profile.empty()) use_profiled_cost_model(s, spec.profile);
  if (spec.adjust) spec.adjust(s);
  return s;
}

}  // namespace

void check_sweep_work(const SweepSpec& spec) {
  const SweepAxis& axis = spec.axis;
  if (axis.values.empty()) throw cli_error("no values to sweep");
  if (spec.capacity_slo > 0)
    for (size_t i = 0; i < axis.values.size(); ++i) {
      char* end = nullptr;
      const std::string& v = axis.values[i];
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !std::isfinite(x))
        throw cli_error("--goal capacity sweeps a load (a rate, a count of robots): '" + v + "' is not a number");
      if (i > 0 && x <= std::strtod(axis.values[i - 1].c_str(), nullptr))
        throw cli_error("--goal capacity needs the values in increasing order: '" + v + "' comes after '" +
                        axis.values[i - 1] + "'");
    }
  // The sweep's whole work, bounded before any point runs by the number of values times the
  // larger of its end points' requests (a swept rate, duration or count grows toward one end).
  double most = 0;
  for (size_t i : {size_t{0}, axis.values.size() - 1}) {
    try {
      ConfigNode root = ConfigNode::load_file(spec.path);
      for (const auto& [key, value] : spec.fixed) set_scenario_key(root.raw(), key, value, spec.path);
      set_scenario_key(root.raw(), axis.key, axis.values[i], spec.path);
      Scenario s = load_at(spec, root);
      if (spec.capacity_slo > 0 &&
          std::none_of(s.streams.begin(), s.streams.end(), [](const StreamDecl& d) { return d.deadline_s > 0; }))
        throw ConfigError("<command line>", 0, 0, "--goal",
                          "capacity is the load up to which deadline attainment holds, but no stream of " +
                              spec.path + " has a deadline (deadline_ms)");
      Plan plan = plan_scenario(s);
      resolve_stream_loads(s, plan);
      most = std::max(most, estimate_work(s, plan, 0).requests);
    } catch (const ConfigError& e) {
      if (e.file() == "<command line>") throw;
      // A value that fails makes a row of its own (sweep_row).
    }
  }
  const double total = most * static_cast<double>(axis.values.size());
  if (total > spec.sim_options.max_requests) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the sweep would simulate up to %.3g requests (%zu values, up to %.3g each); "
                  "the limit is %.3g (--max-requests raises it)",
                  total, axis.values.size(), most, spec.sim_options.max_requests);
    throw ConfigError("<command line>", 0, 0, "--set", buf);
  }
}

SweepRow sweep_row(const SweepSpec& spec, size_t i) {
  const SweepAxis& axis = spec.axis;
  const std::string& path = spec.path;
  if (i >= axis.values.size())
    throw std::out_of_range("sweep_row: value " + std::to_string(i) + " of " + std::to_string(axis.values.size()));
  ConfigNode root = ConfigNode::load_file(path);  // fresh each time: edits are in place
  for (const auto& [key, value] : spec.fixed) set_scenario_key(root.raw(), key, value, path);
  set_scenario_key(root.raw(), axis.key, axis.values[i], path);
  SweepRow row;
  row.value = axis.values[i];
  SplitOutcome& o = row.outcome;
  char* end = nullptr;
  double num = std::strtod(row.value.c_str(), &end);
  o.after_block = *end ? static_cast<int>(i) : static_cast<int>(std::lround(num));
  try {
    Scenario s = load_at(spec, root);
    row.scenario = s.name;
    Plan plan = plan_scenario(s);
    resolve_stream_loads(s, plan);
    SimOptions so = spec.sim_options;
    std::unique_ptr<Router> router;
    if (s.controller.on()) {
      if (!spec.make_router) s.controller.where.fail("this command cannot run the live traffic controller");
      router = spec.make_router(s);
      so.router = router.get();
    }
    SimResult r = simulate(s, plan, so);
    row.report = make_report(s, plan, r, "simulate");
    row.ok = true;
    o.mean_latency_s = row.report.latency.mean;
    o.p99_latency_s = row.report.latency.p99;
    o.throughput_hz = row.report.throughput_hz;
    std::string dev = spec.memory_device.empty() ? s.devices.front().name : spec.memory_device;
    if (s.device_index(dev) < 0) throw ConfigError("<command line>", 0, 0, "--memory-device", "no device '" + dev + "' in the scenario");
    row.memory_device = dev;
    o.peak_memory_bytes = plan.memory[s.device_index(dev)].total();
  } catch (const ConfigError& e) {
    if (e.file() == "<command line>") throw;
    // Only a refusal that depends on the value (a placement that does not fit, a split
    // beyond the model) makes a row; the same error at every value is the file's fault.
    row.error = e.what();
    o.fits = false;
  }
  return row;
}

std::pair<std::string, double> lowest_model_attainment(const Report& r) {
  std::pair<std::string, double> low{"", 1.0};
  bool any = false;
  for (const ModelMetrics& m : r.models)
    if (m.with_deadline > 0 && (!any || m.deadline_attainment < low.second)) {
      low = {m.name, m.deadline_attainment};
      any = true;
    }
  return low;
}

bool row_meets_slo(const SweepRow& row, double slo) {
  if (!row.ok || row.report.requests == 0 || !(row.report.deadline_attainment >= slo)) return false;
  return std::all_of(row.report.models.begin(), row.report.models.end(), [&](const ModelMetrics& m) {
    return m.with_deadline == 0 || m.deadline_attainment >= slo;
  });
}

SweepResult finish_sweep(const SweepSpec& spec, std::vector<SweepRow> rows) {
  SweepResult out;
  out.key = spec.axis.key;
  const SplitGoal goal = spec.goal;
  out.goal = goal == SplitGoal::Throughput ? "throughput" : goal == SplitGoal::Latency ? "latency" : "memory";
  std::vector<SplitOutcome> outcomes;
  bool any = false;
  for (const SweepRow& row : rows) {
    if (out.scenario.empty()) out.scenario = row.scenario;
    if (!row.memory_device.empty()) out.memory_device = row.memory_device;
    outcomes.push_back(row.outcome);
    any = any || row.ok;
  }
  if (!any)
    throw ConfigError(spec.path, 0, 0, spec.axis.key,
                      "refused at every value; first error: " + (rows.empty() ? std::string("no values") : rows.front().error));
  out.rows = std::move(rows);
  if (spec.capacity_slo > 0) {
    out.goal = "capacity";
    out.capacity_slo = spec.capacity_slo;
    for (size_t i = 0; i < out.rows.size() && out.first_miss < 0; ++i) {
      const SweepRow& row = out.rows[i];
      if (row_meets_slo(row, spec.capacity_slo))
        out.best = static_cast<int>(i);
      else
        out.first_miss = static_cast<int>(i);
    }
    if (out.first_miss >= 0 && out.rows[static_cast<size_t>(out.first_miss)].ok)
      std::tie(out.limiting_model, out.limiting_attainment) =
          lowest_model_attainment(out.rows[static_cast<size_t>(out.first_miss)].report);
    return out;
  }
  out.best = best_split(outcomes, goal, spec.memory_cap_bytes);
  return out;
}

SweepResult run_sweep(const SweepSpec& spec, const std::function<void(double)>& progress) {
  check_sweep_work(spec);
  const size_t n = spec.axis.values.size();
  std::vector<SweepRow> rows;
  for (size_t i = 0; i < n; ++i) {
    rows.push_back(sweep_row(spec, i));
    if (progress) progress(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  return finish_sweep(spec, std::move(rows));
}

SweepResult run_sweep(const std::string& path, const std::string& catalog_dir,
                      const std::string& cards_dir, const SweepAxis& axis, SplitGoal goal,
                      double memory_cap_bytes, const std::string& memory_device,
                      const std::function<void(double)>& progress, DType auto_cpu_dtype,
                      const std::string& profile, const SimOptions& sim_options) {
  SweepSpec spec;
  spec.path = path;
  spec.catalog_dir = catalog_dir;
  spec.cards_dir = cards_dir;
  spec.axis = axis;
  spec.goal = goal;
  spec.memory_cap_bytes = memory_cap_bytes;
  spec.memory_device = memory_device;
  spec.auto_cpu_dtype = auto_cpu_dtype;
  spec.profile = profile;
  spec.sim_options = sim_options;
  return run_sweep(spec, progress);
}

namespace {

// The text form of encode_sweep_rows: a header line, then one line per row of fields each
// followed by a space; text fields are "<length>:<bytes>" (any bytes, newlines included),
// numbers hex floats ("%a"), whole numbers decimal.
constexpr const char* kRowsHeader = "vlasim-sweep-rows 2 ";

class RowWriter {
 public:
  void text(const std::string& s) { out_ += std::to_string(s.size()) + ':' + s + ' '; }
  void whole(unsigned long long v) { out_ += std::to_string(v) + ' '; }
  void integer(long long v) { out_ += std::to_string(v) + ' '; }
  void number(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%a", v);
    out_ += b;
    out_ += ' ';
  }
  void end_row() { out_ += '\n'; }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

class RowReader {
 public:
  explicit RowReader(const std::string& t) : t_(t) {}
  // Consumes `s` exactly.
  void expect(const std::string& s) {
    if (t_.compare(pos_, s.size(), s) != 0) fail("expected '" + s + "'");
    pos_ += s.size();
  }
  std::string text() {
    const unsigned long long n = whole_until(':');
    if (n > t_.size() - pos_) fail("a text of " + std::to_string(n) + " bytes runs past the end");
    std::string s = t_.substr(pos_, n);
    pos_ += n;
    expect(" ");
    return s;
  }
  unsigned long long whole() { return whole_until(' '); }
  unsigned long long whole_line() { return whole_until('\n'); }
  long long integer() {
    const std::string tok = token(' ');
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end || errno == ERANGE) fail("'" + tok + "' is not a whole number");
    return v;
  }
  double number() {
    const std::string tok = token(' ');
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (tok.empty() || *end) fail("'" + tok + "' is not a number");
    return v;
  }
  bool flag() {
    const unsigned long long v = whole();
    if (v > 1) fail("a flag is 0 or 1, got " + std::to_string(v));
    return v == 1;
  }
  bool at_end() const { return pos_ == t_.size(); }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("sweep rows: " + what + " at byte " + std::to_string(pos_));
  }

 private:
  // The characters up to `stop`, which is consumed too.
  std::string token(char stop) {
    const size_t at = t_.find(stop, pos_);
    if (at == std::string::npos) fail(std::string("no '") + stop + "' before the end");
    std::string tok = t_.substr(pos_, at - pos_);
    pos_ = at + 1;
    return tok;
  }
  unsigned long long whole_until(char stop) {
    const size_t start = pos_;
    const std::string tok = token(stop);
    if (tok.empty() || tok.size() > 20 || tok.find_first_not_of("0123456789") != std::string::npos) {
      pos_ = start;
      fail("'" + tok.substr(0, 24) + "' is not a whole number");
    }
    errno = 0;
    const unsigned long long v = std::strtoull(tok.c_str(), nullptr, 10);
    if (errno == ERANGE) fail("'" + tok + "' is too large");
    return v;
  }

  const std::string& t_;
  size_t pos_ = 0;
};

}  // namespace

std::string encode_sweep_rows(const std::vector<SweepRow>& rows) {
  RowWriter w;
  w.str() = kRowsHeader + std::to_string(rows.size()) + "\n";
  for (const SweepRow& row : rows) {
    w.text(row.value);
    w.whole(row.ok ? 1 : 0);
    w.text(row.error);
    w.text(row.scenario);
    w.text(row.memory_device);
    const SplitOutcome& o = row.outcome;
    w.integer(o.after_block);
    w.number(o.mean_latency_s);
    w.number(o.p99_latency_s);
    w.number(o.throughput_hz);
    w.number(o.peak_memory_bytes);
    w.whole(o.fits ? 1 : 0);
    const Report& r = row.report;
    w.text(r.scenario);
    w.text(r.file);
    w.text(r.mode);
    w.whole(r.seed);
    w.number(r.horizon_s);
    w.number(r.end_s);
    w.whole(r.requests);
    w.whole(r.finished);
    w.whole(r.failed);
    w.whole(r.latency.count);
    for (double v : {r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max}) w.number(v);
    w.number(r.throughput_hz);
    w.number(r.deadline_attainment);
    w.whole(r.activations);
    w.whole(r.trace_truncated ? 1 : 0);
    w.text(r.partial);
    w.whole(r.models.size());
    for (const ModelMetrics& m : r.models) {
      w.text(m.name);
      w.text(m.card);
      w.whole(m.requests);
      w.whole(m.with_deadline);
      w.number(m.deadline_attainment);
    }
    w.end_row();
  }
  return std::move(w.str());
}

std::vector<SweepRow> decode_sweep_rows(const std::string& text) {
  RowReader in(text);
  in.expect(kRowsHeader);
  const unsigned long long n = in.whole_line();
  std::vector<SweepRow> rows;
  for (unsigned long long k = 0; k < n; ++k) {
    SweepRow row;
    row.value = in.text();
    row.ok = in.flag();
    row.error = in.text();
    row.scenario = in.text();
    row.memory_device = in.text();
    SplitOutcome& o = row.outcome;
    const long long after = in.integer();
    if (after < std::numeric_limits<int>::min() || after > std::numeric_limits<int>::max())
      in.fail("after_block " + std::to_string(after) + " is out of range");
    o.after_block = static_cast<int>(after);
    o.mean_latency_s = in.number();
    o.p99_latency_s = in.number();
    o.throughput_hz = in.number();
    o.peak_memory_bytes = in.number();
    o.fits = in.flag();
    Report& r = row.report;
    r.scenario = in.text();
    r.file = in.text();
    r.mode = in.text();
    r.seed = in.whole();
    r.horizon_s = in.number();
    r.end_s = in.number();
    r.requests = in.whole();
    r.finished = in.whole();
    r.failed = in.whole();
    r.latency.count = in.whole();
    for (double* v : {&r.latency.mean, &r.latency.p50, &r.latency.p90, &r.latency.p99, &r.latency.max}) *v = in.number();
    r.throughput_hz = in.number();
    r.deadline_attainment = in.number();
    r.activations = in.whole();
    r.trace_truncated = in.flag();
    r.partial = in.text();
    const unsigned long long models = in.whole();
    if (models > text.size()) in.fail(std::to_string(models) + " models cannot fit in the text");
    for (unsigned long long j = 0; j < models; ++j) {
      ModelMetrics m;
      m.name = in.text();
      m.card = in.text();
      m.requests = in.whole();
      m.with_deadline = in.whole();
      m.deadline_attainment = in.number();
      r.models.push_back(std::move(m));
    }
    in.expect("\n");
    rows.push_back(std::move(row));
  }
  if (!in.at_end()) in.fail("text after the last row");
  return rows;
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
      std::string note = static_cast<int>(i) == r.best ? "best for " + r.goal : "";
      if (r.goal == "capacity") {
        char c[96];
        std::snprintf(c, sizeof c, "capacity at %g%% attainment", 100 * r.capacity_slo);
        note = static_cast<int>(i) == r.best ? c : static_cast<int>(i) == r.first_miss ? "first below the SLO" : "";
        if (static_cast<int>(i) == r.first_miss && !r.limiting_model.empty()) {
          char lim[64];
          std::snprintf(lim, sizeof lim, " (%.1f%%)", 100 * r.limiting_attainment);
          note += ": model " + r.limiting_model + lim;
        }
      }
      os << b << note << " |\n";
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
    std::ostringstream out;
    // Every model seen in any row, in the order first seen: a column each, after the old ones.
    std::vector<std::string> models;
    for (const SweepRow& row : r.rows)
      for (const ModelMetrics& m : row.report.models)
        if (std::find(models.begin(), models.end(), m.name) == models.end()) models.push_back(m.name);
    out << "value,ok,mean_latency_s,p50_latency_s,p99_latency_s,throughput_hz,deadline_attainment,peak_memory_bytes,best,error,"
           "lowest_model,lowest_model_attainment";
    for (const std::string& m : models) out << ',' << csv_field("attainment:" + m);
    out << '\n';
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const SweepRow& row = r.rows[i];
      out << csv_field(row.value) << ',' << (row.ok ? 1 : 0) << ',';
      if (row.ok)
        out << fmt(row.report.latency.mean) << ',' << fmt(row.report.latency.p50) << ',' << fmt(row.report.latency.p99)
            << ',' << fmt(row.report.throughput_hz) << ',' << fmt(row.report.deadline_attainment) << ','
            << fmt(row.outcome.peak_memory_bytes);
      else
        out << ",,,,,";
      out << ',' << (static_cast<int>(i) == r.best ? 1 : 0) << ',' << csv_field(row.error);
      const auto [low, low_att] = lowest_model_attainment(row.report);
      out << ',' << csv_field(low) << ',' << (low.empty() ? "" : fmt(low_att));
      for (const std::string& name : models) {
        out << ',';
        for (const ModelMetrics& m : row.report.models)
          if (m.name == name && m.with_deadline > 0) out << fmt(m.deadline_attainment);
      }
      out << '\n';
    }
    write_file(csv, out.str());
  }
  files.push_back(csv);
  std::string md = dir + "/sweep.md";
  {
    write_file(md, "# Sweep of " + r.key + " in " + r.scenario + "\n\n" + sweep_table(r));
  }
  files.push_back(md);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "warning: gnuplot not found; no sweep.svg\n");
    return files;
  }
  std::string data = dir + "/sweep.dat", script = dir + "/sweep.gp", svg = dir + "/sweep.svg";
  {
    std::ostringstream d;
    for (const auto& row : r.rows)
      if (row.ok)
        d << row.value << ' ' << row.report.latency.mean * 1e3 << ' ' << row.report.latency.p99 * 1e3 << ' '
          << row.report.throughput_hz << ' ' << row.outcome.peak_memory_bytes / 1e9 << ' '
          << 100 * row.report.deadline_attainment << '\n';
    write_file(data, d.str());
    std::ostringstream g;
    g << "set terminal svg size 900,900 dynamic\nset output '" << svg << "'\n"
      << "set multiplot layout " << (r.goal == "capacity" ? 4 : 3) << ",1 title 'sweep of " << r.key << " (" << r.scenario << ")'\n"
      << "set grid\nset xlabel '" << r.key << "'\n"
      << "set ylabel 'latency (ms)'\nplot '" << data << "' using 1:2 with linespoints title 'mean', '' using 1:3 with linespoints title 'p99'\n"
      << "set ylabel 'throughput (req/s)'\nplot '" << data << "' using 1:4 with linespoints title 'throughput'\n"
      << "set ylabel '" << r.memory_device << " memory (GB)'\nplot '" << data << "' using 1:5 with linespoints title 'peak memory'\n";
    if (r.goal == "capacity")
      g << "set ylabel 'deadline attainment (%)'\nplot '" << data << "' using 1:6 with linespoints title 'attainment', "
        << 100 * r.capacity_slo << " with lines dt 2 title 'SLO " << 100 * r.capacity_slo << "%'\n";
    g << "unset multiplot\n";
    write_file(script, g.str());
  }
  std::string cmd = "gnuplot '" + script + "' 2>'" + dir + "/gnuplot.log'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "warning: gnuplot failed on %s (see %s/gnuplot.log)\n", script.c_str(), dir.c_str());
  else
    files.push_back(svg);
  return files;
}

std::vector<std::vector<std::string>> grid_configs(const std::vector<SweepAxis>& axes) {
  std::vector<std::vector<std::string>> out{{}};
  for (const SweepAxis& a : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : out)
      for (const std::string& v : a.values) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

std::string grid_label(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? "_" : "") + keys[i] + "=" + values[i];
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '_' || c == '-')) c = '-';
  return out;
}

namespace {
// A grid row's best-value cells: the knee and the first value past it, or the best value.
std::pair<std::string, std::string> grid_best(const SweepResult& r) {
  if (r.rows.empty()) return {"refused", ""};
  const std::string best = r.best >= 0 ? r.rows[static_cast<size_t>(r.best)].value : "none";
  if (r.goal != "capacity") return {best, ""};
  return {best, r.first_miss >= 0 ? r.rows[static_cast<size_t>(r.first_miss)].value : "none (sweep further)"};
}
// The model limiting a capacity sweep and its attainment at the first miss ("" if none).
std::string limiting_cell(const SweepResult& r) {
  if (r.limiting_model.empty()) return "";
  char b[48];
  std::snprintf(b, sizeof b, " (%.1f%%)", 100 * r.limiting_attainment);
  return r.limiting_model + b;
}
}  // namespace

std::string grid_table(const GridResult& g) {
  const bool capacity = !g.sweeps.empty() && g.sweeps.front().goal == "capacity";
  const std::string axis = g.sweeps.empty() ? "" : g.sweeps.front().key;
  std::ostringstream os;
  std::string notes;
  os << '|';
  for (const auto& k : g.keys) os << ' ' << k << " |";
  if (capacity)
    os << " capacity: " << axis << " at " << 100 * g.sweeps.front().capacity_slo << "% attainment | first miss | limited by |\n|";
  else os << " best " << axis << " for " << (g.sweeps.empty() ? "" : g.sweeps.front().goal) << " |\n|";
  for (size_t i = 0; i < g.keys.size() + (capacity ? 3 : 1); ++i) os << "---|";
  os << '\n';
  for (size_t c = 0; c < g.configs.size(); ++c) {
    os << '|';
    for (const auto& v : g.configs[c]) os << ' ' << v << " |";
    auto [best, miss] = grid_best(g.sweeps[c]);
    os << ' ' << best << " |";
    if (capacity) os << ' ' << miss << " | " << limiting_cell(g.sweeps[c]) << " |";
    os << '\n';
    if (c < g.refused.size() && !g.refused[c].empty())
      notes += "- " + grid_label(g.keys, g.configs[c]) + " refused: " + g.refused[c] + "\n";
  }
  return os.str() + (notes.empty() ? "" : "\n" + notes);
}

std::vector<std::string> write_grid(const GridResult& g, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::vector<std::string> files;
  const bool capacity = !g.sweeps.empty() && g.sweeps.front().goal == "capacity";
  const std::string axis = g.sweeps.empty() ? "" : g.sweeps.front().key;
  std::string csv;
  for (const auto& k : g.keys) csv += csv_field(k) + ",";
  csv += capacity ? "capacity,first_miss,limiting_model,limiting_attainment\n" : "best\n";
  for (size_t c = 0; c < g.configs.size(); ++c) {
    for (const auto& v : g.configs[c]) csv += csv_field(v) + ",";
    auto [best, miss] = grid_best(g.sweeps[c]);
    const SweepResult& sr = g.sweeps[c];
    csv += csv_field(best) +
           (capacity ? "," + csv_field(miss) + "," + csv_field(sr.limiting_model) + "," +
                           (sr.limiting_model.empty() ? "" : fmt(sr.limiting_attainment))
                     : "") +
           "\n";
  }
  write_into(dir, "grid.csv", csv, &files);
  write_into(dir, "grid.md",
             "# Grid of " + axis + " over " + [&] {
               std::string k;
               for (size_t i = 0; i < g.keys.size(); ++i) k += (i ? ", " : "") + g.keys[i];
               return k;
             }() + (g.sweeps.empty() ? "" : " in " + g.sweeps.front().scenario) + "\n\n" + grid_table(g),
             &files);
  if (!on_path("gnuplot")) {
    std::fprintf(stderr, "warning: gnuplot not found; no grid.svg\n");
    return files;
  }
  // One curve per configuration: deadline attainment (capacity) or mean latency per value.
  std::string data, plot;
  for (size_t c = 0; c < g.configs.size(); ++c) {
    for (const SweepRow& row : g.sweeps[c].rows)
      if (row.ok) {
        char* end = nullptr;
        const double x = std::strtod(row.value.c_str(), &end);
        if (*end) continue;  // a non-numeric value has no place on the x axis
        data += printf_number("%.17g", x) + " " +
                printf_number("%.17g", capacity ? 100 * row.report.deadline_attainment : row.report.latency.mean * 1e3) + "\n";
      }
    data += "\n\n";  // a gnuplot data block per configuration
    std::string title;
    for (size_t i = 0; i < g.keys.size(); ++i) title += (i ? ", " : "") + g.keys[i] + "=" + g.configs[c][i];
    plot += std::string(c ? ", " : "plot ") + "'grid.dat' index " + std::to_string(c) + " using 1:2 with linespoints title " +
            gp_quote(title);
  }
  if (capacity)
    plot += ", " + printf_number("%g", 100 * g.sweeps.front().capacity_slo) + " with lines dt 2 title 'SLO'";
  write_file(dir + "/grid.dat", data);
  const std::string svg = dir + "/grid.svg";
  write_file(dir + "/grid.gp", std::string(kSvgHeader) + "set output 'grid.svg'\nset grid\nset key outside below\n" +
                                   "set xlabel " + gp_quote(axis) + "\nset ylabel " +
                                   gp_quote(capacity ? "deadline attainment (%)" : "mean latency (ms)") + "\n" + plot + "\n");
  if (std::string why = run_gnuplot(dir + "/grid.gp", svg); !why.empty())
    std::fprintf(stderr, "warning: %s\n", why.c_str());
  else
    files.push_back(svg);
  return files;
}

}  // namespace vlasim
