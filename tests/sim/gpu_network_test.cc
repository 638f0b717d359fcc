// Vidur's network profiles as link and collective costs (sim/measured/gpu_network.h): the vendored files
// (data/gpu_profiles/vidur/data/profiling/network) imported and fitted, the fit checked against
// the measured rows (in sample and held out), the network profile file, and a scenario link
// that takes its transfer time from a measured entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "scenarios/config/config.h"
#include "scenarios/scenario.h"
#include "scratch.h"
#include "sim/measured/gpu_network.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/engine/planner.h"

namespace vlasim {
namespace {

const std::string kSrc = VLASIM_SOURCE_DIR;
const std::string kNet = kSrc + "/data/gpu_profiles/vidur/data/profiling/network";

std::map<std::string, NetworkGroup> by_name(const std::vector<NetworkGroup>& gs) {
  std::map<std::string, NetworkGroup> m;
  for (const NetworkGroup& g : gs) EXPECT_TRUE(m.emplace(g.name(), g).second) << "two groups named " << g.name();
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

const std::map<std::string, NetworkGroup>& vendored() {
  static const std::map<std::string, NetworkGroup> m = by_name(import_vidur_network(kNet));
  return m;
}

TEST(GpuNetwork, ReadsTheVendoredFilesAsVidurWroteThem) {
  const auto& m = vendored();
  // Every link kind and GPU count of the four node types vendored.
  for (const char* n : {"a100_dgx.send_recv.intra_node", "a100_dgx.send_recv.inter_node", "a100_dgx.all_reduce.8gpu",
                        "a100_dgx.all_reduce.16gpu_2node", "h100_dgx.send_recv.intra_node", "h100_dgx.all_reduce.2gpu",
                        "h100_dgx.all_reduce.4gpu", "h100_dgx.all_reduce.8gpu", "a100_pairwise_nvlink.all_reduce.4gpu",
                        "a40_pairwise_nvlink.send_recv.intra_node"})
    EXPECT_TRUE(m.count(n)) << n;
  const NetworkGroup& h = m.at("h100_dgx.send_recv.intra_node");
  EXPECT_EQ(h.gpus, 2);
  EXPECT_EQ(h.gpus_per_node, 2);
  EXPECT_EQ(h.node_gpus, 8);
  // Vidur's size grid: 1024 fp16 elements (2 KiB) to 4096 x 8192 elements (64 MiB), 994 rows;
  // its ranges meet at 8M elements (16 MiB), measured twice.
  ASSERT_EQ(h.points.size(), 994u);
  EXPECT_EQ(h.points.front().bytes, 2048);
  EXPECT_EQ(h.points.back().bytes, 64.0 * 1024 * 1024);
  int equal = 0;
  for (size_t i = 1; i < h.points.size(); ++i) {
    EXPECT_GE(h.points[i].bytes, h.points[i - 1].bytes);
    if (h.points[i].bytes == h.points[i - 1].bytes) {
      ++equal;
      EXPECT_EQ(h.points[i].bytes, 16.0 * 1024 * 1024);
    }
  }
  EXPECT_EQ(equal, 1);
  // Milliseconds in the file, seconds here: the 64 MiB row reads 0.193 ms.
  EXPECT_NEAR(h.points.back().seconds, 0.193e-3, 1e-12);
  for (const NetworkPoint& p : h.points) {
    EXPECT_LE(p.min_s, p.seconds);
    EXPECT_GE(p.max_s, p.seconds);
  }
  // devices_per_node 1: two nodes (Vidur's inter-node pipeline link).
  EXPECT_EQ(m.at("a100_dgx.send_recv.inter_node").nodes(), 2);
  EXPECT_EQ(m.at("a100_dgx.all_reduce.16gpu_2node").nodes(), 2);
}

// The stated tolerance. Intra-node NVLink send_recv (H100 DGX, A100 DGX, A100 pair): latency +
// bytes / bandwidth within 10% of the measured median time at the median row and within 25% at
// the 90th percentile row. Single-node all_reduce on the DGX nodes (2, 4, 8 GPUs): within 15% at
// the median row, over all rows and over the rows from 1 MiB (below it NCCL's low-latency
// protocols make the line 20-55% off; reports/gpu_network.md). The errors are recomputed here
// from the rows, not taken from the fit's own figures.
TEST(GpuNetwork, FitReproducesTheMeasuredRows) {
  auto errors = [](const NetworkFit& f, const NetworkGroup& g, double from) {
    std::vector<double> e;
    for (const NetworkPoint& p : g.points)
      if (p.bytes >= from) e.push_back(std::abs(collective_seconds(f, p.bytes) / p.seconds - 1));
    std::sort(e.begin(), e.end());
    return e;
  };
  for (const char* n : {"h100_dgx.send_recv.intra_node", "a100_dgx.send_recv.intra_node",
                        "a100_pairwise_nvlink.send_recv.intra_node"}) {
    SCOPED_TRACE(n);
    const NetworkGroup& g = vendored().at(n);
    const NetworkFit f = fit_network(g);
    EXPECT_EQ(f.name, n);
    EXPECT_EQ(f.points, int(g.points.size()));
    EXPECT_GE(f.latency_s, 0);
    const std::vector<double> e = errors(f, g, 0);
    EXPECT_LE(e[e.size() / 2], 0.10);
    EXPECT_LE(e[size_t(0.9 * double(e.size() - 1))], 0.25);
    EXPECT_NEAR(f.median_error, e[e.size() / 2], 0.01);
  }
  for (const char* n : {"h100_dgx.all_reduce.2gpu", "h100_dgx.all_reduce.4gpu", "h100_dgx.all_reduce.8gpu",
                        "a100_dgx.all_reduce.2gpu", "a100_dgx.all_reduce.4gpu", "a100_dgx.all_reduce.8gpu"}) {
    SCOPED_TRACE(n);
    const NetworkGroup& g = vendored().at(n);
    const NetworkFit f = fit_network(g);
    EXPECT_EQ(f.collective, "all_reduce");
    EXPECT_EQ(f.nodes, 1);
    EXPECT_LE(median(errors(f, g, 0)), 0.15);
    EXPECT_LE(median(errors(f, g, 1 << 20)), 0.15);
  }
}

// Held out: fitted on the rows up to 16 MiB only, the fit predicts the 385 larger rows (16 to
// 64 MiB) of the H100 NVLink link within 10% at the median row.
TEST(GpuNetwork, FitOnSmallSizesPredictsTheLargeOnes) {
  const NetworkGroup& g = vendored().at("h100_dgx.send_recv.intra_node");
  const double cut = 16.0 * 1024 * 1024;
  const NetworkFit f = fit_network(g, cut);
  EXPECT_LE(f.max_bytes, cut);
  const std::vector<double> e = fit_errors(f, g, cut);
  EXPECT_GT(e.size(), 300u);
  EXPECT_LE(median(e), 0.10);
}

TEST(GpuNetwork, CollectiveSecondsIsLatencyPlusBusBytesOverBandwidth) {
  NetworkFit ar;
  ar.collective = "all_reduce";
  ar.gpus = 8;
  ar.latency_s = 20e-6;
  ar.bytes_per_s = 200e9;
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor("send_recv", 2), 1.0);
  EXPECT_DOUBLE_EQ(collective_seconds(ar, 0), 20e-6);
  EXPECT_DOUBLE_EQ(collective_seconds(ar, 1e9), 20e-6 + 1.75e9 / 200e9);
  EXPECT_DOUBLE_EQ(collective_seconds(ar, -5), 20e-6);  // no negative bytes
  // Non-decreasing in bytes, and more GPUs cost more at the same bus bandwidth.
  NetworkFit ar2 = ar;
  ar2.gpus = 2;
  for (double b = 1; b < 1e10; b *= 3) {
    EXPECT_LE(collective_seconds(ar, b), collective_seconds(ar, b * 3));
    EXPECT_LT(collective_seconds(ar2, b), collective_seconds(ar, b));
  }
  // On the measured H100 DGX rows, the fitted 8-GPU all_reduce is slower than the 2-GPU one for
  // 64 MiB (the bus factor 1.75 against 1), as measured.
  const NetworkGroup& g2 = vendored().at("h100_dgx.all_reduce.2gpu");
  const NetworkGroup& g8 = vendored().at("h100_dgx.all_reduce.8gpu");
  const double big = 64.0 * 1024 * 1024;
  EXPECT_GT(g8.points.back().seconds, g2.points.back().seconds);
  EXPECT_GT(collective_seconds(fit_network(g8), big), collective_seconds(fit_network(g2), big));
}

TEST(GpuNetwork, ProfileFileRoundTrips) {
  std::vector<NetworkFit> fits;
  for (const char* n : {"h100_dgx.send_recv.intra_node", "h100_dgx.all_reduce.8gpu"})
    fits.push_back(fit_network(vendored().at(n)));
  const std::string text = network_profile_yaml(fits, "a note\nof two lines");
  EXPECT_EQ(text.rfind("# a note\n# of two lines\nlinks:\n", 0), 0u);
  const std::vector<NetworkFit> back = parse_network_profile(text, "net.yaml");
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].name, fits[i].name);
    EXPECT_EQ(back[i].collective, fits[i].collective);
    EXPECT_EQ(back[i].gpus, fits[i].gpus);
    EXPECT_NEAR(back[i].latency_s, fits[i].latency_s, 1e-3 * fits[i].latency_s);
    EXPECT_NEAR(back[i].bytes_per_s, fits[i].bytes_per_s, 1e-3 * fits[i].bytes_per_s);
    EXPECT_EQ(back[i].source, fits[i].source);
  }
  EXPECT_EQ(back[1].gpus, 8);
}

template <typename F>
ConfigError refused(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return ConfigError("", 0, 0, "", "");
}

TEST(GpuNetwork, BadFilesAreRefusedAtTheirLineAndColumn) {
  const std::string head =
      ",time_stats.send_recv.min,time_stats.send_recv.max,time_stats.send_recv.mean,time_stats.send_recv.median,"
      "time_stats.send_recv.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n";
  const std::string row = "0,0.01,0.02,0.015,0.017,0.004,0,2,2048,send_recv,2,8\n";
  auto parse = [&](const std::string& t) { return parse_vidur_network(t, "send_recv.csv", "x"); };
  EXPECT_EQ(parse(head + row).size(), 1u);
  ConfigError e = refused([&] { parse(head + row + row.substr(0, 20)); });
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("truncated"), std::string::npos);
  e = refused([&] { parse(head + "0,0.01,0.02,0.015,0.017,0.004,0,4,2048,send_recv,2,8\n"); });
  EXPECT_EQ(e.key(), "num_workers");
  EXPECT_NE(std::string(e.what()).find("send_recv.csv:2:33:"), std::string::npos) << e.what();
  // Seconds where Vidur writes milliseconds.
  e = refused([&] { parse(head + "0,1e-5,2e-5,1.5e-5,1.7e-5,4e-6,0,2,2048,send_recv,2,8\n"); });
  EXPECT_NE(e.message().find("not plausibly in milliseconds"), std::string::npos);
  e = refused([&] { parse(head + "0,0.01,0.02,0.015,0.03,0.004,0,2,2048,send_recv,2,8\n"); });
  EXPECT_NE(e.message().find("outside [min, max]"), std::string::npos);
  e = refused([&] { parse(head + "0,0.01,0.02,0.015,0.017,0.004,0,2,2048,all_reduce,2,8\n"); });
  EXPECT_EQ(e.key(), "collective");
  e = refused([&] { parse(std::string(head).replace(head.find(",size,"), 6, ",bytes,") + row); });
  EXPECT_EQ(e.line(), 1);
  EXPECT_NE(e.message().find("unknown column 'bytes'"), std::string::npos);
  // One size only: no bandwidth.
  const std::vector<NetworkGroup> one = parse(head + row + row);
  e = refused([&] { fit_network(one.front()); });
  EXPECT_EQ(e.file(), "send_recv.csv");
  // The profile file: a bandwidth key of the other collective, an unknown key.
  e = refused([&] { parse_network_profile("links:\n  x:\n    collective: all_reduce\n    gpus: 8\n    latency_us: 1\n    gbs: 5\n", "n.yaml"); });
  EXPECT_EQ(e.line(), 6);
  EXPECT_NE(e.key().find("gbs"), std::string::npos) << e.key();
  e = refused([&] { parse_network_profile("links:\n  x:\n    collective: send_recv\n    latency_us: -1\n    gbs: 5\n", "n.yaml"); });
  EXPECT_EQ(e.line(), 4);
}

// A scenario link naming a measured entry gets its transfer time from it: the planned transfer
// of the inter-GPU Robion scenario costs the entry's latency + bytes / bandwidth, not the
// catalog's.
TEST(GpuNetwork, ScenarioLinkTakesItsTransferTimeFromTheMeasuredEntry) {
  const std::filesystem::path dir = testing::scratch_dir("gpu_network_link");
  // The A100 DGX's NVLink 3 figures on the scenario's nvlink4 link: clearly not the catalog's.
  const NetworkFit f = fit_network(vendored().at("a100_dgx.send_recv.intra_node"));
  {
    std::ofstream o(dir / "net.yaml");
    o << network_profile_yaml({f}, "test");
  }
  std::string text = read_input_file(kSrc + "/scenarios/systems/robion_intergpu_h100.yaml");
  const std::string link = "{catalog: nvlink4, between: [gpu0, gpu1]}";
  ASSERT_NE(text.find(link), std::string::npos);
  const std::string catalog_text = text;
  text.replace(text.find(link), link.size(),
               "{catalog: nvlink4, between: [gpu0, gpu1], profile: net.yaml, entry: a100_dgx.send_recv.intra_node}");
  {
    std::ofstream o(dir / "s.yaml");
    o << text;
  }
  const Scenario s = load_scenario((dir / "s.yaml").string(), default_catalog_dir(), kSrc + "/models/cards");
  ASSERT_EQ(s.links.size(), 1u);
  const NetworkFit back = load_network_profile((dir / "net.yaml").string()).front();
  EXPECT_DOUBLE_EQ(s.links[0].spec.latency_s, back.latency_s);
  EXPECT_DOUBLE_EQ(s.links[0].spec.h2d_bw, back.bytes_per_s);
  EXPECT_DOUBLE_EQ(s.links[0].spec.d2h_bw, back.bytes_per_s);
  const Scenario plain = load_scenario_text(catalog_text, "plain.yaml", default_catalog_dir(), kSrc + "/models/cards");
  const Plan p = plan_scenario(s), q = plan_scenario(plain);
  int transfers = 0;
  for (size_t m = 0; m < p.models.size(); ++m)
    for (size_t k = 0; k < p.models[m].segments.size(); ++k) {
      const Segment& t = p.models[m].segments[k];
      if (!t.transfer) continue;
      ++transfers;
      EXPECT_GT(t.bytes, 0);
      EXPECT_NEAR(t.seconds, collective_seconds(back, t.bytes), 1e-12);
      const Segment& c = q.models[m].segments[k];
      ASSERT_TRUE(c.transfer);
      EXPECT_NEAR(c.seconds, plain.links[0].spec.latency_s + c.bytes / plain.links[0].spec.h2d_bw, 1e-12);
      EXPECT_EQ(c.bytes, t.bytes);
      EXPECT_GT(std::abs(t.seconds / c.seconds - 1), 0.05);
    }
  EXPECT_GT(transfers, 0);
  // A missing file, an unknown entry and an all_reduce entry are refused at the link's keys.
  auto with = [&](const std::string& extra) {
    std::string t = catalog_text;
    t.replace(t.find(link), link.size(), "{catalog: nvlink4, between: [gpu0, gpu1], " + extra + "}");
    std::ofstream(dir / "bad.yaml") << t;
    return refused([&] { load_scenario((dir / "bad.yaml").string(), default_catalog_dir(), kSrc + "/models/cards"); });
  };
  ConfigError e = with("profile: nothere.yaml, entry: x");
  EXPECT_NE(e.key().find("profile"), std::string::npos) << e.key();
  e = with("profile: net.yaml, entry: nvlink9");
  EXPECT_NE(e.key().find("entry"), std::string::npos) << e.key();
  EXPECT_NE(e.message().find("a100_dgx.send_recv.intra_node"), std::string::npos);
  {
    std::ofstream o(dir / "net.yaml");
    o << network_profile_yaml({f, fit_network(vendored().at("h100_dgx.all_reduce.8gpu"))}, "test");
  }
  e = with("profile: net.yaml, entry: h100_dgx.all_reduce.8gpu");
  EXPECT_NE(e.message().find("send_recv"), std::string::npos);
}

// Issue 49 items 2 and 8: the held-out cut must be a number (NaN made the fit read past its
// errors, SIGSEGV), and a time flat in the size is no link (it was fitted as 1.2e17 GB/s and
// written, a file vlasim's own link loader then refused).
TEST(GpuNetwork, FitRefusesANaNCutAndABandwidthNoLinkHas) {
  const NetworkGroup& g = vendored().at("h100_dgx.send_recv.intra_node");
  EXPECT_THROW(fit_network(g, std::nan("")), std::invalid_argument);
  EXPECT_THROW(fit_network(g, -1), std::invalid_argument);
  NetworkGroup flat = g;
  for (NetworkPoint& p : flat.points) p.seconds = 1e-5 * (1 + 1e-12 * p.bytes / 1e6);
  const ConfigError e = refused([&] { fit_network(flat); });
  EXPECT_EQ(e.file(), g.file);
  EXPECT_NE(e.message().find("outside what a link can be (0.001 to 1e6 GB/s"), std::string::npos) << e.message();
  // Every fit of the vendored files is one the network profile reader takes back.
  std::vector<NetworkFit> fits;
  for (const auto& [name, grp] : vendored()) fits.push_back(fit_network(grp));
  EXPECT_EQ(parse_network_profile(network_profile_yaml(fits, "t"), "n.yaml").size(), fits.size());
}

// Issue 49 items 13 and 14: a measured entry (between two GPUs) on a CPU-to-GPU PCIe link is
// refused at the link's `entry:`; a `profile:` that is a device is refused at the scenario's
// file, line and key.
TEST(GpuNetwork, LinkEntryOnlyBetweenGpusAndProfileRefusedAtTheScenarioKey) {
  const std::filesystem::path dir = testing::scratch_dir("gpu_network_link_ends");
  {
    std::ofstream o(dir / "net.yaml");
    o << network_profile_yaml({fit_network(vendored().at("h100_dgx.send_recv.intra_node"))}, "test");
  }
  const std::string text = read_input_file(kSrc + "/scenarios/systems/hybrid_orion_l20.yaml");
  const std::string link = "{catalog: pcie4-x16, between: [cpu0, gpu0], memory: pinned}";
  ASSERT_NE(text.find(link), std::string::npos);
  auto with = [&](const std::string& extra) {
    std::string t = text;
    t.replace(t.find(link), link.size(), "{catalog: pcie4-x16, between: [cpu0, gpu0], memory: pinned, " + extra + "}");
    std::ofstream(dir / "s.yaml") << t;
    return refused([&] { load_scenario((dir / "s.yaml").string(), default_catalog_dir(), kSrc + "/models/cards"); });
  };
  ConfigError e = with("profile: net.yaml, entry: h100_dgx.send_recv.intra_node");
  EXPECT_EQ(e.file(), (dir / "s.yaml").string());
  EXPECT_NE(e.key().find("entry"), std::string::npos) << e.key();
  EXPECT_NE(e.message().find("this link's end 'cpu0' is a cpu"), std::string::npos) << e.message();
  e = with("profile: /dev/zero, entry: x");
  EXPECT_EQ(e.file(), (dir / "s.yaml").string());
  EXPECT_GT(e.line(), 0);
  EXPECT_NE(e.key().find("profile"), std::string::npos) << e.key();
  EXPECT_NE(e.message().find("not a regular file"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace vlasim
