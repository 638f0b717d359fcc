// Reports: metrics computed from a run (simulated or measured) and the files other tools
// read: JSON (every metric), CSV (one row per request), a Chrome/Perfetto trace (one track
// per device stream, core group and link), and a readable summary.
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "sim/plan.h"

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
  double deadline_attainment = 1;  // fraction of requests finished by their deadline
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
  std::string scenario, file, mode;  // mode: "simulate" or "execute"
  uint64_t seed = 0;
  double horizon_s = 0, end_s = 0;
  size_t requests = 0, finished = 0;
  LatencyStats latency;
  double throughput_hz = 0, deadline_attainment = 1;
  std::vector<ModelMetrics> models;
  std::vector<DeviceMetrics> devices;   // links included (type link)
  uint64_t activations = 0;
  bool trace_truncated = false;
  std::string partial;  // non-empty: the run stopped early, and why (SimResult::stopped)
};

Report make_report(const Scenario& s, const Plan& p, const SimResult& r, const std::string& mode);

// Each writer throws std::runtime_error naming the path if it cannot write.
void write_json(const Report& rep, const std::string& path);
void write_requests_csv(const Scenario& s, const Plan& p, const SimResult& r, const std::string& path);
void write_trace(const Scenario& s, const Plan& p, const SimResult& r, const std::string& path);
std::string summary_text(const Report& rep);

}  // namespace vlasim
