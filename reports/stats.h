// Statistics for comparing predicted and measured runs: two-sample Kolmogorov-Smirnov,
// an equivalence test (TOST) on the ratio of means, the Student-t distribution, and error
// helpers. Only <cmath>; no external math library.
#pragma once

#include <cstddef>
#include <vector>

namespace vlasim {

// Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1, by the
// continued fraction of Numerical Recipes (modified Lentz), using the symmetry
// I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges faster. Throws
// std::invalid_argument outside the domain and std::runtime_error if it does not converge.
double regularized_incomplete_beta(double a, double b, double x);

// P(T <= t) for Student's t with `df` > 0 degrees of freedom, via the incomplete beta
// function; above 1e7 df (and at +infinity) the standard normal, within 2e-8 of the t.
// Absolute accuracy about 1e-13 for moderate df. Throws std::invalid_argument if df <= 0 or NaN.
double student_t_cdf(double t, double df);

// The q-quantile (0 < q < 1) of Student's t with `df` degrees of freedom, by bisection on
// student_t_cdf to about 1e-12 relative.
double student_t_quantile(double q, double df);

// Survival function of the Kolmogorov distribution, Q(lambda) = P(K > lambda) =
// 2 sum_{j>=1} (-1)^{j-1} exp(-2 j^2 lambda^2); 1 for lambda <= 0. Uses the dual (theta)
// series below lambda = 1.18 where the alternating series converges slowly.
double kolmogorov_q(double lambda);

struct KsResult {
  size_t n1 = 0, n2 = 0;
  double d = 0;       // sup_x |F1(x) - F2(x)|
  double lambda = 0;  // (sqrt(ne) + 0.12 + 0.11 / sqrt(ne)) * d, ne = n1 n2 / (n1 + n2)
  double p = 1;       // kolmogorov_q(lambda): asymptotic p-value of "same distribution"
};

// Two-sample Kolmogorov-Smirnov test. Tied values (within or across samples) are stepped
// over together, so D is the exact supremum of the difference of the empirical CDFs. The
// p-value is the asymptotic one with Stephens' small-sample correction; it is conservative
// for samples with many ties (discrete data). Throws std::invalid_argument if either sample
// is empty or holds a NaN.
KsResult ks_two_sample(std::vector<double> a, std::vector<double> b);

// Equivalence of means as a ratio: are the predicted and measured means within
// +-margin of each other, i.e. 1 - margin < mu_p / mu_m < 1 + margin?
//
// Two one-sided Welch t-tests on the linear form of the ratio hypothesis:
//   lower:  H0 mu_p - (1 - margin) mu_m <= 0   against  > 0
//   upper:  H0 mu_p - (1 + margin) mu_m >= 0   against  < 0
// with T(r) = (mean_p - r mean_m) / sqrt(var_p / n_p + r^2 var_m / n_m) and the
// Welch-Satterthwaite degrees of freedom of that variance sum. Testing the arithmetic means
// (not log latencies) is deliberate: the gate is about mean latency, and queueing latencies
// are right-skewed, so the ratio of geometric means (what a test on logs measures) can sit
// inside the margin while the ratio of means does not. The means are compared directly, so
// the t-approximation rests on the central limit theorem for the sample means.
//
// The confidence interval (level 1 - 2 alpha, 90% at alpha 0.05) is the set of ratios r
// that neither one-sided test rejects: T(r) is decreasing in r for positive means, and its
// ends solve T(r) = +-t_{1-alpha, df(r)} (Fieller's interval with Welch df). It is clipped
// below at 0; its upper end is +infinity when the measured mean is too uncertain to bound
// the ratio. equivalent == (p < alpha) == (the interval lies inside (1-margin, 1+margin)).
//
// Degenerate cases:
// - A constant sample (a single value, or all values equal to within 1e-12 relative, which
//   absorbs rounding in end - arrival) has zero variance; the Welch statistic then uses the
//   other sample's variance alone and df = n_other - 1 (a one-sample t-test of the other
//   mean against the constant). This is the usual case of a deterministic simulation.
// - Both constant: there is no sampling error, so the test is an exact comparison of the
//   ratio of means with the margin: each p-value is 0 if its bound holds strictly and 1
//   otherwise, df is +infinity, the interval is [ratio, ratio] and `exact` is set.
// Throws std::invalid_argument if a sample is empty or holds a NaN, if the measured mean is
// not positive, or if margin is not in (0, 1) or alpha not in (0, 0.5).
struct TostResult {
  size_t n_predicted = 0, n_measured = 0;
  double mean_predicted = 0, mean_measured = 0;
  double sd_predicted = 0, sd_measured = 0;  // sample standard deviations (n - 1)
  double ratio = 1;                          // mean_predicted / mean_measured
  double margin = 0.10, alpha = 0.05;
  double t_lower = 0, t_upper = 0;    // T(1 - margin), T(1 + margin)
  double df_lower = 0, df_upper = 0;  // their Welch-Satterthwaite df
  double p_lower = 1, p_upper = 1;    // p-values of the two one-sided tests
  double p = 1;                       // max(p_lower, p_upper): the TOST p-value
  double ci_low = 0, ci_high = 0;     // 1 - 2 alpha interval of the ratio
  bool exact = false;                 // both samples constant
  bool equivalent = false;            // p < alpha
};
TostResult tost_ratio(const std::vector<double>& predicted, const std::vector<double>& measured, double margin = 0.10,
                      double alpha = 0.05);

// (predicted - measured) / measured. Throws std::invalid_argument if measured is 0 or NaN.
double relative_error(double predicted, double measured);

// Mean absolute percentage error as a fraction: mean over i of |p_i - m_i| / |m_i|.
// Throws std::invalid_argument if the sizes differ, the input is empty, or a measured
// value is 0.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);

// Time-weighted absolute error: sum |p_i - m_i| / sum |m_i| (each item weighted by its
// measured time). Same preconditions as mape.
double weighted_abs_error(const std::vector<double>& predicted, const std::vector<double>& measured);

// Nearest-rank q-quantile (0 <= q <= 1), the same rule as latency_stats in reports/report.h:
// the ceil(q n)-th smallest value (the smallest for q = 0). Throws std::invalid_argument on
// empty input or q outside [0, 1].
double percentile(std::vector<double> v, double q);

// Median of |v_i| (mean of the two middle values for even sizes); NaN for empty input.
double median_abs(std::vector<double> v);

}  // namespace vlasim
