// Scheduler policies: plain C++ over a small view of the system (queues, device state, clock).
// No SystemC and no oneDNN here, so one policy object drives both the simulator (sim/) and
// the real wall-clock runtime (executors/).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "scenarios/config/registry.h"

namespace vlasim {

// A piece of work waiting for an execution unit (a GPU stream, a CPU core group or a link
// direction): one segment of one request.
struct WorkItem {
  uint64_t request = 0;   // request id, unique per run, increasing with arrival
  int model = 0;          // model instance index in the scenario
  int plan = 0;           // execution plan it follows (differs from model under a dynamic zone)
  int stream = 0;         // workload stream index
  int segment = 0;        // position in the model's execution plan
  // Items of one plan and kind may run as one batch: the segment, except that under
  // per-step batching (BatchPolicy::per_step) the action expert's identical steps share one
  // (Segment::kind, sim/engine/plan.h), so requests at different steps run a step together.
  int kind = -1;   // -1: the segment
  double arrival = 0;     // when the request arrived (s)
  double ready = 0;       // when this item joined the queue (s)
  double deadline = std::numeric_limits<double>::infinity();  // absolute (s)
  double estimate = 0;    // predicted seconds of this item alone on the unit
  // Set on a batch's lead item when a unit starts the batch: the size it runs at (padding
  // included; 1 unbatched). The unit runs the segment once for the whole batch, at this size.
  int batch = 1;
  // Set when a lockstep stream starts it: the SMs its stream runs with (0: the stream's own).
  int sms = 0;
};

// What a queue policy sees when a unit becomes free.
struct UnitView {
  double now = 0;
  int unit = 0;                      // unit index in the run
  std::span<const WorkItem> queue;   // waiting items, in arrival order at this unit; not empty
  double busy_fraction = 0;          // the unit's utilisation so far
};

// Chooses which waiting item a free unit runs next.
class QueuePolicy {
 public:
  virtual ~QueuePolicy() = default;
  // Returns an index into view.queue. REQUIRES: view.queue not empty.
  virtual size_t pick(const UnitView& view) = 0;
};

// Decides how many requests of one model instance may be in flight at once: 1 runs frames
// serially; more lets device A work on frame t while device B finishes frame t-1.
class PipelinePolicy {
 public:
  virtual ~PipelinePolicy() = default;
  // Requests of one model instance allowed in flight, given the number of pipeline stages
  // (distinct units its plan visits in order). Always >= 1.
  virtual int window(int pipeline_stages) const = 0;
};

// The largest batch a unit may run (a plan costs every size a batch policy may form).
constexpr int kMaxUnitBatch = 64;

// A batch a free unit runs: items of one plan and kind (one model, one stage; see
// WorkItem::kind), run once at `size` (>= items.size(); more pads the batch with empty
// slots). The lead's segment is what runs; every item then moves on from its own.
struct BatchChoice {
  std::vector<size_t> items;  // indices into the queue; the lead item first
  int size = 1;
};

// Forms the batch a free unit runs around the item its queue policy picked (the lead).
class BatchPolicy {
 public:
  virtual ~BatchPolicy() = default;
  // The batch around view.queue[lead], at most `max_batch` items, all of the lead's plan and
  // kind: the lead, then the others earliest deadline first (ties: joined the queue
  // first, then request id). REQUIRES: lead < view.queue.size(), max_batch >= 1.
  virtual BatchChoice form(const UnitView& view, size_t lead, int max_batch) const = 0;
  // The sizes form() may return on a unit whose batch size is max_batch, in increasing
  // order (what a plan must cost and a real runtime must prepare).
  virtual std::vector<int> sizes(int max_batch) const = 0;
  // The batch size of units that do not declare their own (>= 1).
  virtual int default_size() const = 0;
  // True: the engine schedules the action expert step by step (continuous batching): each
  // denoising step is a segment of its own, and requests join or leave a running batch at
  // every step. False: a stage's steps run as one segment, joined only at its start.
  virtual bool per_step() const { return false; }
  // Host seconds the engine spends before each step it schedules (inspecting its buffer,
  // re-forming the batch), during which the unit runs nothing. Only with per_step().
  virtual double step_overhead_seconds() const { return 0; }
};

// Chooses, at each arrival, which model instance serves the request of a robot (workload
// stream) whose workload names a group of instances (Robion's traffic controller, run live:
// scheduler/fleet/placement.h LiveController). Plain C++, like every policy.
class Router {
 public:
  virtual ~Router() = default;
  // The scenario model index that serves the request of `stream` arriving at `now`; called
  // in arrival order, with non-decreasing now.
  virtual int route(int stream, double now) = 0;
};

using QueuePolicyRegistry = Registry<QueuePolicy>;
using PipelinePolicyRegistry = Registry<PipelinePolicy>;
using BatchPolicyRegistry = Registry<BatchPolicy>;

// The batch size a batch of n items runs at under dynamic batching, and the SM table's batch
// class of such a batch (sim/engine/lockstep.h): the smallest power of two >= n, at most max_batch.
int batch_bucket(int n, int max_batch);
// The sizes dynamic batching runs at on a unit of batch size max_batch: 1, 2, 4, ... below
// max_batch, and max_batch.
std::vector<int> bucket_sizes(int max_batch);

// The registries with every built-in policy.
const QueuePolicyRegistry& queue_policies();
const PipelinePolicyRegistry& pipeline_policies();
const BatchPolicyRegistry& batch_policies();

// Adds a queue policy to queue_policies() (or replaces the one of its name): a part made
// outside this list, such as a policy written in Python (python/policies.h). Not to be called
// while a scenario is loaded or run.
void add_queue_policy(QueuePolicyRegistry::Entry e);
// The same for batch_policies().
void add_batch_policy(BatchPolicyRegistry::Entry e);

}  // namespace vlasim
