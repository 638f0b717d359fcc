// Parameter sweeps: one scenario simulated at each value of one of its keys (a partition
// point, a rate, a background load, ...), summarised as a table and a plot, with the best
// value for a goal picked by the scheduler's planner (scheduler/partition.h best_split).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "reports/report.h"
#include "sim/engine/engine.h"
#include "scheduler/partition.h"

namespace vlasim {

// Values a key takes: "a:b" (integers a..b), "a:b:step" (numbers), or "v1,v2,...".
struct SweepAxis {
  std::string key;                  // dotted path into the scenario, e.g. workload.0.rate_hz,
                                    // or several joined by '+', set to the same value
  std::vector<std::string> values;
};
// The node at a dotted path inside a scenario's YAML `root` (numbers index sequences).
// Throws ConfigError (`file`) naming the first component that does not exist.
YAML::Node scenario_key(YAML::Node root, const std::string& key, const std::string& file);

// The keys one sweep key sets together: "KEY1+KEY2" (e.g. two workloads' robot counts
// scaled as one load) gives both. Throws ConfigError (file "<command line>") on an empty one.
std::vector<std::string> linked_keys(const std::string& key);
// Sets every key linked in `key` inside `root` to `value`. Throws ConfigError (`file`, the
// key) when one is missing or is not a single value.
void set_scenario_key(YAML::Node root, const std::string& key, const std::string& value, const std::string& file);

// Parses "KEY=SPEC" (KEY may link keys: KEY1+KEY2). Throws ConfigError (file "<command
// line>") when malformed.
SweepAxis parse_sweep_axis(const std::string& text);

struct SweepRow {
  std::string value;
  bool ok = false;        // false: the scenario was refused at this value (error says why)
  std::string error;
  Report report;
  SplitOutcome outcome;   // what the planner weighs
  std::string scenario;       // the scenario's name as loaded at this value ("" if it did not load)
  std::string memory_device;  // the device whose peak memory was weighed ("" if not reached)
};

struct SweepResult {
  std::string scenario, key, memory_device;
  std::vector<SweepRow> rows;
  int best = -1;          // index of the best row for the goal, -1 if none qualifies
  std::string goal;       // "throughput", "latency", "memory" or "capacity"
  double capacity_slo = 0;  // goal capacity: the attainment asked for
  // Goal capacity: index of the first row past the knee (a model's attainment below the SLO,
  // or refused), -1 when every value meets it.
  int first_miss = -1;
  // Goal capacity: the model that limits it, the one with the lowest deadline attainment at
  // the first miss, and that attainment ("" and 1 when there is no first miss or it was refused).
  std::string limiting_model;
  double limiting_attainment = 1;
};

// The model of `r` with the lowest deadline attainment among those whose requests had a
// deadline (ModelMetrics::with_deadline > 0), and that attainment; the first such model wins
// a tie. {"", 1} when no model had a deadline.
std::pair<std::string, double> lowest_model_attainment(const Report& r);
// Whether a capacity sweep's row holds the SLO: it ran, served requests, and every model whose
// requests had a deadline met at least `slo` of them (not only the requests together: one
// model at 53% beside others at 99% misses).
bool row_meets_slo(const SweepRow& row, double slo);

// Everything a sweep depends on; the same spec gives the same rows in any process.
struct SweepSpec {
  std::string path, catalog_dir, cards_dir;
  SweepAxis axis;
  SplitGoal goal = SplitGoal::Throughput;
  // > 0: the goal is capacity instead: the largest value (the axis is a load: a rate, a
  // count of robots) up to which, at every value, every model's deadline attainment is at
  // least this (row_meets_slo). The values must then be numbers in increasing order.
  double capacity_slo = 0;
  double memory_cap_bytes = 0;  // for SplitGoal::Memory (0: no cap)
  std::string memory_device;    // device whose peak memory the planner weighs ("": the first)
  DType auto_cpu_dtype = DType::F32;  // what `dtype: auto` models on a CPU device run at
  std::string profile;          // non-empty: use the profiled cost model
  SimOptions sim_options;       // its max_requests bounds the whole sweep
  // Other keys set before the axis's at every value (a grid's configuration): key, value.
  std::vector<std::pair<std::string, std::string>> fixed;
  // Applied to the scenario as loaded at every value (e.g. another cost model), when set.
  std::function<void(Scenario&)> adjust;
  // Makes the router of a scenario with `controller:` (a LiveController, which this library
  // does not link); such a scenario is refused at its controller without one.
  std::function<std::unique_ptr<Router>(const Scenario&)> make_router;
};

// The parts of run_sweep, so that its rows can be computed in several processes (vlasim
// sweep under mpirun) and put together in one; run_sweep is check, every row, finish.
//
// Throws ConfigError naming --set when the whole sweep, bounded before any value runs by the
// number of values times the larger of its end points' requests, passes
// spec.sim_options.max_requests.
void check_sweep_work(const SweepSpec& spec);
// The scenario simulated at spec.axis.values[i]. A refusal that depends on the value (a
// placement that does not fit, a split beyond the model) gives a row with ok false and its
// error. Throws what stops the whole sweep: a ConfigError of the command line (an unknown
// --memory-device), the key missing from the file or not a single value, and any other error.
SweepRow sweep_row(const SweepSpec& spec, size_t i);
// The result of the rows of every value, in value order: the scenario's name, the device
// weighed and the best row for the goal (for capacity: the knee, the last value up to which
// every value meets the SLO). Throws ConfigError naming the key when every value
// was refused.
SweepResult finish_sweep(const SweepSpec& spec, std::vector<SweepRow> rows);

// Simulates the scenario at each value (check_sweep_work, sweep_row for each, finish_sweep),
// calling `progress` with the fraction of values done after each.
SweepResult run_sweep(const SweepSpec& spec, const std::function<void(double)>& progress);

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

// Rows as text, to move them between processes: every field of SweepRow except the report's
// per-device metrics and, of its per-model metrics, all but name, card, requests,
// with_deadline and deadline_attainment (what capacity and sweep.csv read). Numbers are
// written as hex floats, so decoding gives back the same bits and the same files.
std::string encode_sweep_rows(const std::vector<SweepRow>& rows);
// The rows encode_sweep_rows wrote. Throws std::runtime_error naming the byte offset when
// `text` is not such a text (truncated, or another format).
std::vector<SweepRow> decode_sweep_rows(const std::string& text);

// A grid: the sweep of one axis (the load) at each combination of the values of other keys
// (the configurations), e.g. robots per GPU at each pair of batch sizes.
struct GridResult {
  std::vector<std::string> keys;                 // the configuration keys, in --set order
  std::vector<std::vector<std::string>> configs;  // per configuration: a value per key
  std::vector<SweepResult> sweeps;                // per configuration
  // Per configuration: why it was refused at every value ("" when it ran); its sweep then
  // has no rows.
  std::vector<std::string> refused;
};
// Every combination of the axes' values, the first axis varying slowest.
std::vector<std::vector<std::string>> grid_configs(const std::vector<SweepAxis>& axes);
// The folder name of a configuration: key=value pairs joined by '_' (path separators and
// other characters a file name should not hold replaced by '-').
std::string grid_label(const std::vector<std::string>& keys, const std::vector<std::string>& values);
// Markdown table, one row per configuration: its values and its sweep's best value (for
// capacity: the knee, the first value past it and the model that limits it).
std::string grid_table(const GridResult& g);
// grid.md, grid.csv and (with gnuplot) grid.svg (the goal's figure per value, one curve per
// configuration: deadline attainment with the SLO line for capacity) in `dir`; returns the
// paths.
std::vector<std::string> write_grid(const GridResult& g, const std::string& dir);

// sweep.csv, sweep.md and (when gnuplot is installed) sweep.svg in `dir`; returns the paths.
// sweep.csv's columns: value, ok, mean/p50/p99 latency, throughput, deadline attainment, peak
// memory, best, error, then lowest_model and lowest_model_attainment (the model with the
// lowest attainment in that row) and one attainment:MODEL column per model seen in any row
// (empty where the model had no request with a deadline).
std::vector<std::string> write_sweep(const SweepResult& r, const std::string& dir);
std::string sweep_table(const SweepResult& r);  // Markdown table with the best row marked

}  // namespace vlasim
