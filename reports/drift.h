// What a comparison's errors rest on besides the model: the machine's own speed change (the
// drift sentinel, sim/measured/profile.h SentinelRecord) and, near saturation, how much the queueing
// delay amplifies a small service-time error (re-simulation with every service time scaled).
// Written beside compare.md as a section of its own and drift.json.
#pragma once

#include <string>
#include <vector>

#include "reports/compare.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/measured/profile.h"

namespace vlasim {

// The plan with every segment's time (alone time, host overhead, stage shares; batched and
// SM-split variants and transfers too) multiplied by `factor` (> 0): a uniformly slower or
// faster service.
Plan scale_service(const Plan& p, double factor);

// Sensitivity of the predicted latency to the service time: the scenario re-simulated with
// every service time x (1 - step) and x (1 + step) (same seed, so the same arrivals and
// draws). Elasticities are (p(+step) - p(-step)) / p(base) / (2 step): 1 means latency moves
// as service time does (no queueing); well above 1, a service-time error (calibration noise,
// the machine's drift) of e moves the latency by about elasticity x e, which no cost model
// avoids at that load.
struct ServiceSensitivity {
  double step = 0.02;
  double p50_base = 0, p50_minus = 0, p50_plus = 0;
  double p99_base = 0, p99_minus = 0, p99_plus = 0;
  double mean_base = 0, mean_minus = 0, mean_plus = 0;
  double mean_elasticity = 0, p50_elasticity = 0, p99_elasticity = 0;
  double utilisation = 0;  // busiest unit's busy time over the base run's end time
};
// REQUIRES: 0 < step < 0.5; `base` is simulate(s, p, o). Requests not finished are left out.
// Throws std::invalid_argument for a step outside (0, 0.5).
ServiceSensitivity service_sensitivity(const Scenario& s, const Plan& p, const SimOptions& o, const SimResult& base,
                                       double step = 0.02);

// The engine's slowdown of a CPU segment while every other core of its node runs a job
// (sim/engine/engine.h corun_slowdown: the measured co-run slowdown of that segment when the host
// entry has one, else 1 + memory_frac (core_bw / core_bw_loaded - 1), or 1 where the device
// gives no loaded bandwidth, where only max-min sharing of the node's bandwidth slows it). One
// row per (unit, segment name) of the plans' unbatched segments on CPU units, in plan order.
struct CorunRow {
  int unit = 0;              // index into Plan::units (the trace's tid)
  std::string unit_name;     // "cpu0.a"
  std::string segment;       // "<model> <label>", as the trace names it
  double alone_s = 0;        // predicted alone time
  double memory_frac = 0;    // share of its time that is memory traffic
  double slowdown = 1;       // with every other core of the node busy
  bool measured = false;     // the host entry's measured co-run slowdown (else the bandwidth model)
};
std::vector<CorunRow> corun_slowdowns(const Scenario& s, const Plan& p);

struct DriftInputs {
  SentinelRecord measurement;   // over the measured run
  SentinelRecord calibration;   // over the calibration that made the profile (may be empty)
};

// The machine's speed change from calibration to measurement: the sentinel's idle time
// (SentinelRecord::idle_s: before and after, not during) at the measurement over the
// calibration's, - 1 (> 0: slower now); 0 when either is empty.
double speed_change(const DriftInputs& d);

// Whether the run is marked: |drift during the measurement| or |speed change since
// calibration| beyond kDriftTarget, or the measurement's CPUs disturbed (other processes or
// steal beyond kLoadTarget, SentinelRecord::disturbed).
bool drift_marked(const DriftInputs& d);

// Markdown section: the sentinel's figures, the mark, and per end-to-end figure (mean, p50,
// p99) its error beside the speed change and the error the sensitivity says that speed
// change alone would cause (elasticity x speed change).
std::string drift_markdown(const Comparison& c, const DriftInputs& d, const ServiceSensitivity& sens);

// Markdown table of corun_slowdowns (empty text when there are none).
std::string corun_markdown(const std::vector<CorunRow>& rows);

// The same as JSON text, drift.json's (fixed key order; NaN as null); `corun` goes in as the
// key "corun".
std::string drift_json_text(const Comparison& c, const DriftInputs& d, const ServiceSensitivity& sens,
                            const std::vector<CorunRow>& corun);
// Writes drift_json_text into `path`. Throws std::runtime_error naming the path when it cannot write.
void write_drift_json(const Comparison& c, const DriftInputs& d, const ServiceSensitivity& sens,
                      const std::vector<CorunRow>& corun, const std::string& path);

}  // namespace vlasim
