// Validation of the GPU cost model against published figures that cannot fool itself
// (`vlasim validate-papers`): every published figure of SYSTEMS.md is a row of a table
// (scenarios/papers/figures.yaml) naming its paper, its source and how the simulator
// computes it (a scenario, keys set in it, a metric, optionally divided by another). The
// shape-aware model's global parameters are fitted by grid search on the table's fit set,
// and each paper's figures are predicted with the parameters fitted on the other papers'
// fit figures only (leave one paper out).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/config/config.h"

namespace vlasim {

// How the simulator computes one number.
struct FigureEval {
  std::string scenario;  // path (relative paths: from the table's folder)
  std::vector<std::pair<std::string, YAML::Node>> set;  // dotted key -> YAML value
  // per_frame_ms (1000 / throughput), alone_ms (the first model alone, ms), busy_ms (device
  // `arg` busy time per finished request, ms), capacity (the knee of a sweep of `sweep`,
  // KEY=SPEC, at attainment `slo`).
  std::string metric;
  std::string arg, sweep;
  double slo = 0;
  ConfigNode where;
};

struct PaperFigure {
  std::string id, paper, what, source, unit;
  double published = 0;
  bool evaluated = false;   // false: `not_evaluated` says why
  std::string not_evaluated;
  FigureEval num;
  bool has_den = false;     // the figure is num / den
  FigureEval den;
  bool fit = false;         // in the fit set
  ConfigNode where;
};

struct FigureTable {
  std::string file;
  std::vector<PaperFigure> figures;
  std::vector<double> host_op_us, eff_scale;  // the fit's grid
  // Where the fit goes when its figures cannot tell grid points apart (fit: prior:).
  double prior_host_op_us = 6, prior_eff_scale = 1;
  // The cost model fitted: "shaped" (the default) or "kernel" (both take host_op_us and
  // eff_scale; kernel's GEMMs, norms and elementwise ops come from its measured-kernel fit).
  std::string model = "shaped";
  // The software stack every figure's GPUs are priced under (sim/costs/stack_model.h: eager,
  // graph, compiled; the table's top-level `stack:`, or --stack), set on each scenario
  // (policies.stack) with the fitted model, not the roofline column. A stack prices host time
  // itself around kernel times (OpCost::kernel_only), so the model's host_op_us does not count
  // and the fit's grid keeps only prior host_op_us. "none" (the default): no stack, as before.
  std::string stack = "none";
};

// Reads a figure table. Throws ConfigError (file, line, key) on an unknown key, a missing
// scenario, an unknown metric, a figure in the fit set without an evaluation, an empty grid.
FigureTable load_figure_table(const std::string& path);

struct FigureRow {
  const PaperFigure* fig = nullptr;
  double roofline = 0;    // the scenario's own cost model
  double in_sample = 0;   // shaped, fitted on the whole fit set
  double out_sample = 0;  // shaped, fitted on the fit set less this figure's paper
  std::string fold;       // the parameters of out_sample, as text
  // Under a stack: why the fitted model gives this figure no number (a capacity sweep with no
  // load meeting its SLO); the row is then left out of the summaries. Empty otherwise.
  std::string failed;
};

struct Validation {
  std::vector<FigureRow> rows;
  double host_op_us = 0, eff_scale = 0;  // fitted on the whole fit set
  // Summaries over evaluated rows: |predicted / published - 1|.
  double out_median = 0, out_worst = 0, in_median = 0, in_worst = 0, roofline_median = 0;
  size_t evaluated = 0;
  size_t failed = 0;  // rows with `failed` set (under a stack only)
};

// Evaluates the table (catalog and cards from these folders), calling progress with the
// fraction done. Throws ConfigError when a figure's scenario is refused or a capacity sweep
// has no load meeting its SLO; under a stack (t.stack not "none") a figure the fitted model
// cannot evaluate is a row with `failed` set instead.
Validation validate_papers(const FigureTable& t, const std::string& catalog_dir,
                           const std::string& cards_dir, const std::function<void(double)>& progress);

std::string validation_markdown(const FigureTable& t, const Validation& v);
std::string validation_csv(const Validation& v);

}  // namespace vlasim
