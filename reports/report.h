// Reports: metrics computed from a run (simulated or measured) and the files other tools
// read: JSON (every metric), CSV (one row per request), a Chrome/Perfetto trace (one track
// per device stream, core group and link), and a readable summary.
#pragma once

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"

namespace vlasim {

struct LatencyStats {
  size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
// Nearest-rank percentiles of `v` (seconds). Empty input gives all zeros.
LatencyStats latency_stats(std::vector<double> v);

struct ModelMetrics {
  std::string name, card;
  size_t requests = 0, finished = 0;
  LatencyStats latency;
  LatencyStats stage[kStages];
  double throughput_hz = 0;        // finished requests per second, first arrival to last finish
  // Fraction of requests finished by their deadline; a request without one (deadline_ms 0 or
  // absent) counts as met, so a model none of whose requests has a deadline shows 1.
  double deadline_attainment = 1;
  size_t with_deadline = 0;        // requests that had a deadline
  double predicted_alone_s = 0;    // one request alone, no contention
  double flops = 0;                // per request
};

struct DeviceMetrics {
  std::string name, catalog;
  double busy = 0;                 // fraction of time any of its units ran
  std::vector<std::pair<std::string, double>> resources;  // resource name -> mean utilisation
  std::vector<std::pair<std::string, double>> units;      // unit name -> busy fraction
  DeviceMemory memory;
};

struct Report {
  std::string scenario, mode;  // mode: "simulate" or "execute"
  std::string file;            // the scenario file, absolute and normalised; "" when read from text
  uint64_t seed = 0;
  double horizon_s = 0, end_s = 0;
  size_t requests = 0, finished = 0;
  size_t failed = 0;  // a real run's requests whose executor failed (RequestRecord::failed)
  size_t dropped = 0;  // requests dropped at a full queue (Scenario::queue_limit)
  LatencyStats latency;
  double throughput_hz = 0, deadline_attainment = 1;
  std::vector<ModelMetrics> models;
  std::vector<DeviceMetrics> devices;   // links included (type link)
  uint64_t activations = 0;
  uint64_t locksteps = 0, guard_kept = 0;  // SimResult's: locksteps run, splits the guard kept
  bool trace_truncated = false;
  std::string partial;  // non-empty: the run stopped early, and why (SimResult::stopped)
};

// Latencies of one series (seconds): kept whole, for exact nearest-rank percentiles, or, when
// streaming, in a log-binned histogram (Boost.Histogram) of fixed size whose percentiles are
// within kStreamingQuantileError (relative) of the exact ones; count, mean and max stay exact.
class LatencySeries {
 public:
  explicit LatencySeries(bool streaming);
  ~LatencySeries();
  LatencySeries(LatencySeries&&) noexcept;
  LatencySeries& operator=(LatencySeries&&) noexcept;
  void add(double seconds);
  LatencyStats stats() const;

 private:
  struct Histogram;
  std::vector<double> values_;
  std::unique_ptr<Histogram> hist_;  // null when exact
  size_t count_ = 0;
  double sum_ = 0, min_ = INFINITY, max_ = 0;
};
inline constexpr double kStreamingQuantileError = 1e-3;

// Builds a Report from records handed over one at a time (in any order), so a run can report
// without keeping its records (SimOptions::on_record).
class ReportBuilder {
 public:
  ReportBuilder(const Scenario& s, bool streaming);
  void add(const RequestRecord& q);
  // The report of the records added; r gives the run's times, units and domains.
  Report finish(const Plan& p, const SimResult& r, const std::string& mode) const;

 private:
  const Scenario& s_;
  LatencySeries all_;
  std::vector<LatencySeries> model_;
  std::vector<std::vector<LatencySeries>> stage_;  // [model][stage]
  std::vector<size_t> count_, met_, with_deadline_;
  size_t requests_ = 0, total_met_ = 0, failed_ = 0, dropped_ = 0;
  double first_arrival_ = INFINITY, last_end_ = 0;
};

// The report of a run that kept its records (r.requests).
Report make_report(const Scenario& s, const Plan& p, const SimResult& r, const std::string& mode);

// requests.csv written a row at a time (the rows write_requests_csv writes).
class RequestsCsv {
 public:
  // Throws std::runtime_error naming the path if it cannot be opened.
  RequestsCsv(const Scenario& s, const Plan& p, const std::string& path);
  void row(const RequestRecord& q);
  // Writes the rows to a temporary file beside `path`; close() renames it onto `path`.
  // Throws std::runtime_error naming the path if any write or the close failed (no file is
  // then left at `path` nor the temporary).
  void close();
  // Removes the temporary when close() was never reached.
  ~RequestsCsv();
  RequestsCsv(const RequestsCsv&) = delete;
  RequestsCsv& operator=(const RequestsCsv&) = delete;

 private:
  const Scenario& s_;
  const Plan& p_;
  std::string path_, tmp_;
  std::ofstream out_;
  bool closed_ = false;
};

// report.json's text: what write_json writes.
std::string report_json_text(const Report& rep);
// requests.csv's header line, and the row of one request (each ends in a newline): what
// RequestsCsv and write_requests_csv write.
std::string requests_csv_header();
std::string requests_csv_row(const Scenario& s, const Plan& p, const RequestRecord& q);
// requests.csv's text for the records of `r`: what write_requests_csv writes.
std::string requests_csv_text(const Scenario& s, const Plan& p, const SimResult& r);

// Each writer throws std::runtime_error naming the path if it cannot write.
void write_json(const Report& rep, const std::string& path);
void write_requests_csv(const Scenario& s, const Plan& p, const SimResult& r, const std::string& path);
void write_trace(const Scenario& s, const Plan& p, const SimResult& r, const std::string& path);
std::string summary_text(const Report& rep);

}  // namespace vlasim
