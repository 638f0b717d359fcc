#include "reports/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace vlasim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kConstantTolerance = 1e-12;

// Continued fraction of I_x(a, b) (Numerical Recipes betacf, modified Lentz). Converges
// quickly for x < (a + 1) / (a + b + 2); needs O(sqrt(max(a, b))) terms for large a, b.
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 200000;
  constexpr double kEps = 1e-15;
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1;
  double d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) return h;
  }
  throw std::runtime_error("regularized_incomplete_beta: continued fraction did not converge (a=" + std::to_string(a) +
                           ", b=" + std::to_string(b) + ", x=" + std::to_string(x) + ")");
}

void check_sample(const std::vector<double>& v, const char* what, const char* fn) {
  if (v.empty()) throw std::invalid_argument(std::string(fn) + ": the " + what + " sample is empty");
  for (double x : v)
    if (std::isnan(x)) throw std::invalid_argument(std::string(fn) + ": the " + what + " sample holds a NaN");
}

struct Moments {
  size_t n = 0;
  double mean = 0, var = 0;  // var: sample variance (n - 1), 0 for a constant sample
};

Moments moments(const std::vector<double>& v) {
  Moments m;
  m.n = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  m.mean = sum / static_cast<double>(m.n);
  // Values that agree to within rounding (e.g. end - arrival of identical simulated
  // latencies) make a constant sample.
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (m.n < 2 || *hi - *lo <= kConstantTolerance * std::max(std::fabs(*lo), std::fabs(*hi))) return m;
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.var = ss / static_cast<double>(m.n - 1);
  return m;
}

void check_pairs(const std::vector<double>& p, const std::vector<double>& m, const char* fn) {
  if (p.size() != m.size())
    throw std::invalid_argument(std::string(fn) + ": " + std::to_string(p.size()) + " predicted values but " +
                                std::to_string(m.size()) + " measured");
  if (p.empty()) throw std::invalid_argument(std::string(fn) + ": no values");
  for (double x : m)
    if (x == 0 || std::isnan(x)) throw std::invalid_argument(std::string(fn) + ": a measured value is 0 or NaN");
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1))
    throw std::invalid_argument("regularized_incomplete_beta: need a > 0, b > 0, 0 <= x <= 1 (a=" + std::to_string(a) +
                                ", b=" + std::to_string(b) + ", x=" + std::to_string(x) + ")");
  if (x == 0 || x == 1) return x;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_cdf: df must be positive (got " + std::to_string(df) + ")");
  if (std::isnan(t)) return t;
  // Beyond 1e7 df the t and normal CDFs differ by under 2e-8, less than the rounding in the
  // incomplete beta's lgamma prefactor there.
  if (df > 1e7) return 0.5 * std::erfc(-t / std::sqrt(2.0));
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  // P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2).
  const double x = df / (df + t * t);
  const double tail = 0.5 * regularized_incomplete_beta(df / 2, 0.5, x);
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double q, double df) {
  if (!(q > 0 && q < 1)) throw std::invalid_argument("student_t_quantile: q must be in (0, 1)");
  if (q < 0.5) return -student_t_quantile(1 - q, df);
  if (q == 0.5) return 0;
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < q) {
    lo = hi;
    hi *= 2;
    if (hi > 1e300) return kInf;
  }
  for (int i = 0; i < 400 && hi - lo > 1e-12 * std::max(1.0, hi); ++i) {
    const double mid = 0.5 * (lo + hi);
    if (student_t_cdf(mid, df) < q)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

double kolmogorov_q(double lambda) {
  if (std::isnan(lambda)) return lambda;
  if (lambda <= 0) return 1;
  if (lambda < 1.18) {
    // P(K <= lambda) = sqrt(2 pi) / lambda * sum_{j>=1} exp(-(2j - 1)^2 pi^2 / (8 lambda^2)).
    const double y = std::exp(-std::numbers::pi * std::numbers::pi / (8 * lambda * lambda));
    const double cdf =
        std::sqrt(2 * std::numbers::pi) / lambda * (y + std::pow(y, 9) + std::pow(y, 25) + std::pow(y, 49));
    return std::clamp(1 - cdf, 0.0, 1.0);
  }
  const double x = std::exp(-2 * lambda * lambda);
  return std::clamp(2 * (x - std::pow(x, 4) + std::pow(x, 9)), 0.0, 1.0);
}

KsResult ks_two_sample(std::vector<double> a, std::vector<double> b) {
  check_sample(a, "first", "ks_two_sample");
  check_sample(b, "second", "ks_two_sample");
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  KsResult r;
  r.n1 = a.size();
  r.n2 = b.size();
  const double n1 = static_cast<double>(r.n1), n2 = static_cast<double>(r.n2);
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    // Step over every copy of the next value in both samples before comparing the CDFs.
    const double v = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == v) ++i;
    while (j < b.size() && b[j] == v) ++j;
    r.d = std::max(r.d, std::fabs(static_cast<double>(i) / n1 - static_cast<double>(j) / n2));
  }
  const double ne = n1 * n2 / (n1 + n2);
  const double root = std::sqrt(ne);
  r.lambda = (root + 0.12 + 0.11 / root) * r.d;
  r.p = kolmogorov_q(r.lambda);
  return r;
}

TostResult tost_ratio(const std::vector<double>& predicted, const std::vector<double>& measured, double margin,
                      double alpha) {
  check_sample(predicted, "predicted", "tost_ratio");
  check_sample(measured, "measured", "tost_ratio");
  if (!(margin > 0 && margin < 1)) throw std::invalid_argument("tost_ratio: margin must be in (0, 1)");
  if (!(alpha > 0 && alpha < 0.5)) throw std::invalid_argument("tost_ratio: alpha must be in (0, 0.5)");
  const Moments p = moments(predicted), m = moments(measured);
  if (!(m.mean > 0))
    throw std::invalid_argument("tost_ratio: the measured mean must be positive (got " + std::to_string(m.mean) + ")");

  TostResult r;
  r.n_predicted = p.n;
  r.n_measured = m.n;
  r.mean_predicted = p.mean;
  r.mean_measured = m.mean;
  r.sd_predicted = std::sqrt(p.var);
  r.sd_measured = std::sqrt(m.var);
  r.ratio = p.mean / m.mean;
  r.margin = margin;
  r.alpha = alpha;
  const double lower = 1 - margin, upper = 1 + margin;

  const double vp = p.var / static_cast<double>(p.n), vm = m.var / static_cast<double>(m.n);
  if (vp == 0 && vm == 0) {
    r.exact = true;
    auto sign_inf = [](double x) { return x > 0 ? kInf : x < 0 ? -kInf : 0.0; };
    r.t_lower = sign_inf(p.mean - lower * m.mean);
    r.t_upper = sign_inf(p.mean - upper * m.mean);
    r.df_lower = r.df_upper = kInf;
    r.p_lower = r.ratio > lower ? 0 : 1;
    r.p_upper = r.ratio < upper ? 0 : 1;
    r.p = std::max(r.p_lower, r.p_upper);
    r.ci_low = r.ci_high = r.ratio;
    r.equivalent = r.p < alpha;
    return r;
  }

  // Welch statistic and Satterthwaite df for H0: mu_p = ratio * mu_m.
  auto variance = [&](double ratio) { return vp + ratio * ratio * vm; };
  auto t_stat = [&](double ratio) { return (p.mean - ratio * m.mean) / std::sqrt(variance(ratio)); };
  auto df_of = [&](double ratio) {
    const double a = vp, b = ratio * ratio * vm;
    double den = 0;
    if (p.n > 1) den += a * a / static_cast<double>(p.n - 1);
    if (m.n > 1) den += b * b / static_cast<double>(m.n - 1);
    if (den == 0) return kInf;  // ratio 0 with a constant prediction: T is infinite
    return variance(ratio) * variance(ratio) / den;
  };
  r.t_lower = t_stat(lower);
  r.t_upper = t_stat(upper);
  r.df_lower = df_of(lower);
  r.df_upper = df_of(upper);
  r.p_lower = student_t_cdf(-r.t_lower, r.df_lower);  // P(T > t_lower)
  r.p_upper = student_t_cdf(r.t_upper, r.df_upper);   // P(T < t_upper)
  r.p = std::max(r.p_lower, r.p_upper);
  r.equivalent = r.p < alpha;

  // Interval ends: T(ratio) = +t_crit (low end) and T(ratio) = -t_crit (high end).
  auto crit = [&](double ratio) { return student_t_quantile(1 - alpha, df_of(ratio)); };
  auto low_gap = [&](double ratio) { return t_stat(ratio) - crit(ratio); };
  auto high_gap = [&](double ratio) { return t_stat(ratio) + crit(ratio); };
  auto bisect = [](auto&& f, double lo, double hi) {  // f(lo) > 0 > f(hi)
    for (int i = 0; i < 200 && hi - lo > 1e-13 * std::max(1.0, std::fabs(hi)); ++i) {
      const double mid = 0.5 * (lo + hi);
      if (f(mid) > 0)
        lo = mid;
      else
        hi = mid;
    }
    return 0.5 * (lo + hi);
  };
  const double centre = std::max(r.ratio, 0.0);
  r.ci_low = low_gap(0) > 0 ? bisect(low_gap, 0.0, centre) : 0.0;
  // As ratio -> infinity T -> -mean_m / sqrt(vm) with df -> n_m - 1; no upper end if that
  // limit does not reach -t_crit.
  const bool bounded =
      vm == 0 || -m.mean / std::sqrt(vm) + student_t_quantile(1 - alpha, static_cast<double>(m.n - 1)) < 0;
  if (!bounded) {
    r.ci_high = kInf;
  } else {
    double lo = centre, hi = std::max(2 * centre, 1.0);
    int doublings = 0;
    while (high_gap(hi) > 0 && doublings < 2000) {
      lo = hi;
      hi *= 2;
      ++doublings;
    }
    r.ci_high = high_gap(hi) > 0 ? kInf : bisect(high_gap, lo, hi);
  }
  return r;
}

double relative_error(double predicted, double measured) {
  if (measured == 0 || std::isnan(measured))
    throw std::invalid_argument("relative_error: the measured value is 0 or NaN");
  return (predicted - measured) / measured;
}

double mape(const std::vector<double>& predicted, const std::vector<double>& measured) {
  check_pairs(predicted, measured, "mape");
  double sum = 0;
  for (size_t i = 0; i < predicted.size(); ++i) sum += std::fabs(predicted[i] - measured[i]) / std::fabs(measured[i]);
  return sum / static_cast<double>(predicted.size());
}

double weighted_abs_error(const std::vector<double>& predicted, const std::vector<double>& measured) {
  check_pairs(predicted, measured, "weighted_abs_error");
  double err = 0, total = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    err += std::fabs(predicted[i] - measured[i]);
    total += std::fabs(measured[i]);
  }
  return err / total;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) throw std::invalid_argument("percentile: empty input");
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument("percentile: q must be in [0, 1]");
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

double median_abs(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  for (double& x : v) x = std::fabs(x);
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace vlasim
