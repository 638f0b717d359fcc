// Scenarios end to end: broken files fail precisely, shipped files run, reports repeat.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <fstream>
#include <sstream>

#include "reports/report.h"
#include "scenarios/scenario.h"
#include "sim/costs/cost_models.h"
#include "sim/engine/engine.h"
#include "sim/engine/lockstep.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"
#include "scratch.h"

namespace fs = std::filesystem;

namespace vlasim {
namespace {

const std::string kRoot = VLASIM_SOURCE_DIR;

// Loads, plans and simulates a scenario file as `vlasim simulate` does.
struct ScenarioRun {
  Scenario s;
  Plan plan;
  SimResult result;
};
ScenarioRun run_file(const std::string& path, bool simulate_too = true) {
  ScenarioRun r;
  r.s = load_scenario(path, default_catalog_dir(), default_cards_dir());
  resolve_auto_dtypes(r.s, DType::BF16);  // `vlasim` gives this CPU's; a fixed one keeps reports stable
  auto cost = cost_models().make(r.s.cost_model.name, r.s.cost_model.params, r.s.cost_model.where);
  r.plan = make_plan(r.s, *cost, std::vector<int>(r.s.models.size(), 1));
  resolve_stream_loads(r.s, r.plan);
  if (simulate_too) r.result = simulate(r.s, r.plan);
  return r;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The "# expect-KEY: value" header lines of a broken scenario.
std::map<std::string, std::string> expectations(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream in(read(path));
  std::string line;
  while (std::getline(in, line) && line.rfind("# expect-", 0) == 0) {
    auto colon = line.find(':');
    out[line.substr(9, colon - 9)] = line.substr(colon + 2);
  }
  return out;
}

TEST(Scenario, EveryBrokenFileFailsWithFileLineAndKey) {
  int checked = 0;
  for (auto& e : fs::directory_iterator(kRoot + "/tests/data/broken_scenarios")) {
    std::string path = e.path().string();
    SCOPED_TRACE(path);
    auto want = expectations(path);
    try {
      run_file(path, false);
      ADD_FAILURE() << "accepted a broken scenario";
    } catch (const ConfigError& err) {
      std::string what = err.what();
      EXPECT_EQ(err.file(), path) << what;
      if (want.count("key")) {
        EXPECT_EQ(err.key(), want["key"]) << what;
      }
      if (want.count("line")) {
        EXPECT_EQ(err.line(), std::stoi(want["line"])) << what;
      }
      if (want.count("text")) {
        EXPECT_NE(what.find(want["text"]), std::string::npos) << what;
      }
      if (want.count("key")) {
        EXPECT_GT(err.line(), 0) << what;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 15);
}

TEST(Scenario, MemoryThatDoesNotFitSaysByHowMuch) {
  try {
    run_file(kRoot + "/tests/data/broken_scenarios/does_not_fit.yaml", false);
    FAIL();
  } catch (const ConfigError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("gpu0"), std::string::npos);
    EXPECT_NE(w.find("needs"), std::string::npos);
    EXPECT_NE(w.find("over by"), std::string::npos);
  }
}

TEST(Scenario, EveryShippedScenarioLoadsAndSimulates) {
  std::vector<std::string> files;
  for (const char* dir : {"/scenarios", "/scenarios/systems", "/scenarios/gpu_check"})
    for (auto& e : fs::directory_iterator(kRoot + dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  ASSERT_GE(files.size(), 4u);
  for (auto& f : files) {
    SCOPED_TRACE(f);
    ScenarioRun r = run_file(f, false);
    // Two seconds of each stream's arrivals are enough to see it run (the sanitizer builds run
    // this test too).
    for (StreamDecl& sd : r.s.streams) sd.duration_s = std::min(sd.duration_s, 2.0);
    r.result = simulate(r.s, r.plan);
    size_t finished = 0;
    for (auto& q : r.result.requests) finished += q.finished();
    EXPECT_GT(r.result.requests.size(), 0u);
    EXPECT_GT(finished, 0u);
  }
}

TEST(Scenario, SameScenarioAndSeedGiveByteIdenticalJson) {
  std::string dir = testing::scratch_dir("determinism").string();
  std::string a = dir + "/a.json", b = dir + "/b.json";
  for (const std::string& out : {a, b}) {
    ScenarioRun r = run_file(kRoot + "/scenarios/default.yaml");
    write_json(make_report(r.s, r.plan, r.result, "simulate"), out);
  }
  EXPECT_EQ(read(a), read(b));
  EXPECT_GT(read(a).size(), 500u);
}

TEST(Scenario, DifferentSeedsChangeJitteredArrivals) {
  ScenarioRun r1 = run_file(kRoot + "/scenarios/default.yaml");
  Scenario s2 = r1.s;
  s2.seed = r1.s.seed + 1;
  SimResult r2 = simulate(s2, r1.plan);
  ASSERT_EQ(r1.result.requests.size(), r2.requests.size());
  EXPECT_NE(r1.result.requests[1].arrival, r2.requests[1].arrival);
}

TEST(Scenario, ReportHasEveryMetric) {
  ScenarioRun r = run_file(kRoot + "/scenarios/pi0_rtx4090.yaml");
  Report rep = make_report(r.s, r.plan, r.result, "simulate");
  ASSERT_EQ(rep.models.size(), 1u);
  const ModelMetrics& m = rep.models[0];
  EXPECT_GT(m.latency.p50, 0);
  EXPECT_LE(m.latency.p50, m.latency.p90);
  EXPECT_LE(m.latency.p90, m.latency.p99);
  EXPECT_LE(m.latency.p99, m.latency.max);
  EXPECT_GT(m.stage[static_cast<int>(Stage::Vision)].count, 0u);
  EXPECT_GT(m.stage[static_cast<int>(Stage::Prefix)].count, 0u);
  EXPECT_GT(m.stage[static_cast<int>(Stage::Action)].count, 0u);
  EXPECT_GT(m.throughput_hz, 0);
  ASSERT_FALSE(rep.devices.empty());
  EXPECT_GT(rep.devices[0].busy, 0);
  EXPECT_GT(rep.devices[0].memory.weights, 1e9);  // pi0 is ~3.3B parameters in bf16
}

TEST(LatencyStats, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  LatencyStats s = latency_stats(v);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p90, 90);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
}

// Work is estimated before a run and refused over the limits, at the stream's entry, naming
// the option that raises the limit; models whose graph would pass kMaxGraphOps are refused
// at the model.
TEST(Scenario, RunsOverTheWorkLimitsAreRefusedBeforeTheyStart) {
  const std::string base = read(kRoot + "/scenarios/default.yaml");
  auto load = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    ScenarioRun r;
    r.s = load_scenario_text(text, "edited.yaml", default_catalog_dir(), default_cards_dir());
    resolve_auto_dtypes(r.s, DType::F32);
    auto cost = cost_models().make(r.s.cost_model.name, r.s.cost_model.params, r.s.cost_model.where);
    r.plan = make_plan(r.s, *cost, std::vector<int>(r.s.models.size(), 1));
    return r;
  };
  ScenarioRun fast = load("rate_hz: 5, jitter_ms: 2", "rate_hz: 1e9");
  try {
    simulate(fast.s, fast.plan);
    FAIL() << "6e9 requests accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "workload[0]") << e.what();
    EXPECT_NE(std::string(e.what()).find("--max-requests"), std::string::npos) << e.what();
  }
  SimOptions roomy;
  roomy.max_requests = 1e11;
  try {
    simulate(fast.s, fast.plan, roomy);
    FAIL() << "1.2 TB of records accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--max-memory-gb"), std::string::npos) << e.what();
  }
  SimWork w = estimate_work(fast.s, fast.plan, 0);
  EXPECT_NEAR(w.requests, 2e10, 1e7);
  try {
    load("prompt: 0", "prompt: 0\n    steps: 100000");
    FAIL() << "a 15 M-op graph accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "models[0]") << e.what();
    EXPECT_NE(std::string(e.what()).find("100000 steps"), std::string::npos) << e.what();
  }
}

// A stream whose period is below the clock's tick (a picosecond; a nanosecond when the run
// spans past 9.2e6 s) is refused at its rate_hz, naming the tick; one just above it loads.
TEST(Scenario, ARatePastTheClocksTickIsRefusedAtItsKey) {
  const std::string base = read(kRoot + "/scenarios/default.yaml");
  auto load = [&](const std::string& workload, const std::string& extra = "") {
    std::string text = base;
    const std::string from = "rate_hz: 5, jitter_ms: 2, deadline_ms: 200, duration_s: 20";
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, from.size(), workload);
    return load_scenario_text(text + extra, "edited.yaml", default_catalog_dir(), default_cards_dir());
  };
  auto refused = [&](const std::string& workload, const std::string& extra, const std::string& tick) {
    SCOPED_TRACE(workload + " " + extra);
    try {
      load(workload, extra);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "workload[0].rate_hz") << e.what();
      EXPECT_EQ(e.file(), "edited.yaml");
      EXPECT_GT(e.line(), 0);
      EXPECT_NE(std::string(e.what()).find(tick), std::string::npos) << e.what();
    }
  };
  refused("rate_hz: 1e13, duration_s: 1e-12", "", "1e-12 s");
  refused("rate_hz: 2e9, duration_s: 1e-6", "drain_s: 1e7\n", "1e-09 s");
  EXPECT_NO_THROW(load("rate_hz: 1e9, duration_s: 1e-6"));  // 1 ns: a thousand ticks
}

// jitter_pct is refused at its own key beside jitter_ms, and at 50% of the period or more;
// under it the stream loads with the jitter in seconds.
TEST(Scenario, JitterPctIsRefusedWithJitterMsOrAtHalfThePeriod) {
  const std::string base = read(kRoot + "/scenarios/default.yaml");
  const std::string from = "rate_hz: 5, jitter_ms: 2, deadline_ms: 200, duration_s: 20";
  auto load = [&](const std::string& workload) {
    std::string text = base;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, from.size(), workload);
    return load_scenario_text(text, "edited.yaml", default_catalog_dir(), default_cards_dir());
  };
  for (const char* w : {"rate_hz: 5, jitter_ms: 2, jitter_pct: 10, duration_s: 20",
                               "rate_hz: 5, jitter_pct: 50, duration_s: 20", "rate_hz: 5, jitter_pct: -1, duration_s: 20"}) {
    SCOPED_TRACE(w);
    try {
      load(w);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "workload[0].jitter_pct") << e.what();
      EXPECT_EQ(e.file(), "edited.yaml");
      EXPECT_GT(e.line(), 0);
    }
  }
  EXPECT_NEAR(load("rate_hz: 5, jitter_pct: 49, duration_s: 20").streams[0].jitter_s, 0.49 / 5, 1e-12);
}

// Constant-memory runs (SimOptions::on_record) hand over every record once, in arrival order,
// unfinished ones included; their requests.csv is byte-identical to a kept run's, and their
// report agrees: counts, attainment and max exactly, the mean to rounding, percentiles within
// the histogram's bound.
TEST(Scenario, StreamedRecordsGiveTheKeptRunsCsvAndReportWithinTheHistogramBound) {
  for (double drain : {60.0, 0.002}) {  // 0.002 s: requests still running are cut off
    SCOPED_TRACE(drain);
    ScenarioRun kept = run_file(kRoot + "/scenarios/systems/robion_h100.yaml", false);
    kept.s.drain_s = drain;
    kept.result = simulate(kept.s, kept.plan);
    const std::string dir = testing::scratch_dir("streamed").string();
    write_requests_csv(kept.s, kept.plan, kept.result, dir + "/kept.csv");
    const Report want = make_report(kept.s, kept.plan, kept.result, "simulate");

    ReportBuilder builder(kept.s, true);
    RequestsCsv csv(kept.s, kept.plan, dir + "/streamed.csv");
    SimOptions o;
    uint64_t next_id = 0;
    size_t unfinished = 0;
    o.on_record = [&](const RequestRecord& q) {
      EXPECT_EQ(q.id, next_id++);
      unfinished += !q.finished();
      builder.add(q);
      csv.row(q);
    };
    SimResult streamed = simulate(kept.s, kept.plan, o);
    csv.close();
    EXPECT_TRUE(streamed.requests.empty());
    EXPECT_EQ(next_id, kept.result.requests.size());
    if (drain < 1) EXPECT_GT(unfinished, 0u);
    EXPECT_EQ(read(dir + "/kept.csv"), read(dir + "/streamed.csv"));

    const Report got = builder.finish(kept.plan, streamed, "simulate");
    EXPECT_EQ(got.requests, want.requests);
    EXPECT_EQ(got.finished, want.finished);
    EXPECT_EQ(got.deadline_attainment, want.deadline_attainment);
    EXPECT_DOUBLE_EQ(got.throughput_hz, want.throughput_hz);
    auto agree = [](const LatencyStats& a, const LatencyStats& b) {
      EXPECT_EQ(a.count, b.count);
      EXPECT_EQ(a.max, b.max);
      EXPECT_NEAR(a.mean, b.mean, 1e-12 * b.mean);
      for (auto [x, y] : {std::pair{a.p50, b.p50}, {a.p90, b.p90}, {a.p99, b.p99}})
        EXPECT_NEAR(x, y, kStreamingQuantileError * y) << "streamed " << x << ", exact " << y;
    };
    agree(got.latency, want.latency);
    ASSERT_EQ(got.models.size(), want.models.size());
    for (size_t m = 0; m < want.models.size(); ++m) {
      agree(got.models[m].latency, want.models[m].latency);
      for (int k = 0; k < kStages; ++k) agree(got.models[m].stage[k], want.models[m].stage[k]);
    }
  }
}

// The histogram's percentiles on a wide spread of values stay within its stated bound.
// RFC 4180 fields of one CSV text: quoted fields may hold commas, doubled quotes and line ends.
std::vector<std::vector<std::string>> csv_records(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') rows.back().back() += text[++i];
      else if (c == '"') quoted = false;
      else rows.back().back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

// A workload named with a comma, a quote and a line end wrote rows of 4, 13 and 15 fields
// (issue 28): every row now has the header's fields and the name reads back whole.
TEST(Scenario, RequestsCsvQuotesNamesHoldingCommasQuotesAndLineEnds) {
  std::string text = read(kRoot + "/scenarios/default.yaml");
  const std::string from = "{name: camera,";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "{name: \"cam,era\\nx=1 \\\"q\\\"\",");
  text.replace(text.find("duration_s: 20"), 14, "duration_s: 2");
  Scenario s = load_scenario_text(text, "named.yaml", default_catalog_dir(), default_cards_dir());
  resolve_auto_dtypes(s, DType::BF16);
  auto cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
  const Plan plan = make_plan(s, *cost, std::vector<int>(s.models.size(), 1));
  const SimResult r = simulate(s, plan);
  ASSERT_GT(r.requests.size(), 5u);
  const std::string path = testing::scratch_dir("csv_names").string() + "/requests.csv";
  write_requests_csv(s, plan, r, path);
  const auto rows = csv_records(read(path));
  ASSERT_EQ(rows.size(), r.requests.size() + 1);
  for (const auto& row : rows) EXPECT_EQ(row.size(), rows[0].size());
  EXPECT_EQ(rows[0][2], "stream");
  EXPECT_EQ(rows[1][2], "cam,era\nx=1 \"q\"");
}

// deadline_ms 0 means no deadline: such requests count as met, and the summary says the
// attainment is n/a instead of printing 100% (issue 28).
TEST(Scenario, ASummaryOfRequestsWithoutDeadlinesSaysAttainmentIsNotApplicable) {
  std::string text = read(kRoot + "/scenarios/default.yaml");
  text.replace(text.find("duration_s: 20"), 14, "duration_s: 2");
  for (const bool with : {true, false}) {
    std::string t = text;
    if (!with) t.replace(t.find("deadline_ms: 200"), 16, "deadline_ms: 0");
    Scenario s = load_scenario_text(t, "deadlines.yaml", default_catalog_dir(), default_cards_dir());
    resolve_auto_dtypes(s, DType::BF16);
    auto cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
    const Plan plan = make_plan(s, *cost, std::vector<int>(s.models.size(), 1));
    const Report rep = make_report(s, plan, simulate(s, plan), "simulate");
    EXPECT_EQ(rep.models[0].with_deadline, with ? rep.models[0].requests : 0u);
    const std::string text_out = summary_text(rep);
    EXPECT_EQ(text_out.find("deadline attainment n/a") != std::string::npos, !with) << text_out;
  }
}

// report.json's file echoed the path as typed, so the same run from another working
// directory wrote another report (issue 28): it is the absolute, normalised path.
TEST(Scenario, AReportNamesItsScenarioByOneAbsolutePathHoweverItWasTyped) {
  const fs::path abs = fs::path(kRoot) / "scenarios" / "default.yaml";
  const fs::path rel = fs::relative(abs);
  const fs::path dotted = fs::path(kRoot) / "scenarios" / ".." / "scenarios" / "default.yaml";
  std::vector<std::string> files;
  for (const fs::path& p : {abs, rel, dotted}) {
    Scenario s = load_scenario(p.string(), default_catalog_dir(), default_cards_dir());
    resolve_auto_dtypes(s, DType::BF16);
    auto cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
    const Plan plan = make_plan(s, *cost, std::vector<int>(s.models.size(), 1));
    files.push_back(make_report(s, plan, simulate(s, plan), "simulate").file);
  }
  EXPECT_TRUE(fs::path(files[0]).is_absolute()) << files[0];
  EXPECT_EQ(files[0], abs.lexically_normal().string());
  EXPECT_EQ(files[1], files[0]);
  EXPECT_EQ(files[2], files[0]);
}

TEST(LatencySeries, StreamedPercentilesAreWithinTheBoundOfTheExactOnes) {
  LatencySeries exact(false), streamed(true);
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> d(std::log(0.03), 1.5);
  for (int i = 0; i < 200000; ++i) {
    const double v = d(rng);
    exact.add(v);
    streamed.add(v);
  }
  const LatencyStats a = exact.stats(), b = streamed.stats();
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.max, b.max);
  for (auto [x, y] : {std::pair{b.p50, a.p50}, {b.p90, a.p90}, {b.p99, a.p99}}) {
    EXPECT_NEAR(x, y, kStreamingQuantileError * y);
    EXPECT_NE(x, y);  // it is an approximation: equal would mean the exact path ran
  }
}

}  // namespace
}  // namespace vlasim

namespace vlasim {
namespace {

// A model's `passes:` reaches its graph: no pass is the unfused graph, more kernels and a
// longer predicted time alone than the card's default set.
TEST(Scenario, ModelPassesChooseTheGraph) {
  const std::string base = read(kRoot + "/scenarios/default.yaml");
  auto alone = [&](const std::string& passes, size_t* ops) {
    std::string text = base;
    const std::string at = "    dtype: auto\n";
    text.replace(text.find(at), at.size(), at + passes);
    Scenario s = load_scenario_text(text, "edited.yaml", default_catalog_dir(), default_cards_dir());
    resolve_auto_dtypes(s, DType::F32);
    const Plan p = plan_scenario(s);
    *ops = p.models[0].graph.size();
    return p.models[0].alone_seconds;
  };
  size_t dflt = 0, none = 0, all = 0;
  const double t_dflt = alone("", &dflt);
  const double t_none = alone("    passes: []\n", &none);
  const double t_all = alone("    passes: [qkv_fuse, gateup_fuse, epilogue_fuse, last_layer_skip, rmsnorm_fold, rope_fold, time_bias_fold]\n", &all);
  EXPECT_GT(none, dflt);
  EXPECT_LT(all, dflt);
  EXPECT_GT(t_none, t_dflt);
  EXPECT_LT(t_all, t_dflt);
}

}  // namespace
}  // namespace vlasim

namespace vlasim {
namespace {

// Full streaming: a stream of only the action stage runs only the action expert's segments,
// reads the latest prefix the VLM stream finished, and is admitted apart from the VLM stream.
std::string streaming_text(const std::string& expert_stages, const std::string& placement) {
  return "name: st\nhardware:\n  devices:\n    - {name: gpu0, catalog: rtx4090, streams: [{name: vlm}, {name: ae}]}\n"
         "models:\n  - name: m\n    card: pi0_tiny\n    steps: 1\n    placement:\n" + placement +
         "workload:\n  - {name: camera, model: m, stages: [vision, prefix], rate_hz: 30, duration_s: 1}\n"
         "  - {name: expert, model: m, stages: " + expert_stages + ", rate_hz: 400, duration_s: 1}\n";
}

TEST(Scenario, StreamsOfSomeStagesRunOnlyThoseAndReadTheLatestPrefix) {
  const std::string split = "      - {stages: [vision, prefix], device: gpu0.vlm}\n      - {stage: action, device: gpu0.ae}\n";
  Scenario s = load_scenario_text(streaming_text("[action]", split), "st.yaml", default_catalog_dir(), default_cards_dir());
  const Plan p = plan_scenario(s);
  const SimResult r = simulate(s, p);
  size_t camera = 0, expert = 0, with_context = 0;
  double last_camera_end = -1;
  for (const RequestRecord& q : r.requests) {
    ASSERT_TRUE(q.finished());
    const bool is_expert = q.stream == 1;
    EXPECT_EQ(q.stage_done(int(Stage::Action)), is_expert);
    EXPECT_EQ(q.stage_done(int(Stage::Prefix)), !is_expert);
    EXPECT_EQ(q.stage_done(int(Stage::Vision)), !is_expert);
    if (is_expert) {
      ++expert;
      if (q.context_end >= 0) {
        ++with_context;
        EXPECT_LE(q.context_end, q.start);
        EXPECT_LT(q.start - q.context_end, 1.0 / 30 + 0.05);  // never older than a camera period and a VLM run
      }
    } else {
      ++camera;
      last_camera_end = std::max(last_camera_end, q.end);
      EXPECT_LT(q.context_end, 0);  // the VLM reads no earlier stage
    }
  }
  EXPECT_EQ(camera, 30u);
  EXPECT_EQ(expert, 400u);
  EXPECT_GT(with_context, 350u);     // all but those before the first prefix finished
  EXPECT_LT(with_context, expert);
  // The expert's requests are far shorter than whole inferences: only its segments ran.
  double expert_latency = 0;
  for (const RequestRecord& q : r.requests)
    if (q.stream == 1) expert_latency = std::max(expert_latency, q.latency());
  EXPECT_LT(expert_latency, p.models[0].alone_seconds / 2);
}

TEST(Scenario, StreamStagesSharingASegmentWithOthersAreRefused) {
  const std::string one_unit = "      - {stages: [vision, prefix, action], device: gpu0.vlm}\n";
  try {
    Scenario s = load_scenario_text(streaming_text("[action]", one_unit), "st.yaml", default_catalog_dir(), default_cards_dir());
    const Plan p = plan_scenario(s);
    simulate(s, p);
    FAIL() << "a stream of the action stage was accepted with the action in the VLM's segment";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "workload[0].stages") << e.what();  // the first such stream: the VLM's
    EXPECT_NE(std::string(e.what()).find("unit of their own"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_scenario_text(streaming_text("[acton]", one_unit), "st.yaml", default_catalog_dir(), default_cards_dir()),
               ConfigError);
  EXPECT_THROW(load_scenario_text(streaming_text("[]", one_unit), "st.yaml", default_catalog_dir(), default_cards_dir()),
               ConfigError);
}

// pi0_tiny's VLM on one stream and its action expert on another of one RTX 4090, with the
// given stream keys and policies.
std::string batching_text(const std::string& vlm, const std::string& ae, const std::string& policies) {
  return "name: b\n"
         "hardware:\n"
         "  devices:\n"
         "    - {name: gpu0, catalog: rtx4090, streams: [{name: vlm" + vlm + "}, {name: ae" + ae + "}]}\n"
         "models:\n"
         "  - name: m\n"
         "    card: pi0_tiny\n"
         "    placement:\n"
         "      - {stages: [vision, prefix], device: gpu0.vlm}\n"
         "      - {stage: action, device: gpu0.ae}\n"
         "workload:\n"
         "  - {model: m, count: 8, rate_hz: 50, jitter_ms: 1, deadline_ms: 50, duration_s: 0.5}\n"
         "policies:\n" + policies;
}

TEST(Scenario, UnitBatchSizesReachThePlanCostedAtEverySizeThePolicyRuns) {
  Scenario s = load_scenario_text(
      batching_text("", ", batch: 4", "  batching: dynamic\n  pipeline: {name: async, params: {depth: 8}}\n"),
      "b.yaml", default_catalog_dir(), default_cards_dir());
  const Plan p = plan_scenario(s);
  EXPECT_EQ(p.units[0].batch, 1);
  EXPECT_EQ(p.units[1].batch, 4);
  const ModelPlan& mp = p.models[0];
  ASSERT_EQ(mp.batched.size(), 2u);  // dynamic on a unit of 4: buckets 2 and 4
  const int ae = static_cast<int>(mp.segments.size()) - 1;
  ASSERT_EQ(mp.segments[static_cast<size_t>(ae)].unit, 1);
  const double one = mp.segment_at(ae, 1).seconds, four = mp.segment_at(ae, 4).seconds;
  EXPECT_GT(four, one);       // more work
  EXPECT_LT(four, 4 * one);   // but the weights are read once per batch
  EXPECT_DOUBLE_EQ(mp.graph_at(4).op(0).out_bytes, 4 * mp.graph.op(0).out_bytes);
  SimResult r = simulate(s, p);
  bool batched = false;
  for (const TraceEvent& e : r.trace) batched = batched || (e.unit == 1 && e.items > 1);
  EXPECT_TRUE(batched) << "8 robots at once never formed a batch on the action stream";

  // fixed: one size per unit, the unit's; the policy's size for units without `batch:`.
  Scenario f = load_scenario_text(
      batching_text("", "", "  batching: {name: fixed, params: {size: 2}}\n  pipeline: {name: async, params: {depth: 8}}\n"),
      "b.yaml", default_catalog_dir(), default_cards_dir());
  const Plan fp = plan_scenario(f);
  EXPECT_EQ(fp.units[0].batch, 2);
  ASSERT_EQ(fp.models[0].batched.size(), 1u);
  EXPECT_EQ(fp.models[0].batched[0].size, 2);
  EXPECT_THROW(fp.models[0].segment_at(0, 3), std::logic_error);
}

TEST(Scenario, ABatchThePipelineCanNeverFillIsRefusedAtItsBatchKey) {
  Scenario s = load_scenario_text(batching_text("", ", batch: 4", "  pipeline: {name: async, params: {depth: 3}}\n"),
                                  "b.yaml", default_catalog_dir(), default_cards_dir());
  try {
    plan_scenario(s);
    FAIL() << "a batch of 4 with 3 requests in flight was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "hardware.devices[0].streams[1].batch") << e.what();
    EXPECT_EQ(e.line(), 4) << e.what();
    EXPECT_NE(std::string(e.what()).find("could never fill"), std::string::npos) << e.what();
  }
}

// pi0_tiny and a second copy of it sharing a lockstep H100: VLMs on vlm, action on ae, with
// dynamic batches of 2 on both streams and the given lut.
std::string lockstep_text(const std::string& lut) {
  std::string t = "name: ls\n"
                  "hardware:\n"
                  "  devices:\n"
                  "    - name: gpu0\n"
                  "      catalog: h100-sxm\n"
                  "      streams: [{name: vlm, sms: 96, batch: 2}, {name: ae, batch: 2}]\n"
                  "      lockstep: {streams: [vlm, ae], lut: " + lut + "}\n"
                  "models:\n";
  for (const char* m : {"a", "b"})
    t += std::string("  - name: ") + m + "\n    card: pi0_tiny\n    placement:\n"
         "      - {stages: [vision, prefix], device: gpu0.vlm}\n"
         "      - {stage: action, device: gpu0.ae}\n";
  return t + "workload:\n"
             "  - {model: a, count: 4, rate_hz: 50, jitter_ms: 1, deadline_ms: 30, duration_s: 0.5}\n"
             "  - {model: b, count: 4, rate_hz: 50, jitter_ms: 1, deadline_ms: 30, duration_s: 0.5}\n"
             "policies: {queue: esf, pipeline: {name: async, params: {depth: 4}}}\n";
}

TEST(Scenario, AnSmTableWrittenByProfileLutReadsBackAndABadOneIsRefusedWhereItIsWrong) {
  namespace fs = std::filesystem;
  const fs::path dir = testing::scratch_dir("sm_lut");
  Scenario s = load_scenario_text(lockstep_text("auto"), (dir / "ls.yaml").string(), default_catalog_dir(), default_cards_dir());
  const Plan p = plan_scenario(s);
  ASSERT_EQ(p.locksteps.size(), 1u);
  const LockstepPlan& lp = p.locksteps[0];
  EXPECT_EQ(lp.lut.size(), 16u);  // 2 models x 2 classes on each stream
  // A larger action batch never gets the VLM stream more SMs.
  EXPECT_LE(lp.lut.at(SmLutKey{0, 1, 0, 2}), lp.lut.at(SmLutKey{0, 1, 0, 1}));
  SimResult r = simulate(s, p);
  EXPECT_GT(r.locksteps, 0u);
  const std::string text = sm_lut_yaml(s, p, lp);
  auto write = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << body;
    return name;
  };
  auto plan_with = [&](const std::string& lut) {
    Scenario t = load_scenario_text(lockstep_text(lut), (dir / "ls.yaml").string(), default_catalog_dir(), default_cards_dir());
    return plan_scenario(t);
  };
  EXPECT_EQ(plan_with(write("lut.yaml", text)).locksteps[0].lut, lp.lut);  // beside the scenario

  auto refused = [&](const std::string& lut, const std::string& file, const std::string& key, const std::string& what) {
    SCOPED_TRACE(lut);
    try {
      plan_with(lut);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(fs::path(e.file()).filename().string(), file) << e.what();
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_GT(e.line(), 0) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  std::string missing = text;  // the last entry dropped
  missing.erase(missing.rfind("  - {"));
  refused(write("missing.yaml", missing), "ls.yaml", "hardware.devices[0].lockstep.lut", "has no entry for b at batch 2");
  std::string odd = text;
  const size_t at = odd.find("first_sms: ", odd.find("entries:")) + 11;
  odd.replace(at, odd.find('}', at) - at, "7");
  refused(write("odd.yaml", odd), "odd.yaml", "entries[0].first_sms", "multiples of 8");
  std::string unknown = text;
  unknown.replace(unknown.find("first_model: a"), 14, "first_model: c");
  refused(write("unknown.yaml", unknown), "unknown.yaml", "entries[0].first_model", "unknown model 'c'");
  std::string other = text;
  other.replace(other.find("sms: 132"), 8, "sms: 144");
  refused(write("other.yaml", other), "other.yaml", "sms", "144 SMs");
  refused("nowhere.yaml", "ls.yaml", "hardware.devices[0].lockstep.lut", "not found");
}

}  // namespace
}  // namespace vlasim
