// Statistics against closed forms, published quantiles and hand-computed examples.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "reports/report.h"
#include "reports/stats.h"

namespace vlasim {
namespace {

// Kolmogorov survival function by its alternating series, summed far enough (fine for
// lambda >= 0.3): an independent check of kolmogorov_q.
double kolmogorov_q_series(double lambda) {
  double sum = 0;
  for (int j = 1; j <= 200; ++j) sum += (j % 2 ? 2 : -2) * std::exp(-2.0 * j * j * lambda * lambda);
  return sum;
}

TEST(IncompleteBeta, MatchesClosedForms) {
  for (double x : {0.0, 0.05, 0.3, 0.5, 0.77, 0.99, 1.0}) {
    EXPECT_NEAR(regularized_incomplete_beta(3.5, 1, x), std::pow(x, 3.5), 1e-13) << x;
    EXPECT_NEAR(regularized_incomplete_beta(1, 4.25, x), 1 - std::pow(1 - x, 4.25), 1e-13) << x;
    EXPECT_NEAR(regularized_incomplete_beta(2, 2, x), 3 * x * x - 2 * x * x * x, 1e-13) << x;
  }
}

TEST(IncompleteBeta, IsSymmetricUnderSwappingArguments) {
  for (double x : {0.1, 0.4, 0.6, 0.9})
    EXPECT_NEAR(regularized_incomplete_beta(5.5, 3.2, x), 1 - regularized_incomplete_beta(3.2, 5.5, 1 - x), 1e-13);
}

TEST(IncompleteBeta, RejectsArgumentsOutsideItsDomain) {
  EXPECT_THROW(regularized_incomplete_beta(0, 1, 0.5), std::invalid_argument);
  EXPECT_THROW(regularized_incomplete_beta(1, -1, 0.5), std::invalid_argument);
  EXPECT_THROW(regularized_incomplete_beta(1, 1, 1.5), std::invalid_argument);
}

TEST(StudentT, CdfMatchesTableQuantiles) {
  EXPECT_NEAR(student_t_cdf(2.228, 10), 0.975, 1e-4);
  EXPECT_NEAR(student_t_cdf(1.812, 10), 0.95, 1e-4);
  EXPECT_NEAR(student_t_cdf(4.032, 5), 0.995, 1e-4);
  EXPECT_NEAR(student_t_cdf(1.697, 30), 0.95, 1e-4);
  EXPECT_DOUBLE_EQ(student_t_cdf(0, 7), 0.5);
}

TEST(StudentT, CdfMatchesClosedFormsForOneTwoAndThreeDegreesOfFreedom) {
  for (double t : {-30.0, -3.0, -0.5, 0.0, 0.7, 2.5, 12.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / std::numbers::pi, 1e-13) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-13) << t;
    const double u = t / std::sqrt(3.0);
    EXPECT_NEAR(student_t_cdf(t, 3), 0.5 + (u / (1 + u * u) + std::atan(u)) / std::numbers::pi, 1e-13) << t;
  }
}

TEST(StudentT, LargeDegreesOfFreedomApproachTheNormal) {
  auto normal = [](double t) { return 0.5 * std::erfc(-t / std::sqrt(2.0)); };
  for (double t : {-2.5, -1.0, 0.3, 1.96}) {
    EXPECT_NEAR(student_t_cdf(t, 1e6), normal(t), 1e-6) << t;
    EXPECT_DOUBLE_EQ(student_t_cdf(t, std::numeric_limits<double>::infinity()), normal(t));
  }
  EXPECT_NEAR(student_t_cdf(1.959964, 1e7), 0.975, 1e-6);
  // The switch to the normal above 1e7 df is seamless.
  EXPECT_NEAR(student_t_cdf(1.96, 1e7), student_t_cdf(1.96, 1.0001e7), 3e-8);
}

TEST(StudentT, CdfIsSymmetricAndRejectsNonPositiveDf) {
  EXPECT_NEAR(student_t_cdf(-1.3, 4.5) + student_t_cdf(1.3, 4.5), 1.0, 1e-14);
  EXPECT_THROW(student_t_cdf(1, 0), std::invalid_argument);
  EXPECT_THROW(student_t_cdf(1, -3), std::invalid_argument);
}

TEST(StudentT, QuantileInvertsTheCdf) {
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228139, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.95, 30), 1.697261, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.05, 30), -1.697261, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, std::numeric_limits<double>::infinity()), 1.959964, 1e-6);
  for (double q : {0.6, 0.9, 0.999}) EXPECT_NEAR(student_t_cdf(student_t_quantile(q, 3.7), 3.7), q, 1e-11);
}

TEST(Kolmogorov, SurvivalMatchesPublishedCriticalValues) {
  EXPECT_NEAR(kolmogorov_q(1.2238), 0.10, 1e-4);
  EXPECT_NEAR(kolmogorov_q(1.3581), 0.05, 1e-4);
  EXPECT_NEAR(kolmogorov_q(1.6276), 0.01, 1e-4);
  EXPECT_EQ(kolmogorov_q(0), 1.0);
}

TEST(Kolmogorov, BothSeriesAgreeWithTheAlternatingSumAndJoinAt1_18) {
  for (double l : {0.3, 0.5, 0.8, 1.0, 1.17, 1.19, 1.5, 2.0, 3.0})
    EXPECT_NEAR(kolmogorov_q(l), kolmogorov_q_series(l), 1e-12) << l;
  EXPECT_NEAR(kolmogorov_q(1.18 - 1e-12), kolmogorov_q(1.18 + 1e-12), 1e-11);
}

TEST(KsTwoSample, IdenticalSamplesGiveZeroDistanceAndPOne) {
  std::vector<double> a = {0.3, 0.1, 0.2, 0.5, 0.4};
  KsResult r = ks_two_sample(a, a);
  EXPECT_EQ(r.d, 0.0);
  EXPECT_EQ(r.p, 1.0);
}

TEST(KsTwoSample, SeparatedSamplesGiveDistanceOneAndTinyP) {
  std::vector<double> a, b;
  for (int i = 0; i < 20; ++i) {
    a.push_back(1.0 + 0.01 * i);
    b.push_back(2.0 + 0.01 * i);
  }
  KsResult r = ks_two_sample(a, b);
  EXPECT_EQ(r.d, 1.0);
  // ne = 10, lambda = sqrt(10) + 0.12 + 0.11 / sqrt(10) = 3.317; Q = 2 exp(-2 lambda^2) ~ 5e-10.
  EXPECT_NEAR(r.lambda, std::sqrt(10.0) + 0.12 + 0.11 / std::sqrt(10.0), 1e-12);
  EXPECT_LT(r.p, 1e-8);
  EXPECT_GT(r.p, 0.0);
}

TEST(KsTwoSample, InterleavedTextbookExampleByHand) {
  // a = .1 .4 .7, b = .2 .3 .5 .6 .8 .9. F_a - F_b after each value:
  // .1: 1/3-0  .2: 1/3-1/6  .3: 1/3-2/6  .4: 2/3-2/6  .5: 2/3-3/6  .6: 2/3-4/6  .7: 1-4/6 ...
  // so D = 1/3; ne = 18 / 9 = 2; lambda = (sqrt 2 + 0.12 + 0.11 / sqrt 2) / 3 = 0.53733.
  KsResult r = ks_two_sample({0.7, 0.1, 0.4}, {0.9, 0.2, 0.3, 0.5, 0.6, 0.8});
  EXPECT_NEAR(r.d, 1.0 / 3, 1e-15);
  EXPECT_NEAR(r.lambda, 0.5373317694, 1e-9);
  EXPECT_NEAR(r.p, 0.9349657685, 1e-9);
  EXPECT_EQ(r.n1, 3u);
  EXPECT_EQ(r.n2, 6u);
}

TEST(KsTwoSample, TiesAcrossSamplesAreSteppedOverTogether) {
  // Values 1 2 3 4: F_a = .25 .75 1 1, F_b = 0 .75 .75 1 -> D = .25. Stepping through the
  // tied 2s one sample at a time would report .75.
  KsResult r = ks_two_sample({1, 2, 2, 3}, {2, 2, 2, 4});
  EXPECT_NEAR(r.d, 0.25, 1e-15);
  EXPECT_EQ(ks_two_sample({2, 2, 2, 4}, {1, 2, 2, 3}).d, r.d);
}

TEST(KsTwoSample, EmptyOrNanSampleThrows) {
  EXPECT_THROW(ks_two_sample({}, {1.0}), std::invalid_argument);
  EXPECT_THROW(ks_two_sample({1.0}, {}), std::invalid_argument);
  EXPECT_THROW(ks_two_sample({1.0, std::nan("")}, {1.0}), std::invalid_argument);
}

// n values spread evenly (deterministic) around `mean` with standard deviation about `spread`.
std::vector<double> spread_sample(double mean, double spread, int n, double phase = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(mean + spread * std::sqrt(2.0) * std::sin(0.7 * i + phase));
  return v;
}

TEST(Tost, MeansOnePercentApartWithSmallVarianceAreEquivalent) {
  TostResult r = tost_ratio(spread_sample(1.01, 0.02, 50), spread_sample(1.00, 0.02, 60, 1.0));
  EXPECT_TRUE(r.equivalent);
  EXPECT_LT(r.p, 0.05);
  EXPECT_EQ(r.p, std::max(r.p_lower, r.p_upper));
  EXPECT_GT(r.ci_low, 0.9);
  EXPECT_LT(r.ci_high, 1.1);
  EXPECT_FALSE(r.exact);
}

TEST(Tost, MeansTwentyPercentApartAreNotEquivalent) {
  TostResult r = tost_ratio(spread_sample(1.20, 0.02, 50), spread_sample(1.00, 0.02, 60, 1.0));
  EXPECT_FALSE(r.equivalent);
  EXPECT_GT(r.p_upper, 0.95);  // strong evidence the ratio is above 1.1
  EXPECT_GT(r.ci_low, 1.1);
}

TEST(Tost, CloseMeansWithLargeVarianceAreNotShownEquivalent) {
  TostResult r = tost_ratio(spread_sample(1.01, 0.5, 10), spread_sample(1.00, 0.5, 10, 1.0));
  EXPECT_FALSE(r.equivalent);
  EXPECT_LT(r.ci_low, 0.9);
  EXPECT_GT(r.ci_high, 1.1);
}

TEST(Tost, ConstantPredictionIsAOneSampleTestOnTheMeasuredMean) {
  // measured 0.9 1.0 1.1 1.0: mean 1, variance 0.02 / 3, standard error sqrt(0.02 / 12).
  // T(r) = (1 - r) / (r se), df = 3.
  const double se = std::sqrt(0.02 / 12);
  TostResult r = tost_ratio({1, 1, 1, 1}, {0.9, 1.0, 1.1, 1.0});
  EXPECT_DOUBLE_EQ(r.sd_predicted, 0.0);
  EXPECT_NEAR(r.df_lower, 3, 1e-12);
  EXPECT_NEAR(r.df_upper, 3, 1e-12);
  EXPECT_NEAR(r.t_lower, 0.1 / (0.9 * se), 1e-12);
  EXPECT_NEAR(r.t_upper, -0.1 / (1.1 * se), 1e-12);
  auto cdf3 = [](double t) {
    const double u = t / std::sqrt(3.0);
    return 0.5 + (u / (1 + u * u) + std::atan(u)) / std::numbers::pi;
  };
  EXPECT_NEAR(r.p_lower, cdf3(-0.1 / (0.9 * se)), 1e-12);
  EXPECT_NEAR(r.p_upper, cdf3(-0.1 / (1.1 * se)), 1e-12);
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.equivalent, r.p < 0.05);
}

TEST(Tost, BothConstantComparesTheMeansExactly) {
  TostResult in = tost_ratio({1.05, 1.05}, {1.0, 1.0, 1.0});
  EXPECT_TRUE(in.exact);
  EXPECT_TRUE(in.equivalent);
  EXPECT_EQ(in.p, 0.0);
  EXPECT_DOUBLE_EQ(in.ci_low, 1.05);
  EXPECT_DOUBLE_EQ(in.ci_high, 1.05);
  EXPECT_TRUE(std::isinf(in.df_lower));

  TostResult out = tost_ratio({1.15}, {1.0});
  EXPECT_TRUE(out.exact);
  EXPECT_FALSE(out.equivalent);
  EXPECT_EQ(out.p_lower, 0.0);
  EXPECT_EQ(out.p_upper, 1.0);
}

TEST(Tost, IntervalEndsAreWhereTheOneSidedTestsReachAlpha) {
  // Re-testing with the margin set to an interval end puts that one-sided p-value at alpha.
  const auto a = spread_sample(1.03, 0.05, 25), b = spread_sample(1.00, 0.08, 40, 0.5);
  TostResult r = tost_ratio(a, b);
  ASSERT_LT(r.ci_low, r.ratio);
  ASSERT_GT(r.ci_high, r.ratio);
  EXPECT_NEAR(tost_ratio(a, b, 1 - r.ci_low).p_lower, 0.05, 1e-9);
  EXPECT_NEAR(tost_ratio(a, b, r.ci_high - 1).p_upper, 0.05, 1e-9);
  EXPECT_EQ(r.equivalent, r.ci_low > 0.9 && r.ci_high < 1.1);
}

TEST(Tost, RejectsEmptySamplesNonPositiveMeasuredMeanAndBadMargin) {
  EXPECT_THROW(tost_ratio({}, {1.0}), std::invalid_argument);
  EXPECT_THROW(tost_ratio({1.0}, {}), std::invalid_argument);
  EXPECT_THROW(tost_ratio({1.0}, {0.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(tost_ratio({1.0}, {1.0}, 0.0), std::invalid_argument);
  EXPECT_THROW(tost_ratio({1.0}, {1.0}, 0.1, 0.6), std::invalid_argument);
}

TEST(Errors, RelativeErrorIsSignedAgainstMeasured) {
  EXPECT_NEAR(relative_error(1.1, 1.0), 0.1, 1e-15);
  EXPECT_NEAR(relative_error(0.8, 1.0), -0.2, 1e-15);
  EXPECT_THROW(relative_error(1.0, 0.0), std::invalid_argument);
}

TEST(Errors, MapeAndTimeWeightedErrorByHand) {
  // |errors| 0.1, 0.1, 0.5 -> MAPE 0.7 / 3; absolute misses 0.1 + 0.1 + 2 over 6 s measured.
  const std::vector<double> p = {1.1, 0.9, 2.0}, m = {1, 1, 4};
  EXPECT_NEAR(mape(p, m), 0.7 / 3, 1e-15);
  EXPECT_NEAR(weighted_abs_error(p, m), 2.2 / 6, 1e-15);
  EXPECT_THROW(mape({1.0}, {1.0, 2.0}), std::invalid_argument);
  EXPECT_THROW(mape({}, {}), std::invalid_argument);
  EXPECT_THROW(mape({1.0}, {0.0}), std::invalid_argument);
}

TEST(Percentile, AgreesWithLatencyStatsNearestRank) {
  std::vector<double> v;
  for (int i = 0; i < 37; ++i) v.push_back(std::fmod(i * 7.3, 11.0));
  LatencyStats s = latency_stats(v);
  EXPECT_EQ(percentile(v, 0.50), s.p50);
  EXPECT_EQ(percentile(v, 0.90), s.p90);
  EXPECT_EQ(percentile(v, 0.99), s.p99);
  EXPECT_EQ(percentile(v, 1.0), s.max);
  EXPECT_EQ(percentile(v, 0.0), *std::min_element(v.begin(), v.end()));
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0.5), 2);  // ceil(0.5 * 4) = 2nd smallest
  EXPECT_THROW(percentile({}, 0.5), std::invalid_argument);
}

TEST(Percentile, MedianOfAbsoluteValuesAveragesTheMiddlePair) {
  EXPECT_DOUBLE_EQ(median_abs({-0.3, 0.1, 0.2}), 0.2);
  EXPECT_DOUBLE_EQ(median_abs({-0.3, 0.1, 0.2, -0.4}), 0.25);
  EXPECT_TRUE(std::isnan(median_abs({})));
}

}  // namespace
}  // namespace vlasim
