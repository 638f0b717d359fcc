// Execution plans: a scenario's models cut into segments (maximal runs of operators on one
// execution unit, plus the transfers between devices), each with its predicted cost, and the
// memory each device needs. The simulator runs plans; the real runtime runs the same
// segments on executors. No SystemC here.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/graph.h"
#include "scenarios/scenario.h"
#include "scheduler/policy.h"
#include "sim/costs/cost_model.h"
#include "sim/costs/gpu_sharing.h"
#include "sim/costs/stack_model.h"

namespace vlasim {

// One execution unit of the run: a GPU stream, a CPU core group, or one direction of a link.
struct UnitInfo {
  std::string name;     // "gpu0.s0", "cpu0.g0", "pcie0.h2d"
  int device = -1;      // index into Scenario::devices, or -1 for a link
  int link = -1;        // index into Scenario::links, or -1
  int unit = 0;         // index within the device's units
  DeviceType type = DeviceType::Gpu;
  // The sharing domain this unit belongs to (a device, or one link direction) and the
  // resources it draws from within it.
  int domain = 0;
  int compute_resource = 0;  // resource index within the domain (SMs, or the group's cores)
  int memory_resource = 1;   // resource index within the domain (HBM, or the NUMA node)
  double compute_share = 1;  // fraction of the compute resource the unit may use
  double memory_share = 1;   // fraction of the memory resource the unit may use
  int batch = 1;             // most items of one model and stage it runs as one batch
  // GPU streams (the `blocks` sharing model, sim/costs/gpu_sharing.h):
  int process = 0;           // its process on the device (0, 1, ...: in order of first stream)
  int priority = 0;          // lower runs first
  // It has its SMs alone (a declared SM limit: a green context); the device's other streams
  // share the SMs no such stream holds. Lockstep streams are split at each lockstep instead.
  bool partition = false;
};

struct Segment {
  int unit = 0;               // index into Plan::units
  std::vector<int> ops;       // op ids in execution order; empty for a transfer
  bool transfer = false;
  double bytes = 0;           // transfer: bytes moved
  std::string label;          // "vision", "prefix.b0-15", "h2d", ...
  double seconds = 0;         // predicted time alone on its unit (overhead included)
  // Host seconds its engine spends before the segment runs, the unit idle meanwhile (the
  // per-step buffer inspection of BatchPolicy::step_overhead_seconds); 0 for most.
  double overhead = 0;
  // Segments of one plan and kind may run as one batch (WorkItem::kind): its own index (also
  // when -1), or under per-step batching the first of the action expert's steps with the
  // same ops.
  int kind = -1;
  double compute_frac = 0;    // share of the unit's compute resource used while its ops run
  double memory_frac = 0;     // share of the unit's memory resource used while its ops run
  // Alone time of the segment's ops by Stage, without the runtime's dispatch share
  // (OpCost::dispatch_seconds), as op timers see them: the shares by which a run's interval
  // is split among its stages, in simulation as in real runs (whose shares are op timers).
  double stage_seconds[5] = {0, 0, 0, 0, 0};
  // Seconds of `seconds` the real runtime spends outside its segment interval (hand-offs
  // between segments: OpCost::outside_seconds summed); the simulator keeps them out of every
  // stage's share. 0 for most.
  double outside = 0;
  // The cost model's run-to-run variation for this segment (CostModel::service_variability):
  // the simulator scales each run's time by a factor drawn from these quantiles; empty: none.
  std::vector<double> variability;
};

// A model plan's segments at a batch size above 1: the same ops on the same units (segment k
// here is segment k of the plan), costed on the graph built for `size` requests at once.
struct BatchVariant {
  int size = 1;
  OpGraph graph;
  std::vector<Segment> segments;
};

// Robion's SM lookup table key: the two batches of a lockstep (model index and batch class,
// sim/engine/lockstep.h), the SM-limited stream's first.
struct SmLutKey {
  int first_model = 0, first_batch = 1, second_model = 0, second_batch = 1;
  auto operator<=>(const SmLutKey&) const = default;
};

// The lockstep of one GPU (LockstepDecl) as planned.
struct LockstepPlan {
  int device = -1;
  int units[2] = {-1, -1};  // Plan::units indices: the SM-limited stream, then the other
  int sms = 0;              // the GPU's SMs
  int static_first = 0;     // the first stream's declared SMs: the split before any lockstep
                            // (0 when it declares the whole GPU: no split to keep then)
  bool guard = true;
  std::map<SmLutKey, int> lut;  // SMs of the first stream for each pair of batches
  std::string lut_source;       // "cost model <name>" or the table file read
};

struct ModelPlan {
  int model = 0;                 // index into Scenario::models
  int cut = -1;                  // the partition cut this plan runs with (-1: no partition)
  // Plans of the same model at other cuts (dynamic zone), indices into Plan::models in
  // increasing cut order, this one included; empty without a zone.
  std::vector<int> variants;
  OpGraph graph;
  std::vector<OpCost> op_costs;  // by op id (transfers excluded)
  std::vector<int> op_unit;      // by op id
  std::vector<Segment> segments;
  // V-AEFusion (ModelInstance::v_aefusion): the segment of the action expert's stale steps,
  // which starts when the request does, beside segments 0 .. fork-1 (its VLM); segment
  // fork+1 (the fresh steps) starts when both are done. -1: none.
  int fork = -1;
  int pipeline_stages = 1;       // distinct consecutive units visited
  double alone_seconds = 0;      // sum of segment times (one request, no contention)
  // The batch sizes above 1 the scenario's batching policy may run on the units this plan
  // visits, in increasing order; empty without batching.
  std::vector<BatchVariant> batched;
  // Segments on a lockstep's streams costed at other SM counts than their stream's own:
  // (segment, batch size, SMs of its stream) -> the segment at that size and SM count.
  std::map<std::tuple<int, int, int>, Segment> split;

  // Segment k at batch size b (1: segments[k]). Throws std::logic_error for a size the plan
  // did not cost.
  const Segment& segment_at(int k, int b) const { return b <= 1 ? segments[k] : variant(b).segments[k]; }
  // Segment k at batch size b with its stream limited to `sms` SMs (0: the stream's own);
  // throws std::logic_error for a combination the plan did not cost.
  const Segment& segment_at(int k, int b, int sms) const;
  // The graph at batch size b (1: graph); throws as segment_at.
  const OpGraph& graph_at(int b) const { return b <= 1 ? graph : variant(b).graph; }
  const BatchVariant& variant(int b) const;
};

struct DeviceMemory {
  std::string device;
  double weights = 0, kv_cache = 0, activations = 0, runtime = 0, reserved = 0;
  double capacity = 0;
  double total() const { return weights + kv_cache + activations + runtime + reserved; }
};

struct Plan {
  std::vector<UnitInfo> units;
  int domains = 0;
  std::vector<std::string> domain_names;
  std::vector<int> domain_resources;  // resources per domain
  // One plan per scenario model (index = model index), then the dynamic-zone variants.
  std::vector<ModelPlan> models;
  std::vector<DeviceMemory> memory;   // one per device
  std::vector<LockstepPlan> locksteps;  // one per GPU with `lockstep:`
  // By device: how its running segments share it (GPUs; a CPU's entry is unused), and the
  // SMs its streams without a partition share (the GPU's less its partitions').
  std::vector<GpuSharingModel> sharing;
  std::vector<int> shared_sms;
  // The scenario's software stack (policies.stack) around GPU streams' kernels; null: none
  // (each op's cost carries its own launch and host time).
  std::shared_ptr<const StackModel> stack;
  // Under policies.stack auto: the stack of GPUs that capture graphs (`stack` is the others').
  std::shared_ptr<const StackModel> stack_captured;
  // The stack of unit `u` of scenario `s`: null for CPU units and links, and without a stack.
  const StackModel* unit_stack(const Scenario& s, const UnitInfo& u) const {
    if (u.type != DeviceType::Gpu || u.device < 0) return nullptr;
    return stack_captured && s.devices[size_t(u.device)].graph_capture ? stack_captured.get() : stack.get();
  }
};

// The scenario's batching policy (dynamic when a scenario built in code names none).
std::unique_ptr<BatchPolicy> scenario_batch_policy(const Scenario& s);

// Segment k of plan `mp` at batch size b, with the ops on its unit costed as if the unit had
// `sm_fraction` of its GPU's SMs (the unit's own share otherwise unchanged in the result).
Segment cost_segment(const Scenario& s, const Plan& p, const CostModel& cost, const ModelPlan& mp, int k, int b,
                     double sm_fraction);

// Fills seg's time (its ops' `costs`, indexed by op id, plus seg.overhead), its compute and
// memory fractions, stage times and label, from seg.ops of graph g. With a `stack` (a GPU
// stream's segment under a scenario's stack), the ops' time is the stack's wall time over their
// kernel times (OpCost::kernel_only), the step's own host time charged when `first` (the
// request's first segment on its unit); stage times split it in proportion to the ops' costs.
void finish_segment(Segment& seg, const OpGraph& g, const std::vector<OpCost>& costs,
                    const StackModel* stack = nullptr, bool first = false);
// Whether segment k of `mp` is the first on its unit.
bool first_on_unit(const ModelPlan& mp, int k);

}  // namespace vlasim
