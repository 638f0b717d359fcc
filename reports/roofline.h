// Roofline report (issue 14): where a model's predicted time goes, per device, execution unit,
// stage and operator class (and dtype, where a component has its own), against the roofline
// of the unit that runs it. Each row sums one class of operators of one stage on one unit for
// one request: FLOPs, DRAM bytes (every read and
// write of the operator, no cache reuse), arithmetic intensity (FLOP per byte), the bound
// that intensity gives against the unit's ridge point (peak FLOP/s over bandwidth), the
// attainable rate min(peak, intensity x bandwidth) and the rate the cost model predicts the
// operators reach (FLOPs over their predicted time, launch overhead included).
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/engine/plan.h"

namespace vlasim {

struct RooflineRow {
  std::string device;     // device instance of the scenario
  std::string catalog;    // its catalog entry
  std::string unit;       // the execution unit (stream or core group) on that device
  std::string dtype;      // the operators' dtype
  std::string stage;      // vision, prefix, action, decode, head
  std::string op_class;   // gemm, attention, norm, elementwise, embedding
  int ops = 0;
  int measured_ops = 0;   // ops whose time is a measured kernel time (OpCost::measured)
  double flops = 0, bytes = 0, seconds = 0;  // per request; seconds as predicted
  double intensity = 0;   // FLOP per byte (0 when the class moves no bytes)
  double peak_flops = 0;  // of the unit for this class (matrix rate for gemm and attention)
  double bandwidth = 0;   // bytes/s of the unit
  double ridge = 0;       // peak_flops / bandwidth, FLOP per byte
  std::string bound;      // "compute" (intensity >= ridge) or "memory"
  // What the cost model says limits these operators' predicted time most: "compute",
  // "memory" or "overhead" (launch / dispatch), by summed time.
  std::string limiter;
  double attainable_flops = 0;  // min(peak, intensity x bandwidth)
  double achieved_flops = 0;    // flops / seconds
  double share = 0;             // of the request's predicted operator time
};

struct RooflineReport {
  std::string scenario, model;
  // The software stack GPU ops were priced under (Scenario::stack); "none": the cost model's
  // own per-op launch and host time.
  std::string stack = "none";
  double request_seconds = 0;  // summed predicted operator time of one request (no transfers)
  std::vector<RooflineRow> rows;  // by device, unit, stage order, class order, dtype
};

// The roofline rows of model `m` of scenario `s` under plan `p` (p = make_plan of s).
RooflineReport make_roofline(const Scenario& s, const Plan& p, int m);

// Each op's predicted seconds (by op id) of model `m` of `s` under plan `p`: the cost model's
// OpCost::seconds, or under a software stack (s.stack not "none") for an op of a GPU segment its
// share of the segment's stack wall time (without the engine's overhead), split in proportion to
// the ops' kernel times (OpCost::kernel_only); `stack_host` (may be null) then gets each op's
// share of the stack's own time (its share less its kernel time; the cost model's overhead
// without a stack).
std::vector<double> predicted_op_seconds(const Scenario& s, const Plan& p, int m,
                                         std::vector<double>* stack_host = nullptr);

// The report as a Markdown table (one section per device) and as CSV (one row per
// RooflineRow, header first; numbers in SI units: FLOP, bytes, seconds, FLOP/s, bytes/s).
// Under a stack the Markdown says which and the CSV ends in a `stack` column.
std::string roofline_markdown(const RooflineReport& r);
std::string roofline_csv(const RooflineReport& r);

// Writes roofline.md, roofline.csv and, when gnuplot is on PATH, roofline_<device>.svg (a
// log-log roofline plot per device: the matrix and vector roofs and a point per row) into
// `dir`. Returns the files written; a missing gnuplot or a failed plot adds a warning.
std::vector<std::string> write_roofline(const RooflineReport& r, const std::string& dir,
                                        std::vector<std::string>* warnings);

}  // namespace vlasim
