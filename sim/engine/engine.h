// The discrete-event simulation of a plan (SystemC underneath): requests arrive from
// workload streams, wait in per-unit queues ordered by the queue policy, are admitted by the
// pipeline policy, and run their segments on units that share their device's compute and
// memory bandwidth (max-min fair processor sharing).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "scheduler/policy.h"
#include "sim/engine/plan.h"
#include "sim/engine/result.h"

namespace vlasim {

// How far a simulation has got (SimOptions::progress).
struct SimProgress {
  double fraction = 0;        // of simulated time, 0..1
  double simulated_s = 0;     // the model's clock
  size_t requests_ended = 0;  // finished or failed so far
  uint64_t events = 0;        // model events run so far
};

struct SimOptions {
  size_t trace_limit = 20000;
  // Temporal decoupling: one SystemC activation runs every model event up to this many
  // simulated seconds ahead of SystemC's time (0: one activation per event time). The
  // results do not depend on it; it trades SystemC's per-activation cost against how far
  // SystemC's clock may lag the model's inside an activation.
  double quantum_s = 1e-3;
  // Called now and then (about every 2% of simulated time) with how far the run has got.
  std::function<void(const SimProgress&)> progress;
  // Asked where progress is reported and, in between, about every 50 ms of wall time
  // (polled every few hundred events, so within a fraction of a second wherever the run is
  // in simulated time); a non-empty answer stops the run there (after the event that ran
  // last) and becomes SimResult::stopped.
  std::function<std::string()> should_stop;
  // Constant memory: given, each request's record goes here once, in arrival order, as soon
  // as it and every earlier request have ended (the rest at the end), and
  // SimResult::requests stays empty; the memory limit then weighs the trace and the records
  // an overload would keep waiting (check_work), and a run whose held records pass it stops
  // there (SimResult::stopped says so).
  std::function<void(const RequestRecord&)> on_record;
  // Routes the requests of streams whose workload names a group of instances (a scenario
  // with `controller:`); required for such a scenario, unused otherwise. Not owned.
  Router* router = nullptr;
  // Work a run may take (see check_work); a scenario estimated above either is refused.
  double max_requests = 1e8;
  double max_memory_bytes = 1e9;
};

// What a simulation will take, estimated from its scenario and plan before it runs.
struct SimWork {
  double requests = 0;      // arrivals over every stream
  double segments = 0;      // segment executions (each request's plan, whole)
  double memory_bytes = 0;  // the records it keeps: a request's record and queue state, the trace
  double trace_bytes = 0;   // the trace's part of it
  size_t busiest_stream = 0;  // the stream issuing the most requests
  // Overload: the units' and models' demand over what they can serve, each unit at its
  // largest batch and alone on its device, each model within its pipeline's window (a lower
  // bound: contention, background loads, bursts and routed streams add to it). `overload` is
  // the largest such ratio (> 1: overloaded), at `bottleneck` (a unit's or model's name).
  double overload = 0;
  std::string bottleneck;
  // Requests waiting when arrivals end at that overload (0 when every unit keeps up), and
  // the stream adding most to them; a constant-memory run keeps their records.
  double backlog = 0;
  size_t backlog_stream = 0;
  // The bytes of the records the backlog keeps, up to Scenario::queue_limit requests.
  double backlog_bytes = 0;
};
SimWork estimate_work(const Scenario& s, const Plan& plan, size_t trace_limit);

// Bytes a request takes while the simulation holds it: its record and queue state.
inline constexpr double kBytesPerRequest = 200;

// Throws ConfigError at the busiest stream's entry (std::invalid_argument for a scenario built
// in code) when `w` passes options.max_requests or options.max_memory_bytes, naming the
// estimate, the limit and the command-line option that raises it (--max-requests,
// --max-memory-gb). A constant-memory run (options.on_record) weighs its trace and its
// backlog (w.backlog_bytes): past the limit it is refused at the stream adding most to the
// backlog, naming the overloaded unit and queue_limit, or at queue_limit when that bound is
// what does not fit.
void check_work(const Scenario& s, const SimWork& w, const SimOptions& options);

// One line to tell the user before a run when estimate `w` finds it overloaded: the
// bottleneck, the requests that would wait, and what queue_limit does with them (drops
// those past it, counted in the report) or that without it every one waits; "" when the
// units keep up.
std::string overload_note(const Scenario& s, const SimWork& w);

// Runs one simulation in a fresh SystemC context (several may run one after another in one
// process; not concurrently). The same scenario, plan and seed give the same result. Refuses
// (check_work) a run estimated above the options' limits before it starts.
SimResult simulate(const Scenario& s, const Plan& plan, const SimOptions& options = {});

// The key a measured co-run slowdown of segment `segment` of plan model `plan_model` (an
// index into p.models below s.models.size(): a model's own plan) is stored under
// (sim/measured/profile.h CorunSlowdown, DeviceSpec::corun_slowdown): "<hash of the segment>-<hash of
// its co-runners>", each 16 hex digits of a 64-bit FNV-1a hash. The segment's hash covers its
// unit's cores and its ops' op_signature (shapes and dtype) in order; its co-runners' hash
// the sorted set of the segment hashes of every segment other core groups of its device run
// in `p`'s own plans. Equal for the same work beside the same co-runners, whatever the
// scenario's name or cost model; a different split, model, dtype or co-runner changes it.
// "" for a transfer, a segment of no CPU unit, or indices out of range.
std::string corun_key(const Scenario& s, const Plan& p, int plan_model, int segment);

// The engine's slowdown of CPU segment `segment` of plan model `plan_model` at batch size 1
// while every other core of its node runs a job (Domain::corun in sim/engine/engine.cc, before
// max-min sharing): the device's measured co-run slowdown for corun_key, at least 1, when it
// has one (*measured = true); else 1 + memory_frac (core_bw / core_bw_loaded - 1) with a
// loaded bandwidth; else 1 (then only max-min sharing of the node's bandwidth slows it).
// 1 for a segment that is not on a CPU. `measured` may be null.
double corun_slowdown(const Scenario& s, const Plan& p, int plan_model, int segment, bool* measured = nullptr);

// Activations per second of a bare SystemC loop: `processes` methods (1 by default) each
// re-notifying itself, `events` timed notifications in all, run in a fresh context. The
// yardstick for the simulator's own event rate. Stores the activations run in *handled.
double bare_systemc_event_rate(uint64_t events, uint64_t* handled = nullptr, int processes = 1);

}  // namespace vlasim
