#include "sim/engine/plan.h"

#include <algorithm>
#include <stdexcept>

#include "scheduler/policy.h"

namespace vlasim {

bool first_on_unit(const ModelPlan& mp, int k) {
  for (int j = 0; j < k; ++j)
    if (mp.segments[size_t(j)].unit == mp.segments[size_t(k)].unit) return false;
  return true;
}

void finish_segment(Segment& seg, const OpGraph& g, const std::vector<OpCost>& costs, const StackModel* stack,
                    bool first_segment) {
  double compute = 0, memory = 0;
  std::vector<StackOp> ops;
  for (int id : seg.ops) {
    const OpCost& c = costs[id];
    seg.seconds += c.seconds;
    compute += c.compute_seconds;
    memory += c.memory_seconds;
    seg.stage_seconds[static_cast<int>(g.op(id).stage)] += c.seconds - c.dispatch_seconds;
    seg.outside += c.outside_seconds;
    if (stack && stack->fused()) ops.push_back({stack_op_class(g.op(id)), std::max(0.0, c.kernel_only())});
  }
  if (stack && !stack->fused()) {
    // Eager: the ATen kernels PyTorch launches. A synthetic kernel (an activation after a GEMM,
    // a pass of a decomposed norm) moves its bytes at the rate its source op's memory traffic
    // was priced at.
    ops = eager_lowering(g, seg.ops, [&](const Op& op, const Op& source) {
      const OpCost& sc = costs[size_t(source.id)];
      if (op.id >= 0) return std::max(0.0, sc.kernel_only());
      const double sb = source.bytes_read + source.bytes_written;
      return sb > 0 ? sc.memory_seconds * (op.bytes_read + op.bytes_written) / sb : 0.0;
    });
  }
  if (stack && seg.seconds > 0) {
    const double wall = stack->run(ops, first_segment).wall_s;
    for (double& st : seg.stage_seconds) st *= wall / seg.seconds;
    seg.seconds = wall;
  }
  // Fractions of the ops' time: the engine's host time before them (overhead) uses neither.
  if (seg.seconds > 0) {
    seg.compute_frac = compute / seg.seconds;
    seg.memory_frac = memory / seg.seconds;
  }
  seg.seconds += seg.overhead;
  const Op& first = g.op(seg.ops.front());
  const Op& last = g.op(seg.ops.back());
  seg.label = to_string(first.stage);
  if (last.stage != first.stage) seg.label += std::string("-") + to_string(last.stage);
  else if (first.block >= 0 || last.block >= 0) {
    int b0 = std::max(first.block, 0), b1 = std::max(last.block, b0);
    seg.label += ".b" + std::to_string(b0) + "-" + std::to_string(b1);
  }
}

const Segment& ModelPlan::segment_at(int k, int b, int sms) const {
  if (sms <= 0) return segment_at(k, b);
  auto it = split.find({k, b, sms});
  if (it == split.end())
    throw std::logic_error("plan of model " + std::to_string(model) + " has no cost of segment " + std::to_string(k) +
                           " at batch " + std::to_string(b) + " on " + std::to_string(sms) + " SMs");
  return it->second;
}

Segment cost_segment(const Scenario& s, const Plan& p, const CostModel& cost, const ModelPlan& mp, int k, int b,
                     double sm_fraction) {
  const Segment& base = mp.segment_at(k, b);
  const OpGraph& g = mp.graph_at(b);
  const UnitInfo& u = p.units[static_cast<size_t>(base.unit)];
  const DeviceInstance& dev = s.devices[static_cast<size_t>(u.device)];
  UnitDecl unit = dev.units[static_cast<size_t>(u.unit)];
  unit.sm_fraction = sm_fraction;
  std::vector<OpCost> costs(g.size());  // the ops of this segment costed on the resized unit
  for (int id : base.ops) costs[static_cast<size_t>(id)] = cost.op_cost(g.op(id), dev, unit);
  Segment seg;
  seg.unit = base.unit;
  seg.ops = base.ops;
  seg.overhead = base.overhead;
  seg.kind = base.kind;
  finish_segment(seg, g, costs, p.unit_stack(s, u), first_on_unit(mp, k));
  seg.variability = base.variability;
  return seg;
}

std::unique_ptr<BatchPolicy> scenario_batch_policy(const Scenario& s) {
  return batch_policies().make(s.batching.name.empty() ? "dynamic" : s.batching.name, s.batching.params,
                               s.batching.where);
}

const BatchVariant& ModelPlan::variant(int b) const {
  for (const BatchVariant& v : batched)
    if (v.size == b) return v;
  throw std::logic_error("plan of model " + std::to_string(model) + " has no batch of " + std::to_string(b));
}

}  // namespace vlasim
