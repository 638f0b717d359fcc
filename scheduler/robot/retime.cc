#include "scheduler/robot/retime.h"

#include <coin/ClpSimplex.hpp>
#include <coin/CoinPackedMatrix.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vlasim {

namespace {

constexpr double kMinStep = 0.1;   // u[k] >= 0.1 s / h
constexpr double kPull = 1e-6;     // weight of the pull towards equal steps

// The QP in x[k] = u[k] h / s (1: the nominal step) and z, the peak |acceleration| over
// (s / h)^2, with `acc_cap` and `jerk_cap` the limits in those units (infinity: none).
// Returns false when infeasible.
// `w[k]`: the acceleration at waypoint k is its difference of velocities times w[k] (the
// harmonic mean of its two steps' x at the previous solution; 1 at equal steps).
bool solve(const std::vector<std::vector<double>>& dq, const std::vector<double>& x_max, const std::vector<double>& w,
           double acc_cap, double jerk_cap, std::vector<double>* x, double* z) {
  const int n = static_cast<int>(dq.size()), dof = static_cast<int>(dq[0].size());
  const int zc = n;  // z's column
  CoinPackedMatrix m(false, 0, 0);
  m.setDimensions(0, n + 1);
  std::vector<double> rlo, rhi;
  auto row = [&](std::vector<int> idx, std::vector<double> val, double lo, double hi) {
    m.appendRow(static_cast<int>(idx.size()), idx.data(), val.data());
    rlo.push_back(lo);
    rhi.push_back(hi);
  };
  std::vector<int> all(n);
  for (int k = 0; k < n; ++k) all[k] = k;
  row(all, std::vector<double>(n, 1.0), n, n);  // the mean speed
  const double inf = COIN_DBL_MAX;
  for (int k = 1; k < n; ++k)
    for (int j = 0; j < dof; ++j) {
      // |dq[k] x[k] - dq[k-1] x[k-1]| w[k] <= z
      row({k, k - 1, zc}, {dq[k][j] * w[k], -dq[k - 1][j] * w[k], -1}, -inf, 0);
      row({k, k - 1, zc}, {dq[k][j] * w[k], -dq[k - 1][j] * w[k], 1}, 0, inf);
    }
  if (std::isfinite(jerk_cap))
    for (int k = 1; k + 1 < n; ++k)
      for (int j = 0; j < dof; ++j)
        row({k + 1, k, k - 1}, {dq[k + 1][j], -2 * dq[k][j], dq[k - 1][j]}, -jerk_cap, jerk_cap);
  std::vector<double> clo(n + 1, kMinStep), chi(x_max), obj(n + 1, 0.0);
  chi.push_back(std::isfinite(acc_cap) ? acc_cap : inf);
  clo[zc] = 0;
  obj[zc] = 1;
  // The pull: kPull (x - 1)^2 = kPull x^2 - 2 kPull x + const.
  for (int k = 0; k < n; ++k) obj[k] = -2 * kPull;
  ClpSimplex model;
  model.setLogLevel(0);
  model.loadProblem(m, clo.data(), chi.data(), obj.data(), rlo.data(), rhi.data());
  std::vector<CoinBigIndex> qs(n + 2);
  std::vector<int> qc(n);
  std::vector<double> qe(n, 2 * kPull);  // CLP's objective is 0.5 x'Qx + c'x
  for (int k = 0; k <= n + 1; ++k) qs[k] = std::min(k, n);
  for (int k = 0; k < n; ++k) qc[k] = k;
  model.loadQuadraticObjective(n + 1, qs.data(), qc.data(), qe.data());
  model.primal();
  if (model.isProvenPrimalInfeasible()) return false;
  if (!model.isProvenOptimal()) {
    if (model.status() == 1) return false;
    throw std::runtime_error("retime: the QP solver (CLP) stopped with status " + std::to_string(model.status()));
  }
  const double* sol = model.primalColumnSolution();
  x->assign(sol, sol + n);
  *z = sol[zc];
  return true;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

}  // namespace

Retimed retime_qp(const Trajectory& t, double speed, const JointLimits& lim);

// The QP at mean inverse step time speed / h (the chunk then lasts at least N h / speed).
Retimed retime_mean_u(const Trajectory& t, double speed, const JointLimits& lim) {
  if (!(t.h > 0) || !(speed > 0)) throw std::invalid_argument("retime: the step and the speed must be positive");
  const int n = t.steps();
  if (n < 1) throw std::invalid_argument("retime: a chunk needs at least two waypoints");
  const size_t dof = t.q[0].size();
  for (const auto& w : t.q)
    if (w.size() != dof || dof == 0) throw std::invalid_argument("retime: every waypoint needs the same joints");
  if (static_cast<long long>(n) * static_cast<long long>(dof) > kMaxRetimeCells)
    throw std::invalid_argument("retime: a chunk of " + std::to_string(n) + " steps of " + std::to_string(dof) +
                                " joints is past the " + std::to_string(kMaxRetimeCells) + " step-joints the QP takes");
  const double u0 = speed / t.h;
  std::vector<std::vector<double>> dq(static_cast<size_t>(n), std::vector<double>(dof));
  std::vector<double> x_max(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    double big = 0;
    for (size_t j = 0; j < dof; ++j) {
      dq[k][j] = t.q[k + 1][j] - t.q[k][j];
      big = std::max(big, std::fabs(dq[k][j]));
    }
    x_max[k] = big > 0 ? lim.vel / (big * u0) : 1e9;
  }
  Retimed r;
  // The same chunk with equal steps, for comparison.
  for (int k = 1; k < n; ++k)
    for (size_t j = 0; j < dof; ++j) r.uniform_peak_acc = std::max(r.uniform_peak_acc, std::fabs(dq[k][j] - dq[k - 1][j]) * u0 * u0);
  // Velocity first: the mean of x is 1, so the steps' caps must leave room for it.
  double room = 0;
  for (double c : x_max) room += std::min(c, 1e9);
  for (int k = 0; k < n; ++k)
    if (x_max[k] < kMinStep) {
      r.binding = "vel";
      r.why = "at speed " + fmt(speed) + " step " + std::to_string(k) + " would need more than ten nominal steps to keep the velocity limit " +
              fmt(lim.vel) + " rad/s";
      return r;
    }
  if (room < n) {
    r.binding = "vel";
    r.why = "at speed " + fmt(speed) + " the joint velocity limit " + fmt(lim.vel) +
            " rad/s leaves the chunk no timing with its mean speed (the limit allows at most speed " +
            fmt(speed * room / n) + ")";
    return r;
  }
  // Sequential: the accelerations' weights from the previous solution (equal steps first).
  std::vector<double> x, w(static_cast<size_t>(n), 1.0);
  double z = 0;
  auto reweight = [&] {
    for (int k = 1; k < n; ++k) w[k] = 2 * x[k] * x[k - 1] / (x[k] + x[k - 1]);
  };
  for (int pass = 0; pass < 4; ++pass) {
    if (!solve(dq, x_max, w, INFINITY, INFINITY, &x, &z)) break;
    reweight();
  }
  if (x.empty() || !solve(dq, x_max, w, INFINITY, INFINITY, &x, &z)) {
    r.binding = "vel";
    r.why = "at speed " + fmt(speed) + " no timing keeps every step under the velocity limit " + fmt(lim.vel) + " rad/s";
    return r;
  }
  const double acc_cap = lim.acc / (u0 * u0), jerk_cap = lim.jerk / (u0 * u0 * u0);
  if (z > acc_cap * (1 + 1e-9)) {
    r.binding = "acc";
    r.why = "at speed " + fmt(speed) + " the least peak acceleration any timing reaches is " + fmt(z * u0 * u0) +
            " rad/s^2, over the limit " + fmt(lim.acc);
    return r;
  }
  if (!solve(dq, x_max, w, acc_cap, jerk_cap, &x, &z)) {
    r.binding = "jerk";
    r.why = "at speed " + fmt(speed) + " no timing keeps the acceleration under " + fmt(lim.acc) +
            " rad/s^2 and the jerk under " + fmt(lim.jerk) + " rad/s^3";
    return r;
  }
  r.ok = true;
  for (int k = 0; k < n; ++k) {
    r.dt.push_back(1 / (u0 * x[k]));
    r.duration_s += r.dt.back();
    for (size_t j = 0; j < dof; ++j) r.peak_vel = std::max(r.peak_vel, std::fabs(dq[k][j]) * u0 * x[k]);
  }
  // The peaks at the steps found (the QP bounds them at the nominal step; here each difference
  // is over the mean of its two steps).
  auto acc = [&](int k, size_t j) {
    return (dq[k][j] / r.dt[k] - dq[k - 1][j] / r.dt[k - 1]) / (0.5 * (r.dt[k] + r.dt[k - 1]));
  };
  for (int k = 1; k < n; ++k)
    for (size_t j = 0; j < dof; ++j) {
      r.peak_acc = std::max(r.peak_acc, std::fabs(acc(k, j)));
      if (k + 1 < n) r.peak_jerk = std::max(r.peak_jerk, std::fabs(acc(k + 1, j) - acc(k, j)) / r.dt[k]);
    }
  if (r.peak_acc > lim.acc * 1.001 || r.peak_jerk > lim.jerk * 1.001) {
    const bool a = r.peak_acc > lim.acc * 1.001;
    r.ok = false;
    r.binding = a ? "acc" : "jerk";
    r.why = "at speed " + fmt(speed) + " the timing found reaches " + fmt(a ? r.peak_acc : r.peak_jerk) +
            (a ? " rad/s^2 over the acceleration limit " + fmt(lim.acc) : " rad/s^3 over the jerk limit " + fmt(lim.jerk)) +
            " at its unequal steps";
    return r;
  }
  if (r.peak_vel >= lim.vel * 0.999) r.at_limit = "vel";
  else if (r.peak_acc >= lim.acc * 0.999) r.at_limit = "acc";
  else if (r.peak_jerk >= lim.jerk * 0.999) r.at_limit = "jerk";
  return r;
}

// The chunk at equal steps (dt = h / speed), its peaks measured as retime_mean_u measures them.
Retimed equal_steps(const Trajectory& t, double speed, const JointLimits& lim) {
  Retimed r;
  const int n = t.steps();
  const double dt = t.h / speed;
  r.dt.assign(static_cast<size_t>(n), dt);
  r.duration_s = n * dt;
  std::vector<double> a_prev;
  for (int k = 0; k < n; ++k)
    for (size_t j = 0; j < t.q[k].size(); ++j) r.peak_vel = std::max(r.peak_vel, std::fabs(t.q[k + 1][j] - t.q[k][j]) / dt);
  for (int k = 1; k < n; ++k) {
    std::vector<double> a(t.q[k].size());
    for (size_t j = 0; j < a.size(); ++j) {
      a[j] = ((t.q[k + 1][j] - t.q[k][j]) - (t.q[k][j] - t.q[k - 1][j])) / (dt * dt);
      r.peak_acc = std::max(r.peak_acc, std::fabs(a[j]));
      if (!a_prev.empty()) r.peak_jerk = std::max(r.peak_jerk, std::fabs(a[j] - a_prev[j]) / dt);
    }
    a_prev = std::move(a);
  }
  r.uniform_peak_acc = r.peak_acc;
  r.ok = r.peak_vel <= lim.vel * 1.001 && r.peak_acc <= lim.acc * 1.001 && r.peak_jerk <= lim.jerk * 1.001;
  if (r.peak_vel >= lim.vel * 0.999) r.at_limit = "vel";
  else if (r.peak_acc >= lim.acc * 0.999) r.at_limit = "acc";
  else if (r.peak_jerk >= lim.jerk * 0.999) r.at_limit = "jerk";
  return r;
}

Retimed retime(const Trajectory& t, double speed, const JointLimits& lim) {
  Retimed r = retime_qp(t, speed, lim);
  if (!(t.h > 0) || !(speed > 0)) return r;  // (retime_qp threw already)
  // Equal steps are a timing too: the QP's sequential linearisation may miss them.
  const Retimed eq = equal_steps(t, speed, lim);
  if (eq.ok && (!r.ok || eq.peak_acc < r.peak_acc)) return eq;
  return r;
}

Retimed retime_qp(const Trajectory& t, double speed, const JointLimits& lim) {
  // Unequal steps make the chunk last longer than at equal ones (the mean of 1 / u is at least
  // 1 / the mean of u): solve for a faster mean inverse step time until the chunk lasts N h / speed.
  const double want = t.steps() * t.h / speed;
  double s = speed;
  Retimed r;
  double uniform = -1;  // equal steps at the speed asked for
  for (int it = 0; it < 30; ++it) {
    r = retime_mean_u(t, s, lim);
    if (uniform < 0) uniform = r.uniform_peak_acc;
    r.uniform_peak_acc = uniform;
    if (!r.ok) {
      if (it > 0) r.why = "to run at speed " + fmt(speed) + " (its steps at mean speed " + fmt(s) + "): " + r.why;
      return r;
    }
    if (std::fabs(r.duration_s - want) <= 1e-9 * want) break;
    s *= r.duration_s / want;
  }
  return r;
}

double max_speed(const Trajectory& t, const JointLimits& limits, double lo, double hi) {
  if (!retime(t, lo, limits).ok) return lo;
  if (retime(t, hi, limits).ok) return hi;
  while (hi / lo > 1.001) {
    const double mid = std::sqrt(lo * hi);
    (retime(t, mid, limits).ok ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace vlasim
