// One inference step of a Kineto trace as the software stack model sees it
// (sim/costs/stack_model.h): its wall time, its GPU busy time, and where the host's time went.
//
// Within a step (a TraceInference) on the host thread that runs most of its outermost ops (an
// op is outermost in a step when no op encloses it, or the one that does began before the step):
// - a "launching op" is an outermost op that launched device work; its class is its
//   trace_op_key's kind: gemm, attention, norm, eltwise (as "elementwise"), or "other"
//   (unkeyed: copies, casts, reductions, masks, embeddings...);
// - a launching op owns the host time from its start to the next launching op's start (the
//   ops that launch nothing and the Python between them included); the last one owns its own
//   span; time inside synchronise calls is owned by no op (the queue model prices waiting);
// - the step's own host time is the rest: before the first launching op and after the last
//   one's end, synchronise calls excluded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/measured/torch_trace.h"

namespace vlasim {

struct TraceStep {
  double start_us = 0;
  // The step's span (TraceInference) less the synchronise calls that end before its first
  // launching op starts (waiting for work launched before the step: a previous step's tail).
  double wall_s = 0;
  double waited_s = 0;      // the synchronise time taken off
  double gpu_busy_s = 0;    // device time of the events launched inside the step
  int device_events = 0;    // those events
  double host_bound_share() const { return wall_s > 0 ? std::max(0.0, 1 - gpu_busy_s / wall_s) : 0; }
  double step_host_s = 0;   // host time outside the keyed launching ops (see the top)
  std::map<std::string, double> class_host_s;  // host time owned by launching ops, by class
  std::map<std::string, int> class_ops;        // launching ops, by class
  int unkeyed_ops = 0;      // launching ops with no key (class "other")
  // Launch call start to device start, for events whose stream was idle at the call.
  std::vector<double> launch_latency_s;
  // GPU gaps between consecutive events of one graph replay on a stream.
  std::vector<double> node_gap_s;
  double graph_launch_s = 0;  // host time in graph replay launch calls inside the step
  int graph_nodes = 0;        // device events those replays ran
  // Host time from the step's start to its last top-level op's end (or to the step's end
  // when it has none), synchronise calls excluded: the host's own span.
  double host_span_s = 0;
};

// The steps of `t` (one per inference). Throws ConfigError naming the trace when a step has no
// top-level op that launched device work (nothing for a stack model to read).
std::vector<TraceStep> trace_steps(const TorchTrace& t, const std::vector<TraceInference>& inferences);

// The class a stack prices a trace op by: "gemm", "attention", "norm", "elementwise", or "" (no key).
std::string trace_stack_class(const TraceOp& op);

}  // namespace vlasim
