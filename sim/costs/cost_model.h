// Cost models: how long one operator takes on one execution unit when it runs alone, split
// into the compute and memory time it needs. The simulator shares devices between concurrent
// work from these figures. New models (e.g. a profiled, calibrated one) register by name.
#pragma once

#include <functional>
#include <string>

#include <memory>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/registry.h"
#include "scenarios/scenario.h"

namespace vlasim {

struct OpCost {
  double seconds = 0;          // total, alone on the unit
  double compute_seconds = 0;  // time the unit's compute would need at its achievable rate
  double memory_seconds = 0;   // time the unit's memory traffic would need
  double overhead_seconds = 0; // launch / dispatch overhead (part of seconds)
  // The part of overhead_seconds the real runtime spends around the op, outside the op's own
  // timer (thread hand-offs spread over ops; ProfileSection::op_overhead_s). A measured op
  // time compares with seconds - dispatch_seconds.
  double dispatch_seconds = 0;
  // The part of dispatch_seconds the runtime spends outside the segment's interval altogether
  // (between one segment's end and the next one's start; ProfileSection::op_outside_s).
  double outside_seconds = 0;
  // The op's kernels alone on the device: no host time, no gap between kernels (what a
  // software stack, sim/costs/stack_model.h, queues). < 0: seconds - overhead_seconds.
  double kernel_seconds = -1;
  double kernel_only() const { return kernel_seconds >= 0 ? kernel_seconds : seconds - overhead_seconds; }
  // The kernel's time is a measured one (a measured GPU profile the cost model was given), not
  // a model's; reports count these ops.
  bool measured = false;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Cost of `op` on unit `unit` of `dev`. REQUIRES: op.kind != Transfer.
  virtual OpCost op_cost(const Op& op, const DeviceInstance& dev, const UnitDecl& unit) const = 0;
  // Cost of moving `bytes` over `link`, host-to-device when h2d.
  virtual OpCost transfer_cost(double bytes, const LinkInstance& link, bool h2d) const = 0;
  // Run-to-run variation of a segment's time on unit `unit` of `dev` at `dtype`: quantiles,
  // at probabilities 0, 1/(n-1), ..., 1, of (a run's time / the segment's median time),
  // non-decreasing and > 0. Empty (the default): every run takes the predicted time.
  virtual std::vector<double> service_variability(const DeviceInstance&, const UnitDecl&,
                                                  DType) const {
    return {};
  }
};

using CostModelRegistry = Registry<CostModel>;
// Adds "roofline" (params l2_hit_cost, overheads) to `r` (sim/costs/cost_models.h lists every
// built-in model).
void register_roofline_cost_model(CostModelRegistry& r);

// The catalog roofline (registry entry "roofline"): l2_hit_cost is the DRAM-time fraction
// charged for activations that fit in L2/LLC; overheads: charge launch/dispatch per op.
std::unique_ptr<CostModel> make_roofline(double l2_hit_cost, bool overheads);

// Reads the fit file a part's `fit` parameter names (a relative path: beside the scenario first,
// then from here), else `shipped`, and hands its text and path to `parse`. A file that cannot be
// read or parsed is a ConfigError at the `fit` key when one was given; at $VLASIM_KERNEL_FIT when
// that variable chose the shipped file's folder ("the <what> it names: ..."); else a
// std::runtime_error ("the shipped <what> is damaged: ...").
void read_fit_param(const Params& prm, const std::string& shipped, const std::string& what,
                    const std::function<void(const std::string& text, const std::string& file)>& parse);

// Peak compute (FLOP/s) and memory bandwidth (B/s) available to one unit of a device.
double unit_peak_flops(const DeviceInstance& dev, const UnitDecl& unit, const Op& op);
double unit_bandwidth(const DeviceInstance& dev, const UnitDecl& unit);

}  // namespace vlasim
