// A scenario's robot (`robot:`, issue 47) and the control streams it drives: a robot arm
// (scheduler/robot/robot.h, registry `robot`) running the demonstrations' trajectories
// `speed` times as fast. Every `control:` stream of the scenario then takes its rate and its
// delays from the robot instead of its own keys.
#pragma once

#include <string>
#include <vector>

#include "scenarios/config/config.h"
#include "scenarios/stream.h"
#include "scheduler/robot/robot.h"

namespace vlasim {

struct RobotDecl {
  bool on = false;
  RobotSpec spec;                // spec.speed: the scenario's robot.speed
  // With pre-amplified targets (robot.h lag_compensated) the motion lag delays nothing.
  bool compensate_lag = false;
  // Recorded demonstrations: a CSV of joint positions (a column per joint, a row per
  // demonstration step at the robot's control_hz; a header line of names); absolute path.
  // Empty: synthetic demonstrations (smooth, seeded; peak joint velocity demo_peak_vel x vel).
  std::string demonstrations;
  double demo_peak_vel = 0.33;
  ConfigNode where;
};

// `robot: {name, speed, compensate_lag, demonstrations, demo_peak_vel, params}`. Throws
// ConfigError at the key: an unknown robot, a parameter out of range, a speed outside
// (0, 100], a missing demonstrations file (looked for beside `scenario_file`).
RobotDecl parse_robot(const ConfigNode& n, const std::string& scenario_file);

// `control: {hz, execute, capture_ms, actuation_ms}` of a workload entry for a stream of model
// `model`, whose chunk has `chunk` actions: the execution horizon must fit in it. With a robot, hz is the robot's
// control_hz x speed, the capture its observation delay (exposure + readout + joint read) and
// the actuation its motion lag (tau; 0 with compensate_lag): the stream may not give them.
ControlDecl parse_control(const ConfigNode& c, const std::string& model, int chunk, const RobotDecl& robot);

// Runs `robot` at speed factor `speed` (> 0): its spec's speed, and every control stream of
// `streams` at the robot's control_hz x speed (a request every `execute` actions).
// REQUIRES: robot.on.
void set_robot_speed(RobotDecl& robot, std::vector<StreamDecl>& streams, double speed);

}  // namespace vlasim
