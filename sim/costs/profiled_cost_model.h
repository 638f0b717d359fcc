// The "profiled" cost model: times measured on this machine by `vlasim calibrate` (a device
// profile, sim/measured/profile.h), for the units and shapes the profile covers.
#pragma once

#include <string>

#include "scenarios/config/config.h"
#include "scenarios/scenario.h"
#include "sim/costs/cost_model.h"
#include "sim/measured/profile.h"

namespace vlasim {

// The width a unit's profile section is keyed by: a CPU core group's cores, a GPU stream's
// SMs (its sm_fraction of the GPU's, rounded, at least 1), 1 for other devices.
int profile_width(const DeviceInstance& dev, const UnitDecl& unit);

// The profile file scenario `s`'s cost model reads when it is "profiled" (found as the model
// finds it), and the node to blame for it; path "" when the cost model is another.
struct ProfileRef {
  std::string path;
  ConfigNode where;
};
ProfileRef scenario_profile(const Scenario& s);

// Adds "profiled" (params: profile = path, required; fallback = "fit" or "roofline") to `r`.
// Relative profile paths are looked up next to the scenario file first, then in the current
// directory. The model refuses (ConfigError at the params) a profile made for another
// catalog device, or without a section for the unit's thread count (CPU: cores; other
// devices: 1) and the op's dtype, or (fallback "fit") without a fit for an unseen op's kind.
// For a GPU the section is the stream's SM count (profile_width), and a profile timed with
// CUDA Graph replays predicts only devices with graph_capture (and one timed kernel by kernel
// only devices without).
// Times are the table's median for a profiled signature, else the fit (or the roofline with
// fallback "roofline"); they are split into compute/memory/overhead in the roofline's
// proportions for the same op and unit. The section's op_overhead_s is added to every op (as
// overhead) whatever its source, except with fallback "roofline" for unprofiled shapes; its
// op_outside_s part is the op's outside_seconds. Transfers over the link named in the
// profile's memcpy figure use that figure; other links use the roofline's transfer_cost.
void register_profiled_cost_model(CostModelRegistry& r);

}  // namespace vlasim
