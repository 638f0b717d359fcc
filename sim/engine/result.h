// What a run (simulated, sim/engine/engine.h, or measured, executors/runtime/runtime.h)
// produces: a record per request, trace events, unit and domain statistics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/plan.h"

namespace vlasim {

constexpr int kStages = 5;

// What happened to one request. Times in seconds of simulated time; end < 0 if it did not
// finish before the simulation stopped.
// A simulation keeps one per request, so it is kept small (96 bytes): writing the records is
// a large part of a long simulation's time.
struct RequestRecord {
  uint64_t id = 0;
  int model = 0, stream = 0;
  int plan = 0;  // index into Plan::models of the plan it followed
  // Bit k set: stage k (a Stage index) ran to its end, and stage_latency[k] holds the time
  // from its first start to its last end. Without the bit, stage_latency[k] means nothing
  // (while the stage runs, the request flow keeps the stage's start there).
  uint8_t stages_done = 0;
  bool failed = false;  // a real run's executor failed one of its segments (it did not finish)
  // It arrived to find Scenario::queue_limit requests waiting, so it never ran (not finished).
  bool dropped = false;
  double arrival = 0, start = -1, end = -1;
  double deadline = 0;  // absolute; 0 when the stream has none
  double stage_latency[kStages] = {};
  // A request of a stream running only some stages (StreamDecl::stages): when it started,
  // the latest end, in any request of its model, of the model's last stage before its first
  // (the prefix an action-expert request reads); -1 when none had (or not such a stream).
  double context_end = -1;
  bool finished() const { return end >= 0; }
  bool stage_done(int k) const { return (stages_done >> k) & 1; }
  double latency() const { return end - arrival; }
  bool met() const { return finished() && (deadline <= 0 || end <= deadline + 1e-12); }
};

// One segment execution on one unit.
struct TraceEvent {
  int unit = 0;
  double start = 0, end = 0;
  uint64_t request = 0;
  int model = 0, segment = 0;
  int plan = 0;  // Plan::models index whose segment `segment` ran
  int stream = 0;
  int batch = 1;   // the batch size it ran at (padding included); `request` is its lead item
  int items = 1;   // requests in the batch
};

struct UnitStats {
  double busy_seconds = 0;  // time with a segment running
  uint64_t segments = 0;
};

struct DomainStats {
  double busy_seconds = 0;             // time with any unit running
  std::vector<double> resource_usage;  // integral of resource use (resource-seconds)
};

struct SimResult {
  std::vector<RequestRecord> requests;  // in arrival order
  std::vector<TraceEvent> trace;        // the first SimOptions::trace_limit executions
  bool trace_truncated = false;
  std::vector<UnitStats> units;         // by Plan::units
  std::vector<DomainStats> domains;     // by Plan domain
  double end_time = 0;                  // simulated time when the last event happened
  double horizon = 0;                   // arrivals end (throughput is measured over it)
  uint64_t activations = 0;             // timed events handled (a domain completion check, an
                                        // arrival, a background change)
  uint64_t systemc_activations = 0;     // SystemC activations that ran them (SimOptions::quantum_s)
  uint64_t locksteps = 0;               // locksteps started (GPUs with `lockstep:`)
  uint64_t guard_kept = 0;              // of them, where the guard kept the previous SM split
  // Non-empty when the run stopped before its end (SimOptions::should_stop): why. The
  // records then cover what ran until end_time; horizon is cut to it.
  std::string stopped;
};

}  // namespace vlasim
