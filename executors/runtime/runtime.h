// The real runtime: runs a scenario's workload in wall-clock time on real executors, with the
// same plan (segments on units) and the same policy objects (sim/engine/flow.h) as the simulator,
// and records the same per-request figures, so `vlasim execute` and `vlasim simulate` write
// reports that line up in a viewer and in a diff.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "executors/executor.h"
#include "scenarios/scenario.h"
#include "scheduler/robot/arm.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"

namespace vlasim {

struct ExecuteOptions {
  std::string executor = "onednn";  // a name in executor_registry() (executors/executor_registry.h)
  int warmup = 2;                   // runs of every segment before the clock starts
  size_t trace_limit = 20000;
  // Called now and then from the calling thread with the fraction of arrivals issued.
  std::function<void(double)> progress;
  // Asked from the calling thread between the warmup runs before the clock starts, then at
  // least every 50 ms of wall-clock time until the workers have stopped (while arrivals are
  // issued, during the drain, while waiting for running segments to end). A non-empty answer
  // ends the run at once as the drain's end does (no further arrival is issued, no queued
  // segment starts) and becomes SimResult::stopped, as SimOptions::should_stop does in a
  // simulation: the report then says partial, and the horizon is cut to the stop.
  std::function<std::string()> should_stop;
  // Fault injection and other wrappers: when set, makes each unit's executor from the
  // registry's params instead of executor_registry().make(executor, ...).
  std::function<std::unique_ptr<Executor>(const Params&, const ConfigNode&)> make_executor;
  // A run is refused before it starts when its arrivals end past max_seconds of wall-clock
  // time, or its work passes the simulator's limits (check_work).
  double max_seconds = 3600;
  // A simulated arm per control stream (scheduler/robot/arm.h) ticking live, on a thread of its
  // own, at the stream's control rate in wall-clock time: each tick runs the action of the
  // newest chunk whose request has really ended (+ actuation) by then; ExecResult::arms.
  bool arm = false;
  double max_requests = SimOptions().max_requests;
  double max_memory_bytes = SimOptions().max_memory_bytes;
};

struct ExecResult {
  SimResult result;  // times are seconds since the run started
  // Per scenario model, per op id: median measured seconds of runs at batch size 1 (NaN for
  // ops never run so).
  std::vector<std::vector<double>> op_seconds;
  std::vector<std::string> devices;  // per unit used: the executor's device description
  size_t failed = 0;                 // requests whose segment threw (RequestRecord::failed)
  std::string first_error;           // the first such error: "unit: message"
  // With ExecuteOptions::arm: per control stream of the scenario, in stream order, what its
  // live arm did (ticks with their lateness, chunks run, dry ticks). Its ticks lie on the grid
  // of the stream's observations (start - capture, every 1 / hz) from time 0 to the run's end
  // (max of the last end and the arrivals' end), or until its last chunk ran out.
  std::vector<ArmRun> arms;
};

// Runs `s` as planned in `p`. A segment whose executor throws ends its request as failed
// (counted in ExecResult::failed) and its unit goes on with the next item. The run ends once
// every issued request has ended, at arrivals end + drain_s of wall-clock time, or when
// o.should_stop answers (before the clock starts: then no request is issued), whichever comes
// first: from then on no unit starts a queued segment, a segment already running finishes but
// is not recorded (its requests stay unfinished, as in a simulation cut at that time), and
// execute returns once those segments have ended. Every issued request then has its record:
// finished, failed or unfinished (end < 0). Every unit the plan uses must be a CPU core group
// whose cores exist on this machine (logical CPU ids first_core .. first_core + cores - 1).
// Throws ConfigError (scenario file, device line) when a unit cannot run here (a GPU, missing
// CPUs) or a model's dtype cannot run on this CPU (at its dtype key, naming the host's ISA;
// checked before any work starts), and std::runtime_error when memory is short.
// Background loads on CPU core groups run as spinning threads pinned to their cores (busy
// for the compute share of every 2 ms); their memory share is not reproduced.
ExecResult execute(const Scenario& s, const Plan& p, const ExecuteOptions& o = {});

// Throws ConfigError at the dtype of the first model of `s` placed on a CPU device whose dtype
// this CPU cannot run (cpu_dtype_problem: the host's ISA and the alternatives).
void check_cpu_dtypes(const Scenario& s);

}  // namespace vlasim
