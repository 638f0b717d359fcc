// The cumulative speed-up table of graph passes (issue 13; SYSTEMS.md system 4's step-by-step
// table for pi0 on an RTX 4090): one model of a scenario, alone, one row per step:
//   naive          no pass, every kernel launched on its own;
//   graph capture  (when the scenario has a GPU) the whole inference replayed from a CUDA Graph;
//   +<pass>        each graph pass added in registry order (models/passes/passes.h).
// Each row gives the graph's kernels, GEMM-like ops, FLOPs, bytes moved and parameters, and the
// model's predicted time alone (the scenario's cost model, placement and devices). With a
// `measure` function (the command line's runs the graph on this CPU's oneDNN executor), each
// row's graph is also timed and the measured time reported beside the prediction.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace vlasim {

struct PassRow {
  std::string step;                 // "naive", "graph capture" or "+<pass>"
  std::vector<std::string> passes;  // applied in this row
  bool graph_capture = false;
  size_t ops = 0, gemm_ops = 0;     // kernels, and the GEMMs and attentions among them
  double flops = 0, bytes = 0, params = 0;
  double predicted_s = 0;           // the model alone, as planned (sum of its segments)
  double measured_s = -1;           // median of the timed runs; < 0: not measured
  double measured_iqr_s = 0;        // their interquartile range
};

struct PassTableOptions {
  std::vector<std::string> passes;  // the passes to add, in registry order; empty: every pass
  bool none = false;                // no pass row at all (naive and graph capture only)
  // When set: prepares a row's graph to run for real and returns a function that runs one
  // inference and returns its seconds. Rows are timed in turn, `reps` rounds (after one
  // warm-up round), so that a slow spell of a shared machine hits every row alike; each
  // row reports its median.
  std::function<std::function<double()>(const OpGraph&)> prepare;
  int reps = 5;
  std::string executor;             // what `prepare` runs on, for the report
};

struct PassTable {
  std::string scenario, model, card, devices;
  RunShape shape;
  std::string executor;              // what measured (empty when nothing did)
  int reps = 0;                      // timed runs per row
  std::vector<PassRow> rows;
  std::vector<std::string> skipped;  // "<pass>: why" for passes that do not apply
};

// The table for model `m` of `s` (a `dtype: auto` must be resolved). A pass of o.passes that
// does not apply where it is added is skipped and listed (an unknown name is a ConfigError
// naming --passes). `progress` gets the fraction of rows done.
PassTable make_pass_table(const Scenario& s, int m, const PassTableOptions& o,
                          const std::function<void(double)>& progress = {});

// The table as Markdown (with the speed-up over the naive row and, when measured, the
// predicted/measured error per row) and as CSV (one row per step, SI units).
std::string pass_table_markdown(const PassTable& t);
std::string pass_table_csv(const PassTable& t);

}  // namespace vlasim
