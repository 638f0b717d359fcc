// A robot executing action chunks (SYSTEMS.md system 4, faster-than-demonstration execution;
// issue 47): the delays of its own (camera exposure before the timestamp, readout, joint
// reading), its joint limits, the motion lag of its control loop, its control period, and the
// speed factor it runs the demonstrations' trajectories at. Plain C++: the simulator and the
// real runtime read the same figures.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "scenarios/config/registry.h"

namespace vlasim {

struct RobotSpec {
  std::string name;
  double exposure_s = 0;  // camera exposure before the frame's timestamp
  double readout_s = 0;   // frame readout and transfer after it
  double proprio_s = 0;   // joint state read
  double tau_s = 0;       // the control loop's motion lag (first-order time constant)
  double control_hz = 0;  // actions executed a second at speed 1 (the demonstrations' rate)
  double vel = 0, acc = 0, jerk = 0;  // joint limits: rad/s, rad/s^2, rad/s^3 (every joint)
  int dof = 0;
  double speed = 1;       // speed factor over the demonstrations (1: as demonstrated)
  // The control period at `speed`: 1 / (control_hz x speed).
  double period_s() const { return 1 / (control_hz * speed); }
  // The lag's pole for one control period h: a = exp(-h / tau) (0 when tau is 0: no lag).
  double lag_pole(double h) const;
  // An observation's age when the policy sees it: exposure + readout + joint read.
  double observation_delay_s() const { return exposure_s + readout_s + proprio_s; }
};

using RobotRegistry = Registry<RobotSpec>;
// `arm`: every figure a parameter, defaults from the sources its description names.
RobotRegistry& robots();

// The motion lag q[k+1] = a q[k] + (1 - a) y[k] from q[0] = q0 over targets y[0..n-1]:
// the n + 1 positions q[0..n]. REQUIRES: 0 <= a < 1.
std::vector<double> lag_response(double q0, const std::vector<double>& y, double a);

// Targets that make the lag reach each y[k] one period later (q[k+1] = y[k] exactly, from
// q[0] = q0): the pre-amplified targets (y[k] - a q[k]) / (1 - a). REQUIRES: 0 <= a < 1.
std::vector<double> lag_compensated(double q0, const std::vector<double>& y, double a);

}  // namespace vlasim
