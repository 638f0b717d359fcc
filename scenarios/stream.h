// A scenario's request streams as the loader resolves them (scenarios/scenario.h): what the
// workloads (scenarios/workload.h) draw arrivals for.
#pragma once

#include <cstdint>
#include <string>

#include "scenarios/config/config.h"

namespace vlasim {

// A robot executing action chunks (SYSTEMS.md system 4, real-time chunking): it runs `hz`
// actions a second and asks for a new chunk every `execute` actions (the execution horizon),
// so the stream's request rate is hz / execute. An observation is `capture_s` old when its
// request arrives (camera exposure, readout, transfer) and a chunk takes effect `actuation_s`
// after its inference ends. reports/control.h turns a run's requests into the control delay,
// the frozen (inpainted) prefix and usable part of each chunk, and whether the robot ran dry.
struct ControlDecl {
  double hz = 0;         // actions per second; 0: not a control stream
  int execute = 0;       // actions of each chunk executed before the next request
  double capture_s = 0;
  double actuation_s = 0;
  bool on() const { return hz > 0; }
};

// A stream of requests (a camera or a robot): periodic or Poisson arrivals.
struct StreamDecl {
  std::string name;
  int model = 0;             // index into Scenario::models
  double rate_hz = 0;
  // `load:` instead of rate_hz: the rate is this fraction of the model's alone throughput as
  // planned (resolve_stream_loads, sim/engine/plan.h), so a scenario loads any host alike; until it is
  // resolved rate_pending is true and rate_hz 0.
  double load = 0;
  bool rate_pending = false;
  double jitter_s = 0;       // periodic: uniform +-jitter on each arrival
  // `jitter_pct:` instead of jitter_ms: the jitter as this fraction of the period (under 0.5),
  // set into jitter_s once the rate is known (at once, or with the load's rate).
  double jitter_frac = 0;
  double deadline_s = 0;     // relative; 0 = none
  double start_s = 0;
  double duration_s = 0;
  std::string arrival = "periodic";  // a name in workloads()
  ControlDecl control;               // `control:`: a robot executing the chunks (rate from it)
  // `stages: [...]`: its requests run only these stages of the model (bit k: Stage k; 0: all),
  // decoupled from the model's other streams (full streaming: a VLM stream at camera rate and
  // action-expert streams at control rate, each action reading the latest prefix finished).
  uint8_t stages = 0;
  // With `controller:`: the workload names a model of the controller's placement problem, a
  // group of instances (one per GPU, named MODEL-GPU); `model` is then the group's first
  // instance and each request goes where the controller routes it. Empty: no group.
  std::string group;
  ConfigNode where;
};

}  // namespace vlasim
