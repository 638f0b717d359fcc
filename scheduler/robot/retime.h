// Faster-than-demonstration execution (SYSTEMS.md system 4; issue 47): an action chunk's
// waypoints re-timed for a speed factor by a QP over the inverse step times, solved by CLP
// (coinor-libclp-dev, Debian's; the LP/QP solver CBC is built on).
#pragma once

#include <string>
#include <vector>

namespace vlasim {

// A chunk as a trajectory: waypoints q[0..N] (each a vector of joint positions, rad), meant
// one nominal step h apart (the demonstrations' control period).
struct Trajectory {
  double h = 0;
  std::vector<std::vector<double>> q;
  int steps() const { return q.empty() ? 0 : static_cast<int>(q.size()) - 1; }
};

// Joint limits the re-timed chunk must keep (every joint alike): velocity, acceleration, jerk.
struct JointLimits {
  double vel = 0, acc = 0, jerk = 0;
};

// The chunk re-timed for speed factor s. Inverse step times u[k] = 1 / dt[k] (k < N) are the
// unknowns; the waypoints are kept and so is the mean speed (the mean of u[k] is s / h, that of
// the demonstration run s times as fast); each step's velocity is (q[k+1] - q[k]) u[k], the
// acceleration at waypoint k is (v[k] - v[k-1]) s / h and the jerk the difference of two
// accelerations times s / h (finite differences at the nominal step, exact when the steps are
// equal). The QP minimises the peak |acceleration| over joints and waypoints, plus a 1e-6
// weighted pull of every u[k] towards s / h (which makes the optimum unique), subject to the
// three limits and 0.1 s / h <= u[k] (no step over ten nominal ones).
struct Retimed {
  bool ok = false;
  // When not ok: the limit that binds ("vel", "acc" or "jerk") and why, in words.
  std::string binding, why;
  std::vector<double> dt;          // step durations, s
  double duration_s = 0;           // their sum
  double peak_vel = 0, peak_acc = 0, peak_jerk = 0;  // of the re-timed chunk
  double uniform_peak_acc = 0;     // the same chunk at speed s with equal steps
  // Which limit the optimum sits on (within 0.1%): "vel", "acc", "jerk" or "" (none: the
  // chunk could run faster).
  std::string at_limit;
};
// REQUIRES: t.h > 0, s > 0, every waypoint of one size. Throws std::invalid_argument on a chunk
// that breaks those, std::runtime_error when the solver fails.
Retimed retime(const Trajectory& t, double speed, const JointLimits& limits);

// The largest speed factor in [lo, hi] at which retime() succeeds, to 0.1% (bisection); lo when
// even lo fails (the Retimed at lo then says which limit binds).
double max_speed(const Trajectory& t, const JointLimits& limits, double lo = 0.05, double hi = 100);

}  // namespace vlasim
