// The planner: a scenario's models cut into plans (sim/engine/plan.h): graphs built, placements
// applied, every operator costed, batched and lockstep variants added, memory checked.
#pragma once

#include <vector>

#include "scenarios/scenario.h"
#include "sim/costs/cost_model.h"
#include "sim/engine/plan.h"

namespace vlasim {

// Builds graphs, applies placements, costs every operator and checks memory. `in_flight`
// gives, per model, how many requests may be in flight (their KV caches and activations
// coexist). Throws ConfigError at the scenario's placement when an op has no placement, two
// devices exchange data without a link, or a device's memory does not fit (saying by how much).
// A model with a dynamic zone gets one plan per candidate cut; every device holds the weights
// of every block it may run. A model whose `dtype: auto` is unresolved (resolve_auto_dtypes,
// scenarios/scenario.h) is refused with a ConfigError at its dtype.
Plan make_plan(const Scenario& s, const CostModel& cost, const std::vector<int>& in_flight);

// make_plan with the scenario's own cost model, and each model's requests in flight set by the
// scenario's pipeline policy from the pipeline stages its plan visits. Throws as make_plan,
// and ConfigError for an unknown cost model or pipeline policy.
Plan plan_scenario(const Scenario& s);

// Seconds of work one request of scenario model `m` puts on its busiest unit in plan `p`
// (its own plan, not dynamic-zone variants): with a pipeline that lets requests overlap, the
// model's alone throughput is 1 / this; otherwise 1 / ModelPlan::alone_seconds.
double bottleneck_seconds(const Plan& p, int m);

// Turns every stream's `load:` into a rate: load / (the model's alone latency) for a serial
// pipeline, load / bottleneck_seconds for one that lets requests overlap (the scenario's
// pipeline policy decides), from plan `p` of `s`. Throws ConfigError at the stream when the
// plan gives the model no time, or the jitter then exceeds half the period.
void resolve_stream_loads(Scenario& s, const Plan& p);

}  // namespace vlasim
