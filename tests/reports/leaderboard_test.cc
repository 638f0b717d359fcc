// The CET leaderboard and the roofline report (issue 14): the power, energy and cost arithmetic
// and the Pareto front on a catalog of made-up devices whose order is known, tiers at their
// thresholds, devices the model does not fit on, refusals of unknown names, and a roofline
// whose rows add up to the plan they come from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/builder.h"
#include "reports/leaderboard.h"
#include "reports/plot.h"
#include "reports/roofline.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"
#include "scratch.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

// Four GPUs: fast (ultra tier), cheap and dear (identical but for the price and where their
// idle power comes from: the same 30 W), and small, on which no model fits. Plus a link.
std::string test_catalog() {
  const fs::path d = testing::scratch_dir("leaderboard_catalog");
  std::ofstream(d / "gpus.yaml") << R"(
fast:
  type: gpu
  source: test
  sms: 100
  tflops_bf16: 400
  tflops_fp32: 50
  mem_gb: 80
  bw_gbs: 2000
  tdp_w: 400
  idle_w: 100
  price_usd: 20000
cheap:
  type: gpu
  source: test
  sms: 20
  tflops_bf16: 50
  tflops_fp32: 5
  mem_gb: 16
  bw_gbs: 300
  tdp_w: 100
  price_usd: 1000
dear:
  type: gpu
  source: test
  sms: 20
  tflops_bf16: 50
  tflops_fp32: 5
  mem_gb: 16
  bw_gbs: 300
  tdp_w: 100
  idle_w: 30
  price_usd: 50000
small:
  type: gpu
  source: test
  sms: 4
  tflops_bf16: 10
  tflops_fp32: 1
  mem_gb: 0.01
  bw_gbs: 100
  tdp_w: 20
  price_usd: 100
)";
  std::ofstream(d / "links.yaml") << R"(
wire:
  type: link
  source: test
  h2d_gbs: 10
  d2h_gbs: 10
)";
  return d.string();
}

LeaderboardModel tiny() {
  const ModelCard card = find_card(default_cards_dir(), "pi0_tiny", ConfigNode());
  return {"pi0_tiny", "pi0_tiny", card.defaults};
}

const LeaderboardRow& row(const Leaderboard& lb, const std::string& device) {
  for (const auto& r : lb.rows)
    if (r.device == device) return r;
  throw std::runtime_error("no row " + device);
}

TEST(Leaderboard, EnergyAndCostFollowThePowerModelAndTheOptions) {
  const std::string catalog = test_catalog();
  LeaderboardOptions o;
  o.min_hz = 0;
  o.lifetime_years = 2;
  o.utilisation = 0.25;
  o.usd_per_kwh = 0.3;
  o.idle_fraction = 0.3;
  const Leaderboard lb = make_leaderboard(tiny(), catalog, default_cards_dir(), o, nullptr);
  ASSERT_EQ(lb.rows.size(), 4u);  // every GPU-type entry, not the link
  EXPECT_EQ(lb.model_tier, "small");
  for (const std::string d : {"fast", "cheap", "dear"}) {
    const LeaderboardRow& r = row(lb, d);
    ASSERT_TRUE(r.fits) << d << ": " << r.why;
    // The row's time is the plan's alone time of the same one-device scenario.
    const Scenario s = one_device_scenario(tiny(), d, catalog, default_cards_dir());
    EXPECT_DOUBLE_EQ(r.latency_s, plan_scenario(s).models[0].alone_seconds) << d;
    EXPECT_DOUBLE_EQ(r.rate_hz, 1 / r.latency_s);
    EXPECT_GT(r.utilisation, 0) << d;
    EXPECT_LE(r.utilisation, 1) << d;
    const DeviceSpec& spec = *Catalog::load_dir(catalog).find(d);
    const double idle = d == "cheap" ? 0.3 * spec.tdp_w : spec.idle_w;
    EXPECT_EQ(r.idle_estimated, d == "cheap");
    EXPECT_NEAR(r.power_w, idle + (spec.tdp_w - idle) * r.utilisation, 1e-9) << d;
    EXPECT_NEAR(r.energy_j, r.power_w * r.latency_s, 1e-12) << d;
    const double per_inference = spec.price_usd * r.latency_s / (2 * 365.25 * 86400 * 0.25) + r.energy_j / 3.6e6 * 0.3;
    EXPECT_NEAR(r.usd_per_million, 1e6 * per_inference, 1e-9 * r.usd_per_million) << d;
  }
  EXPECT_LT(row(lb, "fast").latency_s, row(lb, "cheap").latency_s);
  // cheap and dear differ only in price (30 W idle both): same time and energy, dear costs more.
  EXPECT_DOUBLE_EQ(row(lb, "cheap").energy_j, row(lb, "dear").energy_j);
  EXPECT_GT(row(lb, "dear").usd_per_million, row(lb, "cheap").usd_per_million);
  EXPECT_TRUE(row(lb, "fast").pareto);
  EXPECT_TRUE(row(lb, "cheap").pareto);
  EXPECT_FALSE(row(lb, "dear").pareto) << "dominated by cheap";
  // A device the model does not fit on is a row that says so, last.
  const LeaderboardRow& small = lb.rows.back();
  EXPECT_EQ(small.device, "small");
  EXPECT_FALSE(small.fits);
  EXPECT_FALSE(small.feasible);
  EXPECT_FALSE(small.pareto);
  EXPECT_NE(small.why.find("does not fit"), std::string::npos) << small.why;
  // Tiers: fast 400 TFLOP/s with 80 GB is ultra; cheap is basic (50 TFLOP/s).
  EXPECT_EQ(row(lb, "fast").hw_tier, "ultra");
  EXPECT_EQ(row(lb, "cheap").hw_tier, "basic");
  EXPECT_EQ(small.hw_tier, "basic");

  std::istringstream csv(leaderboard_csv(lb));
  std::string line;
  int lines = 0;
  while (std::getline(csv, line)) ++lines;
  EXPECT_EQ(lines, 5);
  const std::string md = leaderboard_markdown(lb);
  for (const char* d : {"fast", "cheap", "dear", "does not fit"}) EXPECT_NE(md.find(d), std::string::npos) << d;
}

TEST(Leaderboard, TheRateGateSplitsFeasibleFromInfeasibleAndSortsThemFirst) {
  const std::string catalog = test_catalog();
  LeaderboardOptions o;
  o.devices = {"cheap", "fast"};
  Leaderboard lb = make_leaderboard(tiny(), catalog, default_cards_dir(), o, nullptr);
  ASSERT_EQ(lb.rows.size(), 2u);
  const double fast = row(lb, "fast").rate_hz, cheap = row(lb, "cheap").rate_hz;
  ASSERT_GT(fast, cheap);
  o.min_hz = (fast + cheap) / 2;
  int calls = 0;
  double last = 0;
  lb = make_leaderboard(tiny(), catalog, default_cards_dir(), o, [&](double f) {
    ++calls;
    EXPECT_GT(f, last);
    last = f;
  });
  EXPECT_EQ(calls, 2);
  EXPECT_DOUBLE_EQ(last, 1.0);
  EXPECT_EQ(lb.rows[0].device, "fast");
  EXPECT_TRUE(lb.rows[0].feasible);
  EXPECT_FALSE(lb.rows[1].feasible);
  EXPECT_FALSE(lb.rows[1].pareto) << "only feasible devices are on the front";
}

TEST(Leaderboard, UnknownDevicesAndLinksAreRefusedWithTheValidNames) {
  const std::string catalog = test_catalog();
  for (const std::string bad : {"nope", "wire"}) {
    LeaderboardOptions o;
    o.devices = {"fast", bad};
    try {
      make_leaderboard(tiny(), catalog, default_cards_dir(), o, nullptr);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--devices"), std::string::npos) << what;
      EXPECT_NE(what.find("'" + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("valid names are: cheap, dear, fast, small"), std::string::npos) << what;
    }
  }
}

TEST(Roofline, RowsAddUpToThePlanAndTheirBoundsFollowTheRidge) {
  const std::string catalog = test_catalog();
  const Scenario s = one_device_scenario(tiny(), "cheap", catalog, default_cards_dir());
  const Plan p = plan_scenario(s);
  const RooflineReport r = make_roofline(s, p, 0);
  ASSERT_FALSE(r.rows.empty());
  double flops = 0, seconds = 0, share = 0, op_seconds = 0;
  int ops = 0;
  for (const RooflineRow& x : r.rows) {
    flops += x.flops;
    seconds += x.seconds;
    share += x.share;
    ops += x.ops;
    EXPECT_EQ(x.device, "cheap");
    EXPECT_EQ(x.unit, s.devices[0].units[0].name);
    EXPECT_EQ(x.dtype, "bf16");
    EXPECT_EQ(x.bound, x.intensity >= x.ridge ? "compute" : "memory") << x.stage << "." << x.op_class;
    EXPECT_LE(x.attainable_flops, x.peak_flops * (1 + 1e-12));
    EXPECT_NEAR(x.ridge, x.peak_flops / x.bandwidth, 1e-9 * x.ridge);
    // gemm rows run at the matrix rate, norms at the vector rate (made-up: 50 and 5 TFLOP/s).
    if (x.op_class == "gemm") {
      EXPECT_DOUBLE_EQ(x.peak_flops, 50e12);
    }
    if (x.op_class == "norm") {
      EXPECT_DOUBLE_EQ(x.peak_flops, 5e12);
    }
  }
  const ModelPlan& mp = p.models[0];
  int graph_ops = 0;
  for (size_t i = 0; i < mp.graph.size(); ++i)
    if (mp.graph.op(static_cast<int>(i)).kind != OpKind::Transfer) {
      ++graph_ops;
      op_seconds += mp.op_costs[i].seconds;
    }
  EXPECT_EQ(ops, graph_ops);
  EXPECT_NEAR(flops, mp.graph.flops(), 1e-9 * flops);
  EXPECT_NEAR(seconds, op_seconds, 1e-12);
  EXPECT_NEAR(r.request_seconds, op_seconds, 1e-12);
  EXPECT_NEAR(share, 1, 1e-9);

  const fs::path dir = testing::scratch_dir("roofline_out");
  std::vector<std::string> warnings;
  const auto files = write_roofline(r, dir.string(), &warnings);
  EXPECT_TRUE(fs::exists(dir / "roofline.md"));
  std::ifstream csv(dir / "roofline.csv");
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("model,device,catalog,unit,stage,class,dtype,", 0), 0u) << header;
  size_t lines = 0;
  while (std::getline(csv, line)) ++lines;
  EXPECT_EQ(lines, r.rows.size());
  if (on_path("gnuplot")) {
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    EXPECT_TRUE(fs::exists(dir / "roofline_cheap.svg"));
  }
}

}  // namespace
}  // namespace vlasim
