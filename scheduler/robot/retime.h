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

// The chunk re-timed for speed factor s: it lasts N h / s, as the demonstration run s times as
// fast. The unknowns are the inverse step times u[k] = 1 / dt[k] (k < N); the waypoints are
// kept. A QP minimises the peak |acceleration| over joints and waypoints, plus a 1e-6 weighted
// pull of every u[k] towards their mean (which makes the optimum unique), at a given mean of u
// (a linear constraint), subject to the velocity limit on each step ((q[k+1] - q[k]) u[k]), the
// acceleration limit at each waypoint and the jerk limit (finite differences at the mean step,
// linear in u), and u[k] >= 0.1 of the mean (no step over ten mean ones). Unequal steps make the
// chunk last longer than N / mean(u), so the mean is raised until it lasts N h / s (a few
// solves). The peaks are then measured at the steps found, each difference over its own steps,
// and a timing whose measured peak passes a limit is refused too.
struct Retimed {
  bool ok = false;
  // When not ok: the limit that binds ("vel", "acc" or "jerk") and why, in words (a step whose
  // velocity needs more than ten mean steps names it).
  std::string binding, why;
  std::vector<double> dt;          // step durations, s
  double duration_s = 0;           // their sum
  double peak_vel = 0, peak_acc = 0, peak_jerk = 0;  // of the re-timed chunk
  double uniform_peak_acc = 0;     // the same chunk at speed s with equal steps
  // Which limit the optimum sits on (within 0.1%): "vel", "acc", "jerk" or "" (none: the
  // chunk could run faster).
  std::string at_limit;
};
// REQUIRES: t.h > 0, s > 0, every waypoint of one size, steps x joints <= kMaxRetimeCells.
// Throws std::invalid_argument on a chunk that breaks those, std::runtime_error when the
// solver fails.
inline constexpr long long kMaxRetimeCells = 100000;
Retimed retime(const Trajectory& t, double speed, const JointLimits& limits);

// The largest speed factor in [lo, hi] at which retime() succeeds, to 0.1% (bisection); lo when
// even lo fails (the Retimed at lo then says which limit binds).
double max_speed(const Trajectory& t, const JointLimits& limits, double lo = 0.05, double hi = 100);

}  // namespace vlasim
