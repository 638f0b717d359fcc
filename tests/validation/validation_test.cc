// The predicted-vs-measured regression gate: a short version of the validation suite
// (scenarios/validation/, full figures in reports/validation.md). It calibrates this machine
// (the quick grid, then each scenario in context right before it is measured, so that both
// see the same machine), simulates and executes each short scenario, and fails when the
// errors pass bounds wide enough for a busy 2-core machine. It also checks that the gate has
// teeth with models broken by construction: the calibrated profile with every op time scaled
// by 1.3 and by 0.7, compared with the same measurements. Whatever the host, one of the two
// lies at least 30% off the measurement on the side the profiled model already errs, so the
// 25% bounds must fail it. The uncalibrated roofline's errors are printed, not asserted: on
// some CPUs the catalog's figures happen to fit (issue 27).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "executors/calibration/calibrate.h"
#include "executors/runtime/runtime.h"
#include "models/builder.h"
#include "reports/compare.h"
#include "scheduler/policy.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/costs/cost_models.h"
#include "sim/engine/planner.h"
#include "busy_machine.h"
#include "scratch.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

// Short versions of suite scenarios: enough seconds of arrivals for about 60 requests at the
// rate the scenario gets on this host (a `load:` in the file is a fraction of the alone
// throughput calibrated here).
struct Short {
  const char* name;
  double duration_s;  // at least this long
};
constexpr Short kShort[] = {
    {"rate_40pct", 3.4},     // Poisson arrivals at 40% load on one 2-core group (2 OpenMP threads)
    {"split1_serial", 3.4},  // two 1-core groups, prefix cut after block 1, serial pipeline
    {"split3_async", 3.4},   // cut after block 3, cross-frame asynchronous: a and b overlap
    {"split5_serial", 3.4},  // cut after block 5
};
// A scenario that fails is calibrated and measured once more: other work on a shared machine
// can slow one run by 20% or more; a broken cost model fails both times.
constexpr int kAttempts = 2;

// Wide enough for a noisy shared 2-core machine (load from builds next door moves single
// figures by 10-20%), narrow enough that a cost model 30% off fails. Figures are absolute
// relative errors.
Bounds gate_bounds() {
  Bounds b;
  b.median_stage_error = 0.25;
  b.p50_error = 0.25;
  b.p99_error = 0.60;
  return b;
}

using vlasim::testing::scratch_root;

Scenario load_short(const Short& sh) {
  Scenario s = load_scenario(std::string(VLASIM_SOURCE_DIR) + "/scenarios/validation/" + sh.name + ".yaml",
                             default_catalog_dir(), default_cards_dir());
  resolve_auto_dtypes(s, native_cpu_dtype());  // as `vlasim compare` does
  for (auto& st : s.streams) st.duration_s = sh.duration_s;
  s.drain_s = 5;
  return s;
}

// The plan as `vlasim compare` makes it: memory checked with each model's pipeline window.
Plan plan_for(const Scenario& s) {
  auto cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
  auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  std::vector<int> window;
  Plan probe = make_plan(s, *cost, std::vector<int>(s.models.size(), 1));
  for (const auto& mp : probe.models) window.push_back(pipe->window(mp.pipeline_stages));
  return make_plan(s, *cost, window);
}

// 100 * frac in printf format `f` (one %f conversion), or "n/a" for a figure one of the runs
// cannot give.
std::string pct(double frac, const char* f = "%+.1f%%") {
  if (!std::isfinite(frac)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, 100 * frac);
  return buf;
}

// One line of figures and how far each is from its bound (margin = bound - |error|); a tail
// with no data prints n/a and the reason (EndToEnd::tail_notes) on the next line.
std::string figures(const Comparison& c, const Bounds& b) {
  double worst_stage = 0, worst_p50 = std::fabs(c.overall.p50_s.error), worst_p99 = std::fabs(c.overall.p99_s.error);
  for (const auto& m : c.models) {
    worst_stage = std::max(worst_stage, std::fabs(m.median_abs_stage_error));
    worst_p50 = std::max(worst_p50, std::fabs(m.e2e.p50_s.error));
    worst_p99 = std::max(worst_p99, std::fabs(m.e2e.p99_s.error));
  }
  const auto margin = [](double bound, double worst) { return pct(bound - worst, "%+.1f pp"); };
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%-14s median stage %s (margin %s)  p50 %s (margin %s)  p99 %s (margin %s)  throughput %s",
                c.scenario.c_str(), pct(worst_stage, "%.1f%%").c_str(), margin(b.median_stage_error, worst_stage).c_str(),
                pct(c.overall.p50_s.error).c_str(), margin(b.p50_error, worst_p50).c_str(),
                pct(c.overall.p99_s.error).c_str(), margin(b.p99_error, worst_p99).c_str(),
                pct(c.overall.throughput_hz.error).c_str());
  std::string line = buf;
  if (!std::isfinite(c.overall.p99_s.error))
    for (const std::string& note : c.overall.tail_notes) line += "\n    p99: " + note;
  return line;
}

// `p` broken on purpose: every measured op time and the per-op dispatch overhead (with its part
// outside segments, which must stay within it) times `factor`, fits recomputed. The run-to-run
// variation (ratios) and the overhead's share of each op's time are kept.
DeviceProfile scaled_profile(DeviceProfile p, double factor) {
  for (ProfileSection& sec : p.sections) {
    for (auto& [sig, m] : sec.table) m.median_s *= factor;
    sec.op_overhead_s *= factor;
    sec.op_outside_s *= factor;
    sec.refit();
  }
  return p;
}

double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : 0;
}

// What in-context calibration writes survives the JSON round trip, and the profiled cost
// model adds the measured dispatch overhead to every op. (No measuring here.)
TEST(Validation, ProfileCarriesInContextTimesAndOverhead) {
  Scenario s = load_short({"split3_serial", 1});
  const OpGraph g = build_graph(s.models[0].card, s.models[0].shape);
  DeviceProfile p;
  p.catalog_device = "epyc-2vcpu";
  p.machine = "test";
  p.isa = "avx2";
  p.executor = "onednn";
  p.date = "2026-01-01T00:00:00Z";
  p.grid = "none";
  p.threads = {1};
  p.dtypes = {native_cpu_dtype()};
  ProfileSection sec;
  sec.threads = 1;
  sec.dtype = native_cpu_dtype();
  sec.op_overhead_s = 2e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(static_cast<int>(i));
    if (op.kind == OpKind::Transfer) continue;
    Measurement m;
    m.kind = op.kind;
    m.fn = op.fn;
    m.work = op_work(op);
    m.median_s = 1e-4;
    m.reps = 3;
    m.source = "in-context";
    sec.table[op_signature(op)] = m;
  }
  sec.refit();
  p.sections.push_back(sec);
  EXPECT_EQ(parse_profile(profile_to_json(p), "round trip"), p);

  fs::create_directories(scratch_root());
  const std::string path = (scratch_root() / "synthetic.json").string();
  save_profile(p, path);
  use_profiled_cost_model(s, path);
  const Plan plan = plan_for(s);
  for (const OpCost& c : plan.models[0].op_costs) {
    EXPECT_NEAR(c.seconds, 1e-4 + 2e-6, 1e-12);
    EXPECT_GE(c.overhead_seconds, 2e-6);
    EXPECT_EQ(c.dispatch_seconds, 2e-6);
  }
  // Op-level comparison: an op timer does not see the dispatch overhead, so neither does the
  // op's prediction beside it.
  const std::vector<std::vector<double>> measured(1, std::vector<double>(g.size(), 1e-4));
  int checked = 0;
  for (const OpTime& t : op_times(s, plan, measured)) {
    if (t.kind == "transfer") continue;
    ++checked;
    EXPECT_NEAR(t.predicted_s, 1e-4, 1e-12) << t.op;
  }
  EXPECT_GT(checked, 100);
  // A segment's stage shares are its ops as their timers see them, as in real runs.
  for (const Segment& seg : plan.models[0].segments) {
    if (seg.transfer) continue;
    double shares = 0;
    for (double x : seg.stage_seconds) shares += x;
    EXPECT_NEAR(shares, 1e-4 * static_cast<double>(seg.ops.size()), 1e-9) << seg.label;
    EXPECT_NEAR(seg.seconds, (1e-4 + 2e-6) * static_cast<double>(seg.ops.size()), 1e-9) << seg.label;
  }

  // Without the key the overhead is 0, and older profiles still load.
  p.sections[0].op_overhead_s = 0;
  const std::string text = profile_to_json(p);
  EXPECT_EQ(text.find("op_overhead_s"), std::string::npos);
  EXPECT_EQ(parse_profile(text, "no overhead").sections[0].op_overhead_s, 0);
}

TEST(Validation, ShortSuiteWithinBounds) {
  const auto t0 = std::chrono::steady_clock::now();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure shown as it comes, even if the test times out
  const testing::MachineWatch whole_run;      // the machine over the whole test (busy_machine.h)
  std::printf("load average at start: %.2f\n", load_average());
  std::vector<Scenario> scenarios;
  for (const Short& sh : kShort) scenarios.push_back(load_short(sh));

  // The quick grid at every (cores, dtype) the scenarios use. Their ops are measured in
  // context below, so they are not also timed alone here.
  CalibrateOptions o;
  o.grid = GridLevel::Quick;
  for (const Scenario& s : scenarios) add_scenario(o, s);
  o.graphs.clear();
  o.repetitions = 3;
  const DeviceProfile base = calibrate(o);

  fs::create_directories(scratch_root());
  const Bounds b = gate_bounds();
  int profiled_passed = 0, broken_caught = 0;
  std::string inconclusive;  // scenarios that missed only while other work shared the machine
  for (const Scenario& original : scenarios) {
    // A busy machine can stretch the run past the test's timeout (300 s): past 180 s, on a
    // machine other work has kept busy since the start, the scenarios left are not measured.
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > 180) {
      if (const testing::MachineVerdict v = whole_run.verdict(); v.busy) {
        inconclusive += original.name + std::string(": not measured, 180 s gone while ") + v.text + "\n";
        continue;
      }
    }
    std::string why;
    bool within = false;
    testing::MachineVerdict machine;
    // An attempt that misses while the machine is busy (busy_machine.h) is not counted: the
    // test waits (at most 20 s) for the machine to quiet down and measures once more, once per
    // scenario and only in its first 150 s, so that a busy machine stays inside the test's timeout.
    bool busy_retried = false;
    for (int attempt = 1; attempt <= kAttempts && !within; ++attempt) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (attempt > 1 && machine.busy && !busy_retried && elapsed < 150) {
        const testing::MachineVerdict quiet = testing::MachineWatch::wait_for_quiet(5, 20);
        std::printf("  the machine was busy (%s); after waiting: %s\n", machine.text.c_str(), quiet.text.c_str());
        busy_retried = true;
        --attempt;
      }
      const testing::MachineWatch watch;
      // Calibrate in context right before measuring: this machine's speed drifts with the
      // host's load over minutes.
      Scenario s = original;
      DeviceProfile prof = base;
      InContextOptions io;
      io.repetitions = 25;  // 25+ segment runs: the run-to-run variation behind predicted p99
      io.max_seconds = 10;
      calibrate_in_context(prof, {s}, io);
      const std::string path = (scratch_root() / (s.name + ".json")).string();
      save_profile(prof, path);
      use_profiled_cost_model(s, path);
      const Plan plan = plan_for(s);
      resolve_stream_loads(s, plan);
      for (StreamDecl& sd : s.streams)
        sd.duration_s = std::max(kShort[&original - scenarios.data()].duration_s, 60 / sd.rate_hz);
      const SimResult predicted = simulate(s, plan);
      const ExecResult measured = execute(s, plan);
      const Comparison c = compare_runs(s, plan, predicted, measured.result, op_times(s, plan, measured.op_seconds));
      why.clear();
      within = within_bounds(c, b, &why);
      machine = watch.verdict();
      std::printf("%s%s\n  machine: %s\n", figures(c, b).c_str(), attempt > 1 ? "  (second attempt)" : "",
                  machine.text.c_str());

      // The same measurement against the uncalibrated roofline: reported, not asserted.
      Scenario r = s;
      r.cost_model = PolicyDecl{"roofline", Params(), ConfigNode()};
      const Plan rplan = plan_for(r);
      const Comparison rc = compare_runs(r, rplan, simulate(r, rplan), measured.result, op_times(r, rplan, measured.op_seconds));
      std::printf("  roofline (not asserted): %s\n", figures(rc, b).c_str());
      if (!within) continue;

      // The same measurement against the profile broken by construction: the gate must fail
      // at least one of the two, and each must move the prediction the way it was scaled.
      ++profiled_passed;
      bool caught = false;
      for (double factor : {1.3, 0.7}) {
        Scenario k = s;
        const std::string kpath = (scratch_root() / (s.name + "_x" + std::to_string(factor) + ".json")).string();
        save_profile(scaled_profile(prof, factor), kpath);
        use_profiled_cost_model(k, kpath);
        const Plan kplan = plan_for(k);
        const Comparison kc = compare_runs(k, kplan, simulate(k, kplan), measured.result, op_times(k, kplan, measured.op_seconds));
        std::printf("  profile x%.1f: %s\n", factor, figures(kc, b).c_str());
        if (factor > 1)
          EXPECT_GT(kc.overall.p50_s.predicted, c.overall.p50_s.predicted) << s.name << " x" << factor;
        else
          EXPECT_LT(kc.overall.p50_s.predicted, c.overall.p50_s.predicted) << s.name << " x" << factor;
        if (!within_bounds(kc, b, nullptr)) caught = true;
      }
      EXPECT_TRUE(caught) << s.name << ": the profile scaled by 1.3 and by 0.7 both passed the gate's bounds; "
                                       "they are too wide to catch a cost model 30% off";
      broken_caught += caught;
    }
    if (!within && machine.busy) {
      inconclusive += original.name + std::string(": ") + why + " while " + machine.text + "\n";
      continue;
    }
    EXPECT_TRUE(within) << original.name << " failed " << kAttempts << " times (load average " << load_average()
                        << "; " << machine.text << "); last time:\n" << why;
  }
  std::printf("profile broken on purpose: caught on %d of %d passing measurements\n", broken_caught, profiled_passed);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("load average at end: %.2f; %.1f s\n", load_average(), secs);
  if (!inconclusive.empty())
    GTEST_SKIP() << "inconclusive: the machine was busy with other work whenever these missed their bounds "
                    "(run again on a quiet machine):\n" << inconclusive;
}

}  // namespace
}  // namespace vlasim
