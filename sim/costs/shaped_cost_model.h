// The shape-aware GPU cost model (registry entry "shaped"): a GPU operator's time from its
// shape, as the kernels that run it behave, instead of from its FLOPs and bytes alone:
// - GEMMs run as output tiles spread over the SMs in waves: the tile sizes and split-K factor
//   the vendor library's heuristics would pick (the fastest of a fixed set), small dimensions
//   padded to a whole tile, the last wave paying for a whole wave;
// - fused attention runs one tile of queries per head (padded), keys split across SMs when
//   the heads alone cannot fill the GPU (flash decoding);
// - norms and elementwise ops are memory-bound at the achievable, not peak, bandwidth;
// - a kernel with few thread blocks cannot pull the whole DRAM bandwidth: each SM pulls at
//   most bandwidth / (saturating_sms x SMs), which also prices an SM partition's bandwidth;
// - no kernel is shorter than the device's empty kernel, and each adds the gap between two
//   kernels on the GPU (the catalog's graph_launch_us); run eagerly (no CUDA Graph), a kernel
//   shorter than the framework's per-operator host time (host_op_us, launch included) leaves
//   the GPU waiting for the host, so graph replay gains only where kernels are that short.
// Per-device figures come from the catalog's `kernels:` block (public microbenchmarks);
// the two global parameters are fitted by `vlasim validate-papers` on a named fit set.
// CPU units are priced by the roofline.
#pragma once

#include "sim/costs/cost_model.h"

namespace vlasim {

struct ShapedParams {
  // Defaults: fitted by `vlasim validate-papers` on scenarios/papers/figures.yaml's fit set.
  double host_op_s = 25e-6;  // eager framework time per operator on the host (dispatch + launch)
  double eff_scale = 0.9;    // multiplies every device's gemm and attention fractions
  double l2_hit_cost = 0.3;  // DRAM-time fraction charged for activations that fit in L2
};

// The cost of `op` on `sms` SMs of the GPU `dev` (1 <= sms <= dev.sms), replayed from a CUDA
// Graph when `graph`. REQUIRES: dev.type == Gpu, op.kind != Transfer.
OpCost shaped_gpu_op_cost(const Op& op, const DeviceSpec& dev, int sms, bool graph,
                          const ShapedParams& p);

// The "shaped" model with parameters host_op_us, eff_scale and l2_hit_cost (defaults
// ShapedParams'); throws ConfigError at the parameter out of its range.
std::unique_ptr<CostModel> make_shaped_cost_model(const Params& prm);
// Adds "shaped" (make_shaped_cost_model) to `r`.
void register_shaped_cost_model(CostModelRegistry& r);

}  // namespace vlasim
