#include "scheduler/robot/robot.h"

#include <cmath>
#include <stdexcept>

namespace vlasim {

double RobotSpec::lag_pole(double h) const { return tau_s > 0 ? std::exp(-h / tau_s) : 0.0; }

namespace {

// A figure of `p` in [lo, hi], refused at its key otherwise.
double figure(const Params& p, const char* key, double fallback, double lo, double hi, const char* unit) {
  const double v = p.get_double(key, fallback);
  if (!(v >= lo && v <= hi))
    p.node().required(key).fail(std::string("must be from ") + std::to_string(lo) + " to " + std::to_string(hi) + " " + unit);
  return v;
}

}  // namespace

RobotRegistry& robots() {
  static RobotRegistry* r = [] {
    auto* reg = new RobotRegistry("robot");
    reg->add({"arm",
              "a robot arm executing action chunks: delays of its own, joint limits, a first-order motion lag; "
              "defaults: the delays SYSTEMS.md system 4 identifies on one arm (exposure 55 ms, readout 33 ms, joint "
              "read 50 ms, motion lag 150 ms) and the joint limits of a Franka Emika Panda (its datasheet: 2.175 "
              "rad/s, 7.5 rad/s^2 and 7500 rad/s^3 on its slowest joints; 7 joints), 50 actions a second",
              {{"exposure_ms", "camera exposure before the frame's timestamp, ms", "55"},
               {"readout_ms", "frame readout and transfer, ms", "33"},
               {"proprio_ms", "joint state read, ms", "50"},
               {"tau_ms", "motion lag of the control loop (first-order time constant), ms", "150"},
               {"control_hz", "actions a second as demonstrated", "50"},
               {"vel", "joint velocity limit, rad/s", "2.175"},
               {"acc", "joint acceleration limit, rad/s^2", "7.5"},
               {"jerk", "joint jerk limit, rad/s^3", "7500"},
               {"dof", "joints", "7"}},
              [](const Params& p) {
                auto m = std::make_unique<RobotSpec>();
                m->name = "arm";
                m->exposure_s = figure(p, "exposure_ms", 55, 0, 1e4, "ms") * 1e-3;
                m->readout_s = figure(p, "readout_ms", 33, 0, 1e4, "ms") * 1e-3;
                m->proprio_s = figure(p, "proprio_ms", 50, 0, 1e4, "ms") * 1e-3;
                m->tau_s = figure(p, "tau_ms", 150, 0, 1e5, "ms") * 1e-3;
                m->control_hz = figure(p, "control_hz", 50, 0.1, 1e5, "Hz");
                m->vel = figure(p, "vel", 2.175, 1e-6, 1e4, "rad/s");
                m->acc = figure(p, "acc", 7.5, 1e-6, 1e6, "rad/s^2");
                m->jerk = figure(p, "jerk", 7500, 1e-6, 1e9, "rad/s^3");
                m->dof = static_cast<int>(figure(p, "dof", 7, 1, 64, "joints"));
                if (p.node().defined() && p.node().has("dof") && p.get_double("dof", 7) != m->dof)
                  p.node().required("dof").fail("must be a whole number of joints");
                return m;
              }});
    return reg;
  }();
  return *r;
}

std::vector<double> lag_response(double q0, const std::vector<double>& y, double a) {
  if (!(a >= 0 && a < 1)) throw std::invalid_argument("lag_response: the pole must be in [0, 1)");
  std::vector<double> q(y.size() + 1);
  q[0] = q0;
  for (size_t k = 0; k < y.size(); ++k) q[k + 1] = a * q[k] + (1 - a) * y[k];
  return q;
}

std::vector<double> lag_compensated(double q0, const std::vector<double>& y, double a) {
  if (!(a >= 0 && a < 1)) throw std::invalid_argument("lag_compensated: the pole must be in [0, 1)");
  std::vector<double> u(y.size());
  double q = q0;
  for (size_t k = 0; k < y.size(); ++k) {
    u[k] = (y[k] - a * q) / (1 - a);
    q = y[k];
  }
  return u;
}

}  // namespace vlasim
