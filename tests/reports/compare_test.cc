// compare_runs on hand-built runs, and the JSON, Markdown, plot and gate outputs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "reports/compare.h"
#include "scratch.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

constexpr int kVision = static_cast<int>(Stage::Vision);
constexpr int kPrefix = static_cast<int>(Stage::Prefix);
constexpr int kAction = static_cast<int>(Stage::Action);

// A request that arrived at `arrival`, took `latency` seconds (negative: did not finish),
// with a relative deadline (0: none) and the given stage latencies.
RequestRecord request(int model, double arrival, double latency, double deadline, std::map<int, double> stages) {
  static uint64_t next_id = 0;
  RequestRecord q;
  q.id = next_id++;
  q.model = model;
  q.arrival = arrival;
  q.start = arrival;
  q.end = latency >= 0 ? arrival + latency : -1;
  q.deadline = deadline > 0 ? arrival + deadline : 0;
  for (auto [st, sec] : stages) {
    q.stages_done |= static_cast<uint8_t>(1u << st);
    q.stage_latency[st] = sec;
  }
  return q;
}

// Two models. alpha: predicted 4 requests of 10 ms (vision 4 + prefix 6), all within a
// 12.5 ms deadline; measured 5 requests, one unfinished, of 11, 12, 13, 14 ms (vision 4.4
// + prefix 6.6 .. 9.6), two within the deadline. beta: 2 requests of 20 ms (action)
// predicted, 25 ms measured, no deadline. Horizons: 0.4 s predicted, 0.5 s measured.
struct Runs {
  Scenario s;
  Plan p;
  SimResult pred, meas;
  std::vector<OpTime> ops;

  Runs() {
    s.name = "hand";
    for (const char* name : {"alpha", "beta"}) {
      ModelInstance mi;
      mi.name = name;
      s.models.push_back(mi);
      ModelPlan mp;
      mp.model = static_cast<int>(p.models.size());
      mp.alone_seconds = 0.010 * (mp.model + 1);
      Segment seg;  // calibrated run-to-run variation, so predicted tails count
      seg.variability = {0.9, 1.0, 1.1};
      mp.segments.push_back(seg);
      p.models.push_back(mp);
    }
    pred.horizon = 0.4;
    for (int i = 0; i < 4; ++i)
      pred.requests.push_back(request(0, 0.1 * i, 0.010, 0.0125, {{kVision, 0.004}, {kPrefix, 0.006}}));
    pred.requests.push_back(request(1, 0.05, 0.020, 0, {{kAction, 0.020}}));
    pred.requests.push_back(request(1, 0.15, 0.020, 0, {{kAction, 0.020}}));

    meas.horizon = 0.5;
    const double lat[] = {0.011, 0.012, 0.013, 0.014};
    for (int i = 0; i < 4; ++i)
      meas.requests.push_back(request(0, 0.1 * i, lat[i], 0.0125, {{kVision, 0.0044}, {kPrefix, lat[i] - 0.0044}}));
    meas.requests.push_back(request(0, 0.4, -1, 0.0125, {{kVision, 0.0044}}));
    meas.requests.push_back(request(1, 0.05, 0.025, 0, {{kAction, 0.025}}));
    meas.requests.push_back(request(1, 0.15, 0.025, 0, {{kAction, 0.025}}));

    ops = {{"alpha", "op1", "gemm", "prefix", 1.0e-3, 1.25e-3},
           {"alpha", "op2", "gemm", "vision", 2.0e-3, 1.0e-3},
           {"beta", "op3", "norm", "action", 1.0e-4, 1.0e-4},
           {"beta", "op4", "norm", "action", 1.0e-4, 0.0}};
  }

  Comparison compare() const { return compare_runs(s, p, pred, meas, ops); }
};

const StageComparison* find_stage(const ModelComparison& m, const std::string& stage) {
  for (const auto& st : m.stages)
    if (st.stage == stage) return &st;
  return nullptr;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using vlasim::testing::scratch_dir;

TEST(CompareRuns, StageErrorsAreSignedRelativeToMeasuredMeans) {
  Comparison c = Runs().compare();
  ASSERT_EQ(c.models.size(), 2u);
  const ModelComparison& a = c.models[0];
  ASSERT_EQ(a.stages.size(), 2u);
  const StageComparison* vision = find_stage(a, "vision");
  const StageComparison* prefix = find_stage(a, "prefix");
  ASSERT_TRUE(vision && prefix);
  EXPECT_EQ(vision->predicted_count, 4u);
  EXPECT_EQ(vision->measured_count, 4u);  // the unfinished request's vision stage is not counted
  EXPECT_NEAR(vision->mean_s.predicted, 0.004, 1e-15);
  EXPECT_NEAR(vision->mean_s.measured, 0.0044, 1e-15);
  EXPECT_NEAR(vision->mean_s.error, 0.004 / 0.0044 - 1, 1e-12);
  // measured prefix: 6.6, 7.6, 8.6, 9.6 ms -> mean 8.1 ms
  EXPECT_NEAR(prefix->mean_s.measured, 0.0081, 1e-12);
  EXPECT_NEAR(prefix->mean_s.error, 0.006 / 0.0081 - 1, 1e-9);
  EXPECT_NEAR(a.median_abs_stage_error, ((1 - 0.004 / 0.0044) + (1 - 0.006 / 0.0081)) / 2, 1e-9);

  const ModelComparison& b = c.models[1];
  ASSERT_EQ(b.stages.size(), 1u);
  EXPECT_EQ(b.stages[0].stage, "action");
  EXPECT_NEAR(b.stages[0].mean_s.error, -0.2, 1e-12);
  // All stages: |errors| 0.0909, 0.2593, 0.2 -> median 0.2.
  EXPECT_NEAR(c.median_abs_stage_error, 0.2, 1e-12);
}

TEST(CompareRuns, EndToEndErrorsUseNearestRankPercentilesPerModelAndOverall) {
  Comparison c = Runs().compare();
  const EndToEnd& a = c.models[0].e2e;
  EXPECT_NEAR(a.mean_s.predicted, 0.010, 1e-15);
  EXPECT_NEAR(a.mean_s.measured, 0.0125, 1e-15);
  EXPECT_NEAR(a.mean_s.error, -0.2, 1e-12);
  EXPECT_NEAR(a.p50_s.measured, 0.012, 1e-15);  // 2nd of 4
  EXPECT_NEAR(a.p50_s.error, 0.010 / 0.012 - 1, 1e-12);
  EXPECT_NEAR(a.p90_s.measured, 0.014, 1e-15);  // 4th of 4
  EXPECT_NEAR(a.p99_s.error, 0.010 / 0.014 - 1, 1e-12);
  EXPECT_NEAR(c.models[1].e2e.p99_s.error, -0.2, 1e-12);

  // Overall: predicted 10 10 10 10 20 20 ms, measured 11 12 13 14 25 25 ms.
  EXPECT_NEAR(c.overall.mean_s.predicted, 0.080 / 6, 1e-15);
  EXPECT_NEAR(c.overall.mean_s.measured, 0.100 / 6, 1e-15);
  EXPECT_NEAR(c.overall.mean_s.error, -0.2, 1e-12);
  EXPECT_NEAR(c.overall.p50_s.error, 0.010 / 0.013 - 1, 1e-12);  // 3rd of 6
  EXPECT_NEAR(c.overall.p90_s.error, -0.2, 1e-12);               // 6th of 6
}

// A prediction with no run-to-run variation and no spread has no tail: its p90/p99 are n/a
// and the report says why; with variation (or queueing spread) they stand. A measured p99 of
// fewer than 100 requests is flagged as the slowest request.
TEST(CompareRuns, TailsWithoutDataAreNotPrinted) {
  Runs r;
  Comparison varied = r.compare();
  EXPECT_TRUE(varied.models[0].e2e.predicted_tail);
  EXPECT_TRUE(std::isfinite(varied.models[0].e2e.p99_s.predicted));
  EXPECT_FALSE(varied.models[0].e2e.measured_tail);  // 4 measured requests

  for (ModelPlan& mp : r.p.models) mp.segments[0].variability.clear();
  Comparison flat = r.compare();
  const EndToEnd& a = flat.models[0].e2e;
  EXPECT_FALSE(a.predicted_tail);
  EXPECT_TRUE(std::isnan(a.p99_s.predicted));
  EXPECT_TRUE(std::isnan(a.p90_s.error));
  EXPECT_NEAR(a.p99_s.measured, 0.014, 1e-15);
  EXPECT_NEAR(a.p50_s.predicted, 0.010, 1e-15);
  // Overall, the two models' different times are a spread: printed, with a note.
  EXPECT_TRUE(flat.overall.predicted_tail);
  EXPECT_TRUE(std::isfinite(flat.overall.p99_s.predicted));
  const std::string md = compare_markdown(flat);
  EXPECT_NE(md.find("| alpha | p99 latency (ms) | n/a | 14.000 | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("predicted p90/p99 n/a"), std::string::npos) << md;
  EXPECT_NE(md.find("measured p99 of 4 requests is the slowest one"), std::string::npos) << md;
  EXPECT_NE(md.find("from queueing only"), std::string::npos) << md;
}

TEST(CompareRuns, UnfinishedRequestsAreCountedAndMissTheirDeadlines) {
  Comparison c = Runs().compare();
  const EndToEnd& a = c.models[0].e2e;
  EXPECT_EQ(a.predicted_requests, 4u);
  EXPECT_EQ(a.measured_requests, 5u);
  EXPECT_EQ(a.measured_finished, 4u);
  EXPECT_EQ(a.measured_unfinished, 1u);
  EXPECT_EQ(a.predicted_unfinished, 0u);
  EXPECT_EQ(c.overall.measured_unfinished, 1u);
  EXPECT_EQ(c.overall.measured_requests, 7u);
  EXPECT_DOUBLE_EQ(a.measured_deadline_attainment, 2.0 / 5);  // 11 and 12 ms of 12.5 ms
  EXPECT_NEAR(c.overall.measured_deadline_attainment, 4.0 / 7, 1e-15);
}

TEST(CompareRuns, ThroughputAndDeadlineAttainmentDifferences) {
  Comparison c = Runs().compare();
  const EndToEnd& a = c.models[0].e2e;
  EXPECT_NEAR(a.throughput_hz.predicted, 4 / 0.4, 1e-12);
  EXPECT_NEAR(a.throughput_hz.measured, 4 / 0.5, 1e-12);
  EXPECT_NEAR(a.throughput_hz.error, 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(a.predicted_deadline_attainment, 1.0);
  EXPECT_NEAR(a.deadline_difference_pp, 60.0, 1e-12);
  EXPECT_NEAR(c.models[1].e2e.deadline_difference_pp, 0.0, 1e-12);
}

TEST(CompareRuns, OperatorErrorsOverallByKindAndTimeWeighted) {
  Comparison c = Runs().compare();
  ASSERT_EQ(c.ops.size(), 3u);
  ASSERT_EQ(c.ops_skipped.size(), 1u);
  EXPECT_EQ(c.ops_skipped[0].op, "op4");
  EXPECT_NEAR(c.ops[0].error, -0.2, 1e-12);
  EXPECT_NEAR(c.ops[1].error, 1.0, 1e-12);
  EXPECT_NEAR(c.op_mape, 1.2 / 3, 1e-12);
  EXPECT_NEAR(c.op_weighted_error, 1.25e-3 / 2.35e-3, 1e-12);
  ASSERT_EQ(c.kinds.size(), 2u);
  EXPECT_EQ(c.kinds[0].kind, "gemm");
  EXPECT_EQ(c.kinds[0].ops, 2u);
  EXPECT_NEAR(c.kinds[0].mape, 0.6, 1e-12);
  EXPECT_NEAR(c.kinds[0].weighted_error, 1.25e-3 / 2.25e-3, 1e-12);
  EXPECT_NEAR(c.kinds[0].bias, 3.0e-3 / 2.25e-3 - 1, 1e-12);
  EXPECT_EQ(c.kinds[1].kind, "norm");
  EXPECT_NEAR(c.kinds[1].mape, 0.0, 1e-15);
}

TEST(CompareRuns, LatencyTestsRunPerModelOnFinishedRequests) {
  Comparison c = Runs().compare();
  const ModelComparison& a = c.models[0];
  ASSERT_TRUE(a.tested);
  EXPECT_EQ(a.ks.n1, 4u);
  EXPECT_EQ(a.ks.n2, 4u);  // the unfinished request is left out
  EXPECT_EQ(a.ks.d, 1.0);  // every prediction is below every measurement
  EXPECT_NEAR(a.tost.ratio, 0.8, 1e-12);
  EXPECT_FALSE(a.tost.equivalent);
  const ModelComparison& b = c.models[1];
  ASSERT_TRUE(b.tested);
  EXPECT_TRUE(b.tost.exact);  // both runs constant: 20 vs 25 ms
  EXPECT_FALSE(b.tost.equivalent);
}

TEST(CompareRuns, ModelWithoutFinishedRequestsIsReportedNotTested) {
  Runs r;
  for (auto& q : r.meas.requests)
    if (q.model == 1) q.end = -1;
  Comparison c = r.compare();
  EXPECT_FALSE(c.models[1].tested);
  EXPECT_EQ(c.models[1].not_tested, "no finished request in the measured run");
  EXPECT_EQ(c.models[1].e2e.measured_unfinished, 2u);
  EXPECT_TRUE(std::isnan(c.models[1].e2e.p50_s.measured));
  EXPECT_TRUE(std::isnan(c.models[1].e2e.p50_s.error));
}

TEST(CompareRuns, RequestNamingAnUnknownModelThrows) {
  Runs r;
  r.meas.requests[0].model = 7;
  EXPECT_THROW(r.compare(), std::invalid_argument);
}

TEST(CompareJson, IdenticalInputGivesByteIdenticalFiles) {
  fs::path dir = scratch_dir("json");
  write_compare_json(Runs().compare(), (dir / "a.json").string());
  write_compare_json(Runs().compare(), (dir / "b.json").string());
  const std::string a = read_file(dir / "a.json");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, read_file(dir / "b.json"));
}

TEST(CompareJson, KeysComeInAFixedOrderAndMissingFiguresAreNull) {
  fs::path dir = scratch_dir("json_keys");
  Runs r;
  for (auto& q : r.meas.requests)
    if (q.model == 1) q.end = -1;
  write_compare_json(r.compare(), (dir / "c.json").string());
  auto j = nlohmann::ordered_json::parse(read_file(dir / "c.json"));
  std::vector<std::string> keys;
  for (auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"vlasim_compare", "scenario", "margin", "overall", "models", "operators"}));
  EXPECT_TRUE(j["models"][1]["end_to_end"]["latency_s"]["p50"]["measured"].is_null());
  EXPECT_EQ(j["models"][1]["not_tested"], "no finished request in the measured run");
  EXPECT_NEAR(j["models"][0]["stages"][0]["mean_s"]["error"].get<double>(), 0.004 / 0.0044 - 1, 1e-12);
  EXPECT_EQ(j["operators"]["skipped"].size(), 1u);
  EXPECT_EQ(j["models"][0]["end_to_end"]["unfinished"]["measured"], 1);
}

TEST(CompareJson, UnwritablePathThrowsNamingIt) {
  try {
    write_compare_json(Runs().compare(), "/nonexistent_dir_vlasim/x.json");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_vlasim/x.json"), std::string::npos);
  }
}

TEST(CompareMarkdown, HasEveryTableAndTheVerdicts) {
  const std::string md = compare_markdown(Runs().compare());
  for (const char* heading :
       {"## End to end", "## Per stage", "## Operators", "### Worst 3 operators", "## Tests on end-to-end latency"})
    EXPECT_NE(md.find(heading), std::string::npos) << heading;
  EXPECT_NE(md.find("| alpha | mean latency (ms) | 10.000 | 12.500 | -20.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| alpha | deadline attainment | 100.0% | 40.0% | +60.0 pp |"), std::string::npos) << md;
  EXPECT_NE(md.find("| beta | action | 2 / 2 | 20.000 | 25.000 | -20.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| gemm | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("distributions differ"), std::string::npos);
  EXPECT_NE(md.find("not shown equivalent (exact: both constant)"), std::string::npos) << md;
  EXPECT_NE(md.find("Unfinished requests"), std::string::npos);
  // The worst operator (op2, +100%) is listed first.
  const size_t worst = md.find("### Worst");
  EXPECT_LT(md.find("| op2 |", worst), md.find("| op1 |", worst));
}

bool gnuplot_on_path() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

TEST(ComparePlots, WritesScatterAndPerModelCdfSvgsWithGnuplot) {
  if (!gnuplot_on_path()) GTEST_SKIP() << "gnuplot is not on PATH";
  fs::path dir = scratch_dir("plots");
  std::vector<std::string> warnings;
  std::vector<std::string> svgs = write_compare_plots(Runs().compare(), dir.string(), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_EQ(svgs.size(), 3u);
  EXPECT_EQ(fs::path(svgs[0]).filename(), "ops_scatter.svg");
  EXPECT_EQ(fs::path(svgs[1]).filename(), "latency_cdf_alpha.svg");
  EXPECT_EQ(fs::path(svgs[2]).filename(), "latency_cdf_beta.svg");
  for (const auto& svg : svgs) {
    const std::string text = read_file(svg);
    EXPECT_NE(text.find("<svg"), std::string::npos) << svg;
    EXPECT_NE(text.find("</svg>"), std::string::npos) << svg;
  }
  EXPECT_TRUE(fs::exists(dir / "ops_scatter.gp"));
  EXPECT_TRUE(fs::exists(dir / "latency_cdf_alpha_measured.dat"));
}

TEST(ComparePlots, MissingGnuplotGivesAWarningAndNoPlots) {
  fs::path dir = scratch_dir("no_gnuplot");
  fs::path empty_bin = dir / "bin";
  fs::create_directories(empty_bin);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", empty_bin.c_str(), 1);
  std::vector<std::string> warnings;
  std::vector<std::string> svgs = write_compare_plots(Runs().compare(), (dir / "plots").string(), &warnings);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_TRUE(svgs.empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("gnuplot"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "plots"));
}

TEST(ComparePlots, GnuplotFailureNamesTheScriptAndKeepsTheOtherPlots) {
  if (!gnuplot_on_path()) GTEST_SKIP() << "gnuplot is not on PATH";
  // A fake gnuplot first on PATH that fails on the scatter script and defers otherwise.
  fs::path dir = scratch_dir("gnuplot_fails");
  fs::path bin = dir / "bin";
  fs::create_directories(bin);
  const std::string real = [] {
    FILE* p = ::popen("command -v gnuplot", "r");
    char buf[512] = {};
    std::fgets(buf, sizeof buf, p);
    ::pclose(p);
    std::string s = buf;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }();
  {
    std::ofstream fake(bin / "gnuplot");
    fake << "#!/bin/sh\ncase \"$1\" in *ops_scatter.gp) echo 'line 1: boom' >&2; exit 1;; esac\nexec '" << real
         << "' \"$@\"\n";
  }
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  const std::string saved = std::getenv("PATH");
  ::setenv("PATH", (bin.string() + ":" + saved).c_str(), 1);
  std::vector<std::string> warnings;
  std::vector<std::string> svgs = write_compare_plots(Runs().compare(), (dir / "plots").string(), &warnings);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(svgs.size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find((dir / "plots" / "ops_scatter.gp").string()), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("boom"), std::string::npos) << warnings[0];
}

TEST(WithinBounds, PassesWhenEveryErrorIsInsideItsBound) {
  Runs r;
  r.meas = r.pred;  // a perfect prediction
  std::string why = "stale";
  Bounds b;
  b.require_equivalence = true;
  EXPECT_TRUE(within_bounds(r.compare(), b, &why)) << why;
  EXPECT_EQ(why, "");
}

TEST(WithinBounds, ListsEveryExceededBoundWithItsFigure) {
  Bounds b;
  b.p99_error = 0.25;
  b.require_equivalence = true;
  std::string why;
  EXPECT_FALSE(within_bounds(Runs().compare(), b, &why));
  // alpha: median stage 17.5%, p50 -16.7%, p99 -28.6%, ratio 0.8; beta: median stage and
  // p50 -20% (p99 -20% holds), ratio 0.8; all models: p50 -23.1% (p99 -20% holds).
  EXPECT_NE(why.find("model alpha: median |stage error| +17.5% exceeds 10.0%"), std::string::npos) << why;
  EXPECT_NE(why.find("model alpha: p50 latency error -16.7% exceeds 10.0%"), std::string::npos) << why;
  EXPECT_NE(why.find("model alpha: p99 latency error -28.6% exceeds 25.0%"), std::string::npos) << why;
  EXPECT_NE(why.find("model alpha: mean latency ratio 0.8000"), std::string::npos) << why;
  EXPECT_NE(why.find("model beta: median |stage error| +20.0% exceeds 10.0%"), std::string::npos) << why;
  EXPECT_NE(why.find("model beta: p50 latency error -20.0% exceeds 10.0%"), std::string::npos) << why;
  EXPECT_NE(why.find("model beta: mean latency ratio 0.8000"), std::string::npos) << why;
  EXPECT_NE(why.find("all models: p50 latency error -23.1% exceeds 10.0%"), std::string::npos) << why;
  EXPECT_EQ(std::count(why.begin(), why.end(), '\n'), 8) << why;
}

}  // namespace
}  // namespace vlasim
