// Parameter sweeps: one scenario simulated at each value of one of its keys (a partition
// point, a rate, a background load, ...), summarised as a table and a plot, with the best
// value for a goal picked by the scheduler's planner (scheduler/partition.h best_split).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "reports/report.h"
#include "sim/engine.h"
#include "scheduler/partition.h"

namespace vlasim {

// Values a key takes: "a:b" (integers a..b), "a:b:step" (numbers), or "v1,v2,...".
struct SweepAxis {
  std::string key;                  // dotted path into the scenario, e.g. workload.0.rate_hz
  std::vector<std::string> values;
};
// Parses "KEY=SPEC". Throws ConfigError (file "<command line>") when malformed.
SweepAxis parse_sweep_axis(const std::string& text);

struct SweepRow {
  std::string value;
  bool ok = false;        // false: the scenario was refused at this value (error says why)
  std::string error;
  Report report;
  SplitOutcome outcome;   // what the planner weighs
};

struct SweepResult {
  std::string scenario, key, memory_device;
  std::vector<SweepRow> rows;
  int best = -1;          // index of the best row for the goal, -1 if none qualifies
  std::string goal;
};

// Simulates the scenario at each value. `memory_device` names the device whose peak memory
// the planner weighs (default: the first device). Throws ConfigError if the key does not
// exist in the file or the file is bad at every value's common parts. Models with
// `dtype: auto` on a CPU device run at `auto_cpu_dtype` (resolve_auto_dtypes).
SweepResult run_sweep(const std::string& path, const std::string& catalog_dir,
                      const std::string& cards_dir, const SweepAxis& axis, SplitGoal goal,
                      double memory_cap_bytes, const std::string& memory_device,
                      const std::function<void(double)>& progress, DType auto_cpu_dtype,
                      const std::string& profile = "",  // non-empty: use the profiled cost model
                      const SimOptions& sim_options = {});

// sweep.csv, sweep.md and (when gnuplot is installed) sweep.svg in `dir`; returns the paths.
std::vector<std::string> write_sweep(const SweepResult& r, const std::string& dir);
std::string sweep_table(const SweepResult& r);  // Markdown table with the best row marked

}  // namespace vlasim
