// The registration list of cost models: every built-in model, by name, filled from each model's
// own register_* function. It sits above every model, so no model includes another's registry.
#pragma once

#include "sim/costs/cost_model.h"

namespace vlasim {

// Every built-in cost model: roofline, profiled, shaped, kernel (`vlasim list cost_models`).
CostModelRegistry& cost_models();

}  // namespace vlasim
