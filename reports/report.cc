#include "reports/report.h"

#include <unistd.h>

#include <boost/histogram.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scenarios/config/csv.h"

namespace vlasim {

LatencyStats latency_stats(std::vector<double> v) {
  LatencyStats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto rank = [&](double q) {
    size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
  };
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  s.max = v.back();
  return s;
}

namespace {
// Log-spaced bins from 1 ns to 1e6 s, each 0.2% wide: a value's bin centre (geometric) is
// within 0.1% of it.
constexpr double kHistLo = 1e-9, kHistHi = 1e6;
const unsigned kHistBins =
    static_cast<unsigned>(std::ceil(std::log(kHistHi / kHistLo) / std::log1p(2 * kStreamingQuantileError)));
using LogAxis = boost::histogram::axis::regular<double, boost::histogram::axis::transform::log>;
}  // namespace

struct LatencySeries::Histogram {
  decltype(boost::histogram::make_histogram(LogAxis(kHistBins, kHistLo, kHistHi))) h =
      boost::histogram::make_histogram(LogAxis(kHistBins, kHistLo, kHistHi));
};

LatencySeries::LatencySeries(bool streaming)
    : hist_(streaming ? std::make_unique<Histogram>() : nullptr) {}
LatencySeries::~LatencySeries() = default;
LatencySeries::LatencySeries(LatencySeries&&) noexcept = default;
LatencySeries& LatencySeries::operator=(LatencySeries&&) noexcept = default;

void LatencySeries::add(double v) {
  if (!hist_) {
    values_.push_back(v);
    return;
  }
  hist_->h(v);
  ++count_;
  sum_ += v;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

LatencyStats LatencySeries::stats() const {
  if (!hist_) return latency_stats(values_);
  LatencyStats st;
  st.count = count_;
  if (count_ == 0) return st;
  st.mean = sum_ / static_cast<double>(count_);
  st.max = max_;
  // Nearest rank, as latency_stats: the bin holding the k-th smallest value, its centre
  // clamped to the exact extremes (which also stand for the under- and overflow bins).
  auto rank = [&](double q) {
    const double k = std::max(1.0, std::ceil(q * static_cast<double>(count_)));
    double seen = 0;
    for (auto&& b : boost::histogram::indexed(hist_->h, boost::histogram::coverage::all)) {
      seen += *b;
      if (seen >= k) {
        if (b.index() < 0) return min_;
        if (b.index() >= static_cast<int>(kHistBins)) return max_;
        return std::clamp(std::sqrt(b.bin().lower() * b.bin().upper()), min_, max_);
      }
    }
    return max_;
  };
  st.p50 = rank(0.50);
  st.p90 = rank(0.90);
  st.p99 = rank(0.99);
  return st;
}

ReportBuilder::ReportBuilder(const Scenario& s, bool streaming)
    : s_(s), all_(streaming), count_(s.models.size(), 0), met_(s.models.size(), 0), with_deadline_(s.models.size(), 0) {
  for (size_t m = 0; m < s.models.size(); ++m) {
    model_.emplace_back(streaming);
    stage_.emplace_back();
    for (int k = 0; k < kStages; ++k) stage_.back().emplace_back(streaming);
  }
}

void ReportBuilder::add(const RequestRecord& q) {
  ++requests_;
  failed_ += q.failed;
  dropped_ += q.dropped;
  ++count_[q.model];
  with_deadline_[q.model] += q.deadline > 0;
  first_arrival_ = std::min(first_arrival_, q.arrival);
  if (q.met()) {
    ++total_met_;
    ++met_[q.model];
  }
  if (!q.finished()) return;
  last_end_ = std::max(last_end_, q.end);
  all_.add(q.latency());
  model_[q.model].add(q.latency());
  for (int st = 0; st < kStages; ++st)
    if (q.stage_done(st)) stage_[q.model][st].add(q.stage_latency[st]);
}

Report make_report(const Scenario& s, const Plan& p, const SimResult& r, const std::string& mode) {
  ReportBuilder b(s, false);
  for (const auto& q : r.requests) b.add(q);
  return b.finish(p, r, mode);
}

Report ReportBuilder::finish(const Plan& p, const SimResult& r, const std::string& mode) const {
  const Scenario& s = s_;
  Report rep;
  rep.scenario = s.name;
  // The scenario's path made absolute, so that a run gives the same report from any working
  // directory and however the path was typed (issue 28); a scenario read from text keeps "".
  rep.file = s.file.empty() ? "" : std::filesystem::absolute(s.file).lexically_normal().string();
  rep.mode = mode;
  rep.seed = s.seed;
  rep.horizon_s = r.horizon;
  rep.end_s = r.end_time;
  rep.activations = r.activations;
  rep.locksteps = r.locksteps;
  rep.guard_kept = r.guard_kept;
  rep.trace_truncated = r.trace_truncated;
  rep.requests = requests_;
  rep.failed = failed_;
  rep.dropped = dropped_;
  rep.partial = r.stopped;
  rep.latency = all_.stats();
  rep.finished = rep.latency.count;
  // Throughput is measured over arrivals and completions together, so an overloaded system
  // (completions trailing past the last arrival) shows its service rate, not its load.
  const double first = first_arrival_, last = last_end_;
  double horizon = std::max(r.horizon, last) - (std::isfinite(first) ? first : 0);
  if (horizon <= 0) horizon = 1;
  rep.throughput_hz = static_cast<double>(rep.finished) / horizon;
  rep.deadline_attainment =
      rep.requests ? static_cast<double>(total_met_) / static_cast<double>(rep.requests) : 1;
  for (size_t m = 0; m < s.models.size(); ++m) {
    ModelMetrics mm;
    mm.name = s.models[m].name;
    mm.card = s.models[m].card.name;
    mm.requests = count_[m];
    mm.latency = model_[m].stats();
    mm.finished = mm.latency.count;
    for (int st = 0; st < kStages; ++st) mm.stage[st] = stage_[m][st].stats();
    mm.throughput_hz = static_cast<double>(mm.finished) / horizon;
    mm.deadline_attainment = count_[m] ? static_cast<double>(met_[m]) / static_cast<double>(count_[m]) : 1;
    mm.with_deadline = with_deadline_[m];
    mm.predicted_alone_s = p.models[m].alone_seconds;
    mm.flops = p.models[m].graph.flops();
    rep.models.push_back(mm);
  }
  double span = std::max(r.end_time, 1e-12);
  for (int d = 0; d < p.domains; ++d) {
    DeviceMetrics dm;
    dm.name = p.domain_names[d];
    const DomainStats& ds = r.domains.empty() ? DomainStats{} : r.domains[d];
    dm.busy = ds.busy_seconds / span;
    int device = -1;
    for (const auto& u : p.units)
      if (u.domain == d) {
        device = u.device;
        dm.units.emplace_back(u.name, r.units[&u - p.units.data()].busy_seconds / span);
      }
    if (device >= 0) {
      const DeviceInstance& dev = s.devices[device];
      dm.catalog = dev.spec.name;
      dm.memory = p.memory[device];
      for (size_t k = 0; k < ds.resource_usage.size(); ++k) {
        std::string name;
        if (dev.spec.type == DeviceType::Gpu) name = k == 0 ? "sm" : "memory_bw";
        else if (k < dev.units.size()) name = "cores." + dev.units[k].name;
        else name = "memory_bw.node" + std::to_string(k - dev.units.size());
        dm.resources.emplace_back(name, ds.resource_usage[k] / span);
      }
    } else {
      for (const auto& u : p.units)
        if (u.domain == d) dm.catalog = s.links[u.link].spec.name;
      if (!ds.resource_usage.empty()) dm.resources.emplace_back("bandwidth", ds.resource_usage[0] / span);
    }
    rep.devices.push_back(dm);
  }
  return rep;
}

namespace {
using nlohmann::ordered_json;

ordered_json to_json(const LatencyStats& s) {
  return ordered_json{{"count", s.count}, {"mean_s", s.mean}, {"p50_s", s.p50},
                      {"p90_s", s.p90},   {"p99_s", s.p99},   {"max_s", s.max}};
}

// A temporary file name beside `path` (same folder: renamed onto it when complete).
std::string temporary_beside(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp-" + std::to_string(::getpid()))).string();
}

std::ofstream open_out(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  return out;
}
}  // namespace

std::string report_json_text(const Report& rep) {
  ordered_json j;
  j["vlasim_report"] = 1;
  j["scenario"] = rep.scenario;
  j["file"] = rep.file;
  j["mode"] = rep.mode;
  if (!rep.partial.empty()) j["partial"] = rep.partial;
  j["seed"] = rep.seed;
  j["horizon_s"] = rep.horizon_s;
  j["end_s"] = rep.end_s;
  j["requests"] = rep.requests;
  j["finished"] = rep.finished;
  if (rep.failed) j["failed"] = rep.failed;
  if (rep.dropped) j["dropped"] = rep.dropped;
  j["latency"] = to_json(rep.latency);
  j["throughput_hz"] = rep.throughput_hz;
  j["deadline_attainment"] = rep.deadline_attainment;
  j["models"] = ordered_json::array();
  for (const auto& m : rep.models) {
    ordered_json mj{{"name", m.name},
                    {"card", m.card},
                    {"requests", m.requests},
                    {"finished", m.finished},
                    {"flops_per_request", m.flops},
                    {"predicted_alone_s", m.predicted_alone_s},
                    {"latency", to_json(m.latency)},
                    {"throughput_hz", m.throughput_hz},
                    {"deadline_attainment", m.deadline_attainment}};
    ordered_json st = ordered_json::object();
    for (int k = 0; k < kStages; ++k)
      if (m.stage[k].count) st[to_string(static_cast<Stage>(k))] = to_json(m.stage[k]);
    mj["stages"] = st;
    j["models"].push_back(mj);
  }
  j["devices"] = ordered_json::array();
  for (const auto& d : rep.devices) {
    ordered_json dj{{"name", d.name}, {"catalog", d.catalog}, {"busy", d.busy}};
    ordered_json res = ordered_json::object();
    for (auto& [k, v] : d.resources) res[k] = v;
    dj["utilisation"] = res;
    ordered_json units = ordered_json::object();
    for (auto& [k, v] : d.units) units[k] = v;
    dj["units_busy"] = units;
    if (d.memory.capacity > 0)
      dj["memory_bytes"] = ordered_json{{"peak", d.memory.total()},
                                        {"weights", d.memory.weights},
                                        {"kv_cache", d.memory.kv_cache},
                                        {"activations", d.memory.activations},
                                        {"runtime", d.memory.runtime},
                                        {"reserved", d.memory.reserved},
                                        {"capacity", d.memory.capacity}};
    j["devices"].push_back(dj);
  }
  j["activations"] = rep.activations;
  if (rep.locksteps > 0) {
    j["locksteps"] = rep.locksteps;
    j["guard_kept_split"] = rep.guard_kept;
  }
  j["trace_truncated"] = rep.trace_truncated;
  return j.dump(2) + "\n";
}

void write_json(const Report& rep, const std::string& path) { write_output_file(path, report_json_text(rep)); }

namespace {
// The significant digits that write seconds value v to a picosecond (the simulator's finest
// tick): 9 at least (what requests.csv always had), 17 at most (every digit of a double, so a
// time near 1e7 s keeps its nanoseconds).
int seconds_digits(double v) {
  const double a = std::fabs(v);
  if (!(a > 0) || !std::isfinite(a)) return 9;
  return std::clamp(static_cast<int>(std::floor(std::log10(a))) + 13, 9, 17);
}
}  // namespace

RequestsCsv::RequestsCsv(const Scenario& s, const Plan& p, const std::string& path)
    : s_(s), p_(p), path_(path), tmp_(temporary_beside(path)), out_(open_out(tmp_)) {
  out_ << requests_csv_header();
}

void RequestsCsv::row(const RequestRecord& q) { out_ << requests_csv_row(s_, p_, q); }

std::string requests_csv_header() {
  std::ostringstream out;
  out << "request,model,stream,cut,arrival_s,start_s,end_s,latency_s,deadline_s,met";
  for (int k = 0; k < kStages; ++k) out << ',' << to_string(static_cast<Stage>(k)) << "_s";
  out << '\n';
  return out.str();
}

std::string requests_csv_row(const Scenario& s, const Plan& p, const RequestRecord& q) {
  std::ostringstream out;
  char buf[64];
  auto num = [&](double v) {
    std::snprintf(buf, sizeof buf, "%.*g", seconds_digits(v), v);
    return std::string(buf);
  };
  int cut = p.models[q.plan].cut;
  out << q.id << ',' << csv_field(s.models[q.model].name) << ',' << csv_field(s.streams[q.stream].name) << ','
       << (cut >= 0 ? std::to_string(cut) : "") << ','
       << num(q.arrival) << ',' << (q.start >= 0 ? num(q.start) : "") << ','
       << (q.finished() ? num(q.end) : "") << ',' << (q.finished() ? num(q.latency()) : "") << ','
       << (q.deadline > 0 ? num(q.deadline) : "") << ',' << (q.met() ? 1 : 0);
  for (int k = 0; k < kStages; ++k)
    out << ',' << (q.stage_done(k) ? num(q.stage_latency[k]) : "");
  out << '\n';
  return out.str();
}

void RequestsCsv::close() {
  out_.flush();
  out_.close();
  std::error_code ec;
  if (!out_) {
    std::filesystem::remove(tmp_, ec);
    throw std::runtime_error("cannot write " + path_ + ": a write failed (is the disk full?)");
  }
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    throw std::runtime_error("cannot write " + path_ + ": " + ec.message());
  }
  closed_ = true;
}

RequestsCsv::~RequestsCsv() {
  if (closed_) return;
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);  // never closed (an error on the way): no half-written file
}

std::string requests_csv_text(const Scenario& s, const Plan& p, const SimResult& r) {
  std::string text = requests_csv_header();
  for (const auto& q : r.requests) text += requests_csv_row(s, p, q);
  return text;
}

void write_requests_csv(const Scenario& s, const Plan& p, const SimResult& r, const std::string& path) {
  RequestsCsv csv(s, p, path);
  for (const auto& q : r.requests) csv.row(q);
  csv.close();
}

void write_trace(const Scenario& s, const Plan& p, const SimResult& r, const std::string& path) {
  // Chrome trace event format: one process per device or link, one thread per unit.
  ordered_json events = ordered_json::array();
  for (int d = 0; d < p.domains; ++d)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", d},
                      {"args", {{"name", p.domain_names[d]}}}});
  for (size_t u = 0; u < p.units.size(); ++u)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", p.units[u].domain},
                      {"tid", u}, {"args", {{"name", p.units[u].name}}}});
  for (const auto& e : r.trace) {
    const Segment& seg = p.models[e.plan].segments[e.segment];
    events.push_back({{"name", s.models[e.model].name + " " + seg.label},
                      {"cat", seg.transfer ? "transfer" : "compute"},
                      {"ph", "X"},
                      {"pid", p.units[e.unit].domain},
                      {"tid", e.unit},
                      {"ts", e.start * 1e6},
                      {"dur", (e.end - e.start) * 1e6},
                      {"args", {{"request", e.request}, {"stream", s.streams[e.stream].name},
                                {"cut", p.models[e.plan].cut}}}});
    if (e.batch > 1)  // a batch: its size and the requests in it (the lead's above)
      events.back()["args"].update({{"batch", e.batch}, {"items", e.items}});
  }
  ordered_json j{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  write_output_file(path, j.dump() + "\n");
}

std::string summary_text(const Report& rep) {
  std::ostringstream os;
  char buf[256];
  auto ms = [](double s) { return s * 1e3; };
  std::snprintf(buf, sizeof buf, "scenario %s (%s, seed %llu): %zu requests, %zu finished, %.2f s of arrivals\n",
                rep.scenario.c_str(), rep.mode.c_str(), static_cast<unsigned long long>(rep.seed),
                rep.requests, rep.finished, rep.horizon_s);
  os << buf;
  if (rep.failed)
    os << "FAILED: " << rep.failed << " requests ended in an executor error (not finished)\n";
  if (rep.dropped)
    os << "DROPPED: " << rep.dropped << " requests dropped at a full queue (queue_limit; not finished)\n";
  if (!rep.partial.empty())
    os << "PARTIAL: " << rep.partial << "; the figures cover what ran until then\n";
  for (const auto& m : rep.models) {
    std::snprintf(buf, sizeof buf,
                  "\nmodel %s (card %s, %.1f GFLOP/request, %.2f ms alone)\n"
                  "  latency ms: mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n"
                  "  throughput %.2f req/s   deadline attainment ",
                  m.name.c_str(), m.card.c_str(), m.flops / 1e9, ms(m.predicted_alone_s),
                  ms(m.latency.mean), ms(m.latency.p50), ms(m.latency.p90), ms(m.latency.p99),
                  ms(m.latency.max), m.throughput_hz);
    os << buf;
    if (m.requests && !m.with_deadline) {
      os << "n/a (no request has a deadline: deadline_ms 0 or absent)\n";
    } else {
      std::snprintf(buf, sizeof buf, "%.1f%%\n", 100 * m.deadline_attainment);
      os << buf;
    }
    for (int k = 0; k < kStages; ++k)
      if (m.stage[k].count) {
        std::snprintf(buf, sizeof buf, "  stage %-7s mean %.2f ms  p99 %.2f ms\n",
                      to_string(static_cast<Stage>(k)), ms(m.stage[k].mean), ms(m.stage[k].p99));
        os << buf;
      }
  }
  os << "\ndevices:\n";
  for (const auto& d : rep.devices) {
    std::snprintf(buf, sizeof buf, "  %-14s %-22s busy %5.1f%%", d.name.c_str(), d.catalog.c_str(),
                  100 * d.busy);
    os << buf;
    for (auto& [k, v] : d.resources) {
      std::snprintf(buf, sizeof buf, "  %s %.1f%%", k.c_str(), 100 * v);
      os << buf;
    }
    if (d.memory.capacity > 0 && d.memory.total() > 0) {
      std::snprintf(buf, sizeof buf, "  memory %.2f / %.1f GB", d.memory.total() / 1e9,
                    d.memory.capacity / 1e9);
      os << buf;
    }
    os << '\n';
  }
  if (rep.locksteps > 0)
    os << "\nlocksteps " << rep.locksteps << " (the guard kept the previous SM split in " << rep.guard_kept << ")\n";
  if (rep.trace_truncated) os << "\n(trace holds only the first executions; raise --trace-limit for more)\n";
  return os.str();
}

}  // namespace vlasim
