#include "sim/costs/cost_models.h"

#include "sim/costs/gpu_kernel_model.h"
#include "sim/costs/profiled_cost_model.h"
#include "sim/costs/shaped_cost_model.h"

namespace vlasim {

CostModelRegistry& cost_models() {
  static CostModelRegistry r = [] {
    CostModelRegistry r("cost model");
    register_roofline_cost_model(r);
    register_profiled_cost_model(r);
    register_shaped_cost_model(r);
    register_kernel_cost_model(r);
    return r;
  }();
  return r;
}

}  // namespace vlasim
