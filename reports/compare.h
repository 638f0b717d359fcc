// Predicted versus measured: the comparison behind `vlasim compare`. A scenario is run twice,
// simulated (the prediction) and on real executors in wall-clock time (the measurement);
// both give a SimResult. Together with per-operator times from the cost model and the
// executor, this library reports how far the prediction is off, per operator, per stage
// and end to end, tests whether the latency distributions agree, and writes JSON, Markdown
// and gnuplot SVGs. Relative errors are signed fractions, (predicted - measured) / measured:
// +0.1 means the prediction is 10% high.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "reports/stats.h"
#include "scenarios/scenario.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"

namespace vlasim {

// One operator's time alone: the cost model's prediction and the executor's median.
struct OpTime {
  std::string model, op, kind, stage;
  double predicted_s = 0, measured_s = 0;
};

// Every op of each scenario model's own plan (not dynamic-zone variants), predicted as the
// op's timer would see it (OpCost::seconds less the runtime's dispatch share, which no op
// timer includes) beside `measured[model][op id]` (ExecResult::op_seconds).
std::vector<OpTime> op_times(const Scenario& s, const Plan& p, const std::vector<std::vector<double>>& measured);

// A predicted and a measured figure and the signed relative error. A figure that one run
// cannot give (no finished request) is NaN, and so is the error then or when measured is 0.
struct Figure {
  double predicted = std::numeric_limits<double>::quiet_NaN();
  double measured = std::numeric_limits<double>::quiet_NaN();
  double error = std::numeric_limits<double>::quiet_NaN();
};

struct OpError {
  OpTime op;
  double error = 0;  // signed relative error of predicted_s
};

// Operators of one kind taken together.
struct KindError {
  std::string kind;
  size_t ops = 0;
  double predicted_s = 0, measured_s = 0;  // sums over its operators
  double mape = 0;                         // mean |error| over its operators
  double weighted_error = 0;               // sum |predicted - measured| / sum measured
  double bias = 0;                         // (sum predicted - sum measured) / sum measured
};

// Mean latency of one stage over the finished requests that ran it.
struct StageComparison {
  std::string stage;
  size_t predicted_count = 0, measured_count = 0;
  Figure mean_s;
};

// End-to-end figures of one model, or of all models together. Latency figures are over
// finished requests; unfinished requests are counted here and count as missed deadlines.
struct EndToEnd {
  size_t predicted_requests = 0, measured_requests = 0;
  size_t predicted_finished = 0, measured_finished = 0;
  size_t predicted_unfinished = 0, measured_unfinished = 0;
  Figure mean_s, p50_s, p90_s, p99_s;  // nearest-rank percentiles, as latency_stats
  // Whether p90/p99 rest on data that can give a tail. A prediction has none when the plan
  // carries no run-to-run variation for the model's segments (not calibrated in context
  // with enough runs) and its latencies have no spread either: its predicted p90/p99 are
  // then NaN ("n/a") rather than the one value every request got. A measured p99 of fewer
  // than 100 requests is only the slowest one. tail_notes says each of these in words.
  bool predicted_tail = true, measured_tail = true;
  std::vector<std::string> tail_notes;
  Figure throughput_hz;                // finished requests per second of the run's horizon
  double predicted_deadline_attainment = 1, measured_deadline_attainment = 1;  // fractions
  double deadline_difference_pp = 0;                                           // 100 * (predicted - measured)
};

struct ModelComparison {
  std::string name;
  double predicted_alone_s = 0;  // the plan's one-request time without contention
  EndToEnd e2e;
  std::vector<StageComparison> stages;                                       // in Stage order; stages either run ran
  double median_abs_stage_error = std::numeric_limits<double>::quiet_NaN();  // over stages both ran
  // KS and TOST on the finished requests' latencies; run when both runs finished at least
  // one request of the model (and the measured mean is positive), else not_tested says why.
  bool tested = false;
  std::string not_tested;
  KsResult ks;
  TostResult tost;
  // The finished requests' latencies, sorted (for the CDF plots; not written to JSON).
  std::vector<double> predicted_latencies_s, measured_latencies_s;
};

struct Comparison {
  std::string scenario;
  double margin = 0.10;
  EndToEnd overall;
  double median_abs_stage_error = std::numeric_limits<double>::quiet_NaN();  // over all models' stages
  std::vector<ModelComparison> models;                                       // in Scenario::models order
  std::vector<OpError> ops;         // operators with a positive measured time, input order
  std::vector<OpTime> ops_skipped;  // measured time not positive or not finite, or predicted not finite
  double op_mape = std::numeric_limits<double>::quiet_NaN();            // over `ops`
  double op_weighted_error = std::numeric_limits<double>::quiet_NaN();  // sum |p - m| / sum m
  std::vector<KindError> kinds;                                         // sorted by kind
};

// Compares a simulated run with a measured one of the same scenario and plan. Request
// records are grouped by RequestRecord::model. `margin` is the TOST equivalence margin on
// the ratio of mean latencies (alpha 0.05). Throws std::invalid_argument if a request names
// a model the scenario does not have or margin is not in (0, 1).
Comparison compare_runs(const Scenario& s, const Plan& p, const SimResult& predicted, const SimResult& measured,
                        const std::vector<OpTime>& ops, double margin = 0.10);

// Every figure of the comparison except the raw latencies, keys in a fixed order; the same
// comparison gives a byte-identical file. NaN and infinite figures are written as null.
// Throws std::runtime_error naming the path if it cannot write.
void write_compare_json(const Comparison& c, const std::string& path);
// compare.json's text: what write_compare_json writes.
std::string compare_json_text(const Comparison& c);

// A Markdown report: end-to-end, per-stage and per-op-kind tables, the 10 operators with the
// largest |error|, and the KS and TOST results with their verdicts.
std::string compare_markdown(const Comparison& c);

// Writes gnuplot scripts and data files into `dir` (created if missing) and runs gnuplot on
// each: ops_scatter.svg (predicted against measured per operator, log-log, with y = x and
// the +-margin band) and latency_cdf_<model>.svg per model with finished requests
// (predicted and measured CDFs). Returns the SVGs produced. If gnuplot is not on PATH,
// nothing is written, a warning is given and the list is empty; if gnuplot fails on a
// script, the warning names the script and quotes gnuplot's output, and the other plots are
// still made. Scripts name their files relative to `dir` and run there (`cd dir && gnuplot
// ops_scatter.gp` redraws one). Warnings go to *warnings, or to stderr when warnings is null.
std::vector<std::string> write_compare_plots(const Comparison& c, const std::string& dir,
                                             std::vector<std::string>* warnings = nullptr);

// A regression gate. Figures are absolute relative errors (0.10 = 10%).
struct Bounds {
  double median_stage_error = 0.10;  // each model's median |stage error|
  double p50_error = 0.10;           // each model's and the overall |p50 error|
  double p99_error = 0.20;           // each model's and the overall |p99 error|
  bool require_equivalence = false;  // each model's TOST must show equivalence
};

// True when the comparison is within every bound. A model with no request in either run is
// not checked; a figure that cannot be computed (NaN) exceeds its bound. *why (if not null)
// gets one line per bound exceeded, with the figure and the bound; empty when within.
bool within_bounds(const Comparison& c, const Bounds& b, std::string* why);

// `frac` as a signed percentage with one decimal ("+4.2%"); "n/a" when not finite.
std::string signed_percent(double frac);

}  // namespace vlasim
