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

#include "scenarios/registry.h"

namespace vlasim {

// A piece of work waiting for an execution unit (a GPU stream, a CPU core group or a link
// direction): one segment of one request.
struct WorkItem {
  uint64_t request = 0;   // request id, unique per run, increasing with arrival
  int model = 0;          // model instance index in the scenario
  int plan = 0;           // execution plan it follows (differs from model under a dynamic zone)
  int stream = 0;         // workload stream index
  int segment = 0;        // position in the model's execution plan
  double arrival = 0;     // when the request arrived (s)
  double ready = 0;       // when this item joined the queue (s)
  double deadline = std::numeric_limits<double>::infinity();  // absolute (s)
  double estimate = 0;    // predicted seconds of this item alone on the unit
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

using QueuePolicyRegistry = Registry<QueuePolicy>;
using PipelinePolicyRegistry = Registry<PipelinePolicy>;

// The registries with every built-in policy.
const QueuePolicyRegistry& queue_policies();
const PipelinePolicyRegistry& pipeline_policies();

}  // namespace vlasim
