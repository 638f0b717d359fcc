// The measured host entry (sim/measured/profile.h HostEntry): it round-trips through the profile file,
// bad entries are refused by key, and once applied to a CPU spec it changes the engine's
// predicted slowdown of core groups that run at once (sim/engine/engine.cc) and nothing else.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "reports/drift.h"
#include "sim/engine/engine.h"
#include "sim/measured/profile.h"

namespace vlasim {
namespace {

DeviceProfile small_profile() {
  DeviceProfile p;
  p.catalog_device = "epyc-2vcpu";
  p.machine = "Test CPU";
  p.isa = "avx2";
  p.logical_cpus = 2;
  p.executor = "onednn";
  p.date = "2026-12-03T00:00:00Z";
  p.grid = "none";
  p.threads = {1, 2};
  p.dtypes = {DType::F32};
  ProfileSection s;
  s.threads = 1;
  s.dtype = DType::F32;
  s.executor_device = "cpu0";
  p.sections.push_back(s);
  p.host.groups = {{1, 12.5e9, 7.25e9}, {2, 15e9, 15e9}};
  p.host.node_bw = 14.5e9;
  p.host.llc_bytes = 32.0 * 1024 * 1024;
  p.host.llc_shared_cpus = 2;
  p.host.freq_hz = 2.6e9;
  p.sentinel.samples = {{0, 0.0031}, {2.0, 0.0032}, {4.1, 0.0033}};
  return p;
}

TEST(HostEntry, RoundTripsThroughTheProfileFile) {
  const DeviceProfile p = small_profile();
  const std::string text = profile_to_json(p);
  const DeviceProfile q = parse_profile(text, "p.json");
  EXPECT_EQ(q.host, p.host);
  EXPECT_EQ(q.sentinel, p.sentinel);
  EXPECT_EQ(q, p);
  EXPECT_EQ(profile_to_json(q), text);
  // A profile without them (older, or a GPU's) writes neither key and reads back empty.
  DeviceProfile bare = p;
  bare.host = {};
  bare.sentinel = {};
  const std::string bare_text = profile_to_json(bare);
  EXPECT_EQ(bare_text.find("\"host\""), std::string::npos);
  EXPECT_TRUE(parse_profile(bare_text, "p.json").host.empty());
}

// "key: message" of the error parse_profile gives profile text `text` (an error naming another
// file fails), or "accepted".
std::string refusal(const std::string& text) {
  try {
    parse_profile(text, "bad.json");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    return e.key() + ": " + e.message();
  }
  return "accepted";
}

// The key a ConfigError names when the small profile's text, edited by `edit`, is read.
std::string refused_key(void (*edit)(std::string&)) {
  std::string text = profile_to_json(small_profile());
  edit(text);
  return refusal(text);
}

void replace(std::string& t, const std::string& a, const std::string& b) {
  const size_t at = t.find(a);
  ASSERT_NE(at, std::string::npos) << a;
  t.replace(at, a.size(), b);
}

// refusal() of profile text `text` with `a` replaced by `b`.
std::string refused_edit(const std::string& text, const std::string& a, const std::string& b) {
  std::string bad = text;
  replace(bad, a, b);
  return refusal(bad);
}

TEST(HostEntry, BadEntriesAreRefusedByKey) {
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"alone_bw\": 12500000000.0", "\"alone_bw\": -1"); }),
            "host.groups[0].alone_bw: must be > 0: from 1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"llc_shared_cpus\": 2,\n  \"node_bw\": 14500000000.0", "\"llc_shared_cpus\": 2"); }),
            "host.node_bw: missing");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"freq_hz\": 2600000000.0", "\"freq_hz\": \"fast\""); }),
            "host.freq_hz: expected a number");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"cores\": 2", "\"cores\": 1"); }),
            "host.groups[1].cores: groups must grow in cores (each size once)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"cores\": 2", "\"cores\": 4"); }),
            "host.groups: a group of 4 cores, but the profile was made on 2 logical CPUs");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"llc_bytes\"", "\"llc\""); }).substr(0, 9), "host.llc:");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "0.0033", "-0.0033"); }), "sentinel[2][1]: must be > 0");
}

// Issue 49 item 3: figures no machine has (1e300 or 1e-300 bytes/s, half a byte of cache, a
// sentinel kernel of 1e300 s) are refused at their key, not simulated as 0 of 200 finished.
TEST(HostEntry, FiguresOutsidePhysicalBoundsAreRefusedByKey) {
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"alone_bw\": 12500000000.0", "\"alone_bw\": 1e300"); }),
            "host.groups[0].alone_bw: must be from 1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"alone_bw\": 12500000000.0", "\"alone_bw\": 1e-300"); }),
            "host.groups[0].alone_bw: must be from 1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"node_bw\": 14500000000.0", "\"node_bw\": 1e-300"); }),
            "host.node_bw: must be from 1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"loaded_bw\": 7250000000.0", "\"loaded_bw\": 0"); }),
            "host.groups[0].loaded_bw: must be > 0: from 1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"llc_bytes\": 33554432.0", "\"llc_bytes\": 0.5"); }),
            "host.llc_bytes: must be 0 (not measured) or a whole number of bytes from 64 KiB to 64 GiB");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "\"freq_hz\": 2600000000.0", "\"freq_hz\": 3"); }),
            "host.freq_hz: must be 0 (not measured) or from 1e7 to 1e11 Hz (10 MHz to 100 GHz)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "0.0033", "1e300"); }),
            "sentinel[2][1]: must be at most 60 seconds (one sentinel kernel)");
  EXPECT_EQ(refused_key([](std::string& t) { replace(t, "4.1", "1e300"); }),
            "sentinel[2][0]: must be from 0 to 1e7 seconds since the start (116 days)");
}

TEST(HostEntry, ApplyReplacesTheCatalogBandwidthAndCache) {
  DeviceSpec spec;
  spec.type = DeviceType::Cpu;
  spec.numa_nodes = 1;
  spec.core_bw = 14e9;
  spec.mem_bw = 20e9;
  spec.l2_bytes = 1e6;
  const DeviceProfile p = small_profile();
  apply_host_entry(spec, p.host, p.logical_cpus);
  EXPECT_DOUBLE_EQ(spec.core_bw, 12.5e9);
  EXPECT_DOUBLE_EQ(spec.mem_bw, 14.5e9);
  EXPECT_DOUBLE_EQ(spec.core_bw_loaded, 7.25e9);  // node_bw over 2 CPUs
  EXPECT_DOUBLE_EQ(spec.l2_bytes, 32.0 * 1024 * 1024);
}

// Two 1-core groups of one CPU node, each running one 10 ms segment (compute 0.5 and memory
// 0.5 of its time), started together or apart.
struct TwoGroups {
  Scenario s;
  Plan p;
  explicit TwoGroups(const DeviceSpec& spec) {
    DeviceInstance cpu;
    cpu.name = "cpu0";
    cpu.spec = spec;
    cpu.units.resize(2);
    for (int i = 0; i < 2; ++i) {
      cpu.units[static_cast<size_t>(i)].name = i ? "b" : "a";
      cpu.units[static_cast<size_t>(i)].cores = 1;
      cpu.units[static_cast<size_t>(i)].first_core = i;
    }
    s.devices = {cpu};
    s.queue.name = "fifo";
    s.pipeline.name = "serial";
    s.drain_s = 10;
    p.domains = 1;
    p.domain_names = {"cpu0"};
    p.domain_resources = {3};  // each group's cores, the node's DRAM
    for (int u = 0; u < 2; ++u) {
      UnitInfo ui;
      ui.name = u ? "cpu0.b" : "cpu0.a";
      ui.device = 0;
      ui.unit = u;
      ui.type = DeviceType::Cpu;
      ui.compute_resource = u;
      ui.memory_resource = 2;
      ui.memory_share = 0.5;
      p.units.push_back(ui);
      ModelInstance mi;
      mi.name = u ? "mb" : "ma";
      s.models.push_back(mi);
      ModelPlan mp;
      mp.model = u;
      Segment seg;
      seg.unit = u;
      seg.seconds = 0.010;
      seg.compute_frac = 0.5;
      seg.memory_frac = 0.5;
      seg.stage_seconds[static_cast<int>(Stage::Prefix)] = seg.seconds;
      seg.label = "seg";
      // One GEMM each, of different widths: the work corun_key hashes.
      Op op;
      op.kind = OpKind::Gemm;
      op.fn = OpFn::Linear;
      op.dtype = DType::F32;
      op.m = 16;
      op.n = u ? 512 : 256;
      op.k = 256;
      op.name = "g";
      seg.ops = {mp.graph.add(op)};
      mp.segments.push_back(seg);
      mp.alone_seconds = seg.seconds;
      p.models.push_back(mp);
    }
  }
  // Latencies of the two models' single requests, b starting `offset` seconds after a.
  std::pair<double, double> run(double offset) {
    s.streams.clear();
    for (int m = 0; m < 2; ++m) {
      StreamDecl sd;
      sd.name = m ? "sb" : "sa";
      sd.model = m;
      sd.rate_hz = 1;
      sd.duration_s = 0.5;
      sd.start_s = m ? offset : 0;
      s.streams.push_back(sd);
    }
    SimResult r = simulate(s, p);
    EXPECT_EQ(r.requests.size(), 2u);
    double la = 0, lb = 0;
    for (const RequestRecord& q : r.requests) (q.model ? lb : la) = q.latency();
    return {la, lb};
  }
};

DeviceSpec catalog_cpu() {
  DeviceSpec spec;
  spec.name = "epyc-2vcpu";
  spec.type = DeviceType::Cpu;
  spec.sockets = 1;
  spec.cores_per_socket = 2;
  spec.numa_nodes = 1;
  spec.core_bw = 14e9;
  spec.mem_bw = 20e9;
  return spec;
}

TEST(HostEntry, AnAppliedEntrySlowsOverlappedGroupsAsItsLoadedBandwidthSays) {
  // The catalog CPU: memory demands (0.5 x 0.5 each) stay below the node's, no slowdown.
  TwoGroups catalog(catalog_cpu());
  auto [ca, cb] = catalog.run(0);
  EXPECT_NEAR(ca, 0.010, 1e-9);
  EXPECT_NEAR(cb, 0.010, 1e-9);
  // The measured host: one core moves 12.5 GB/s alone, 7.25 with the other streaming
  // (ratio 1.724): each overlapped segment's memory half stretches by that ratio.
  DeviceSpec host = catalog_cpu();
  const DeviceProfile p = small_profile();
  apply_host_entry(host, p.host, p.logical_cpus);
  TwoGroups measured(host);
  auto [ma, mb] = measured.run(0);
  const double slowdown = 1 + 0.5 * (12.5 / 7.25 - 1);
  EXPECT_NEAR(ma, 0.010 * slowdown, 1e-7);
  EXPECT_NEAR(mb, 0.010 * slowdown, 1e-7);
  // Apart, each runs alone: the entry changes nothing there.
  auto [aa, ab] = measured.run(0.1);
  EXPECT_NEAR(aa, 0.010, 1e-9);
  EXPECT_NEAR(ab, 0.010, 1e-9);
  // Half overlapped: b starts when a is half done; a's second half and b's first are slowed.
  auto [ha, hb] = measured.run(0.005);
  EXPECT_NEAR(ha, 0.005 + 0.005 * slowdown, 1e-7);
  EXPECT_GT(hb, 0.010);
  EXPECT_LT(hb, 0.010 * slowdown);
}

TEST(HostEntry, CorunSlowdownsSayWhatTheEngineDoesWithTheOtherGroupBusy) {
  TwoGroups catalog(catalog_cpu());
  for (const CorunRow& r : corun_slowdowns(catalog.s, catalog.p)) EXPECT_EQ(r.slowdown, 1.0);
  DeviceSpec host = catalog_cpu();
  const DeviceProfile p = small_profile();
  apply_host_entry(host, p.host, p.logical_cpus);
  TwoGroups measured(host);
  const std::vector<CorunRow> rows = corun_slowdowns(measured.s, measured.p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].segment, "ma seg");
  EXPECT_EQ(rows[1].unit, 1);
  const double slowdown = 1 + 0.5 * (12.5 / 7.25 - 1);
  EXPECT_NEAR(rows[0].slowdown, slowdown, 1e-12);
  // ... which is what the engine gives two such segments run together.
  EXPECT_NEAR(measured.run(0).first / 0.010, rows[0].slowdown, 1e-5);
}

DeviceProfile profile_with_corun() {
  DeviceProfile p = small_profile();
  p.host.corun = {{"0000000000000001-0000000000000002", "s m vision (cpu0.a)", 12, 0.93, 1.18},
                  {"00000000000000aa-0000000000000002", "s m action (cpu0.b)", 40, 1.0, 0.97}};
  return p;
}

TEST(HostEntry, CorunSlowdownsRoundTripAndBadOnesAreRefusedByKey) {
  const DeviceProfile p = profile_with_corun();
  const std::string text = profile_to_json(p);
  EXPECT_EQ(parse_profile(text, "p.json"), p);
  EXPECT_EQ(profile_to_json(parse_profile(text, "p.json")), text);
  ASSERT_NE(p.host.corun_for("00000000000000aa-0000000000000002"), nullptr);
  EXPECT_EQ(p.host.corun_for("00000000000000aa-0000000000000002")->runs, 40);
  EXPECT_EQ(p.host.corun_for("nope"), nullptr);
  auto refused = [&](const std::string& a, const std::string& b) { return refused_edit(text, a, b); };
  EXPECT_EQ(refused("\"slowdown\": 1.18", "\"slowdown\": -1.18"), "host.corun[0].slowdown: must be > 0");
  EXPECT_EQ(refused("\"slowdown\": 1.18", "\"slowdown\": 1e9"), "host.corun[0].slowdown: must be at most 100");
  EXPECT_EQ(refused("\"overlap\": 0.93", "\"overlap\": 1.5"),
            "host.corun[0].overlap: must be at most 1 (a share of the segment's time)");
  EXPECT_EQ(refused("\"runs\": 40", "\"runs\": 0"), "host.corun[1].runs: must be in [1, 1073741824]");
  EXPECT_EQ(refused("00000000000000aa-", "0000000000000001-"), "host.corun[1].key: co-run keys must increase (each key once)");
  EXPECT_EQ(refused("\"segment\": \"s m vision (cpu0.a)\"", "\"segment\": 3"), "host.corun[0].segment: expected a string");
  // merge_corun replaces an entry of the same key and keeps the keys in order.
  HostEntry h = p.host;
  h.merge_corun({{"0000000000000001-0000000000000002", "again", 6, 0.8, 1.3}, {"0000000000000000-0", "first", 5, 0.9, 1.1}});
  ASSERT_EQ(h.corun.size(), 3u);
  EXPECT_EQ(h.corun[0].segment, "first");
  EXPECT_EQ(h.corun[1].slowdown, 1.3);
  EXPECT_EQ(h.corun[2].runs, 40);
  // Applied, they reach the spec by key; list host prints them.
  DeviceSpec spec = catalog_cpu();
  apply_host_entry(spec, p.host, p.logical_cpus);
  EXPECT_EQ(spec.corun_slowdown.size(), 2u);
  EXPECT_EQ(spec.corun_slowdown.at("0000000000000001-0000000000000002"), 1.18);
  EXPECT_NE(host_entry_text(p.host, 2).find("x1.180  s m vision (cpu0.a)  (12 runs, 93% overlapped"), std::string::npos);
}

TEST(HostEntry, AnLlcBeyondAnyRealCpuIsSaidAndNotUsed) {
  HostEntry h = small_profile().host;
  EXPECT_EQ(llc_problem(h), "");  // 32 MiB over 2 CPUs
  h.llc_bytes = 480.0 * 1024 * 1024;  // what this project's VM reports: its host's whole L3
  h.llc_shared_cpus = 2;
  const std::string why = llc_problem(h);
  EXPECT_NE(why.find("480 MiB shared by 2 CPU(s) is 240 MiB per CPU"), std::string::npos) << why;
  DeviceSpec spec = catalog_cpu();
  spec.l2_bytes = 32e6;
  apply_host_entry(spec, h, 2);
  EXPECT_EQ(spec.l2_bytes, 32e6);  // the catalog's stays
  EXPECT_NE(host_entry_text(h, 2).find("last-level cache implausible, not used"), std::string::npos);
  h.llc_shared_cpus = 128;  // the same cache over a whole socket's cores: plausible, used
  EXPECT_EQ(llc_problem(h), "");
  apply_host_entry(spec, h, 2);
  EXPECT_EQ(spec.l2_bytes, h.llc_bytes);
  h.llc_bytes = 0;  // unknown: nothing to say
  EXPECT_EQ(llc_problem(h), "");
}

TEST(HostEntry, TheBandwidthCurveSaysHowMuchCacheACoreGets) {
  HostEntry h = small_profile().host;  // 32 MiB LLC over 2 CPUs: plausible by the bound
  const double MiB = 1048576;
  // Fast (cache) up to 16 MiB, memory's 10 GB/s from 64 MiB: about 16 MiB of cache.
  h.curve = {{4 * MiB, 40e9}, {8 * MiB, 38e9}, {16 * MiB, 30e9}, {32 * MiB, 12e9}, {64 * MiB, 10e9}, {128 * MiB, 10.2e9}};
  EXPECT_EQ(curve_llc_bytes(h), 16 * MiB);
  EXPECT_EQ(llc_problem(h), "");  // 32 MiB reported: the fall at 32 MiB is not under half of it
  h.llc_bytes = 96 * MiB;  // over 2 CPUs: within the bound, but the curve falls by 32 MiB, under half
  h.llc_shared_cpus = 2;
  const std::string why = llc_problem(h);
  EXPECT_NE(why.find("falls from 30.0 GB/s at 16 MiB to memory's 10.2 GB/s by 32 MiB"), std::string::npos) << why;
  DeviceSpec spec = catalog_cpu();
  spec.l2_bytes = 32e6;
  apply_host_entry(spec, h, 2);
  EXPECT_EQ(spec.l2_bytes, 16 * MiB);  // the curve's estimate stands in for the implausible figure
  EXPECT_NE(host_entry_text(h, 2).find("cache it gets: about 16 MiB"), std::string::npos);
  // Still falling at the largest size (no plateau), or flat all through: the curve says nothing.
  HostEntry falling = h;
  falling.curve.back().second = 6e9;
  EXPECT_EQ(curve_llc_bytes(falling), 0);
  HostEntry flat = h;
  for (auto& pt : flat.curve) pt.second = 25e9;
  EXPECT_EQ(curve_llc_bytes(flat), 0);
  EXPECT_EQ(llc_problem(flat), "");
  // It round-trips; sizes must grow and figures be positive.
  DeviceProfile p = small_profile();
  p.host.curve = h.curve;
  const std::string text = profile_to_json(p);
  EXPECT_EQ(parse_profile(text, "p.json").host, p.host);
  std::string bad = text;
  replace(bad, "8388608.0", "67108864.0");  // the second size past the third
  try {
    parse_profile(bad, "bad.json");
    ADD_FAILURE() << "a curve whose sizes do not grow was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "host.curve[2][0]");
    EXPECT_EQ(e.message(), "curve sizes must increase");
  }
}

TEST(HostEntry, AMeasuredCorunSlowdownStandsForItsSegmentOnly) {
  DeviceSpec host = catalog_cpu();
  const DeviceProfile p = small_profile();
  apply_host_entry(host, p.host, p.logical_cpus);
  TwoGroups g(host);
  const std::string ka = corun_key(g.s, g.p, 0, 0), kb = corun_key(g.s, g.p, 1, 0);
  ASSERT_EQ(ka.size(), 33u);
  EXPECT_NE(ka, kb);
  // Measured for a only: a takes it (x1.5 while b runs), b keeps the bandwidth model.
  g.s.devices[0].spec.corun_slowdown[ka] = 1.5;
  const double bw = 1 + 0.5 * (12.5 / 7.25 - 1);
  bool measured = false;
  EXPECT_EQ(corun_slowdown(g.s, g.p, 0, 0, &measured), 1.5);
  EXPECT_TRUE(measured);
  EXPECT_NEAR(corun_slowdown(g.s, g.p, 1, 0, &measured), bw, 1e-12);
  EXPECT_FALSE(measured);
  // Both measured: b (x1.2) ends at 12 ms; a has done 8 of its 10 ms by then, the rest alone.
  g.s.devices[0].spec.corun_slowdown[kb] = 1.2;
  auto [a, b] = g.run(0);
  EXPECT_NEAR(b, 0.012, 1e-7);
  EXPECT_NEAR(a, 0.014, 1e-7);
  const std::vector<CorunRow> rows = corun_slowdowns(g.s, g.p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].measured);
  EXPECT_EQ(rows[0].slowdown, 1.5);
  // A measured figure below 1 (noise) never speeds a segment up.
  g.s.devices[0].spec.corun_slowdown[ka] = 0.9;
  g.s.devices[0].spec.corun_slowdown[kb] = 0.9;
  auto [fa, fb] = g.run(0);
  EXPECT_NEAR(fa, 0.010, 1e-9);
  EXPECT_NEAR(fb, 0.010, 1e-9);
  // The same figures on the catalog CPU (no loaded bandwidth) are used all the same.
  TwoGroups c(catalog_cpu());
  c.s.devices[0].spec.corun_slowdown = {{ka, 1.5}, {kb, 1.2}};
  auto [ca, cb] = c.run(0);
  EXPECT_NEAR(ca, 0.014, 1e-7);
  EXPECT_NEAR(cb, 0.012, 1e-7);
}

// Streaming segments whose memory demands together exceed the node's DRAM (each takes 0.6 of
// it for all of its time: max-min sharing alone would give each 1/1.2 of its speed while both
// run). A measured co-run figure already includes that contention, so it is the whole
// slowdown: c at full overlap, 1 + (c - 1) x the overlapped share of its alone work otherwise,
// and none at all for a figure of 1.
TEST(HostEntry, AMeasuredCorunFigureIsTheWholeSlowdownNotAddedToBandwidthSharing) {
  auto streaming = [](double seconds_b) {
    TwoGroups g(catalog_cpu());
    for (int u = 0; u < 2; ++u) {
      g.p.units[static_cast<size_t>(u)].memory_share = 0.6;
      Segment& seg = g.p.models[static_cast<size_t>(u)].segments[0];
      seg.compute_frac = 0.2;
      seg.memory_frac = 1.0;
    }
    Segment& b = g.p.models[1].segments[0];
    b.seconds = seconds_b;
    b.stage_seconds[static_cast<int>(Stage::Prefix)] = seconds_b;
    g.p.models[1].alone_seconds = seconds_b;
    return g;
  };
  // Without measured figures (the catalog CPU, no loaded bandwidth): max-min sharing of the
  // DRAM is all there is, 1.2x while both run.
  TwoGroups shared = streaming(0.030);
  auto [sa, sb] = shared.run(0);
  EXPECT_NEAR(sa, 0.012, 1e-7);
  // a measured x1.10 beside b, b measured x1.00 beside a; b (30 ms) overlaps all of a.
  const double c = 1.10;
  TwoGroups g = streaming(0.030);
  const std::string ka = corun_key(g.s, g.p, 0, 0), kb = corun_key(g.s, g.p, 1, 0);
  g.s.devices[0].spec.corun_slowdown = {{ka, c}, {kb, 1.0}};
  auto [fa, fb] = g.run(0);
  EXPECT_NEAR(fa / 0.010, c, 0.01 * c);       // fully overlapped: its figure (was 1.2)
  EXPECT_NEAR(fa / 0.010, c, 1e-5);
  EXPECT_NEAR(fb, 0.030, 1e-7);               // a figure of 1: not slowed by the sharing
  // Half overlapped: b starts when a has run 5 ms alone; the other 5 ms run beside b.
  auto [ha, hb] = g.run(0.005);
  EXPECT_NEAR(ha / 0.010, 1 + (c - 1) / 2, 0.01);
  EXPECT_NEAR(ha, 0.005 + 0.005 * c, 1e-7);
  EXPECT_NEAR(hb, 0.030, 1e-7);
  // A segment with a measured figure beside one without: the measured one takes its figure
  // only; the other keeps max-min sharing of what is left by all but measured traffic (here
  // nothing limits it: its own 0.6 fits).
  TwoGroups mixed = streaming(0.030);
  mixed.s.devices[0].spec.corun_slowdown = {{ka, c}};
  auto [ma, mb] = mixed.run(0);
  EXPECT_NEAR(ma, 0.010 * c, 1e-7);
  EXPECT_NEAR(mb, 0.030, 1e-7);
  // Both figures 1: no slowdown at all, where sharing alone gave 1.2x.
  TwoGroups ones = streaming(0.010);
  ones.s.devices[0].spec.corun_slowdown = {{ka, 1.0}, {kb, 1.0}};
  auto [oa, ob] = ones.run(0);
  EXPECT_NEAR(oa, 0.010, 1e-9);
  EXPECT_NEAR(ob, 0.010, 1e-9);
  // A declared background load, which the co-run pass never saw, still takes its share of the
  // DRAM from a measured segment: 0.7 of it taken leaves 0.3 for a's 0.6, half speed.
  TwoGroups bg = streaming(0.030);
  bg.s.devices[0].spec.corun_slowdown = {{ka, c}, {kb, 1.0}};
  BackgroundLoad load;
  load.device = "cpu0";
  load.memory = 0.7;
  bg.s.background = {load};
  auto [ba, bb] = bg.run(0.1);  // apart: each beside the background only
  EXPECT_NEAR(ba, 0.020, 1e-7);
  EXPECT_NEAR(bb, 0.060, 1e-7);
}

TEST(HostEntry, CorunKeysFollowTheWorkAndItsCoRunnersNotNames) {
  TwoGroups g(catalog_cpu());
  const std::string ka = corun_key(g.s, g.p, 0, 0);
  // Renamed scenario, models, units and segments: the same key.
  TwoGroups renamed(catalog_cpu());
  renamed.s.name = "other";
  renamed.s.models[0].name = "x";
  renamed.p.units[0].name = "cpu9.z";
  renamed.p.models[0].segments[0].label = "renamed";
  EXPECT_EQ(corun_key(renamed.s, renamed.p, 0, 0), ka);
  // Another co-runner on b: a's own half stays, its co-runners' half changes.
  TwoGroups other(catalog_cpu());
  other.p.models[1].graph.op(0).n = 1024;
  const std::string ko = corun_key(other.s, other.p, 0, 0);
  EXPECT_EQ(ko.substr(0, 16), ka.substr(0, 16));
  EXPECT_NE(ko, ka);
  // Other work on a (another split moves ops between the groups): its own half changes.
  TwoGroups split(catalog_cpu());
  split.p.models[0].graph.op(0).k = 512;
  EXPECT_NE(corun_key(split.s, split.p, 0, 0).substr(0, 16), ka.substr(0, 16));
  // Another dtype, or more cores for the group: another key.
  TwoGroups bf16(catalog_cpu());
  bf16.p.models[0].graph.op(0).dtype = DType::BF16;
  EXPECT_NE(corun_key(bf16.s, bf16.p, 0, 0), ka);
  TwoGroups wide(catalog_cpu());
  wide.s.devices[0].units[0].cores = 2;
  EXPECT_NE(corun_key(wide.s, wide.p, 0, 0), ka);
  // Not a CPU segment, or out of range: no key.
  EXPECT_EQ(corun_key(g.s, g.p, 0, 5), "");
  EXPECT_EQ(corun_key(g.s, g.p, 7, 0), "");
}

TEST(HostEntry, SentinelDriftAndMarks) {
  SentinelRecord r;
  r.samples = {{0, 0.010}, {2, 0.0105}, {4, 0.0102}};
  EXPECT_NEAR(r.drift(), 0.02, 1e-12);
  EXPECT_NEAR(r.max_deviation(), 0.05, 1e-12);
  EXPECT_NEAR(r.median_s(), 0.0102, 1e-12);
  DriftInputs d;
  d.measurement = r;
  EXPECT_FALSE(drift_marked(d));  // 2% drift, no calibration to compare with
  d.calibration.samples = {{0, 0.0095}, {1, 0.0095}};
  EXPECT_NEAR(r.idle_s(), 0.0101, 1e-12);
  EXPECT_NEAR(speed_change(d), 0.0101 / 0.0095 - 1, 1e-12);
  EXPECT_TRUE(drift_marked(d));  // 6% slower than at calibration
  d.measurement.samples.back().second = 0.0110;
  d.calibration = {};
  EXPECT_TRUE(drift_marked(d));  // 10% drift within the measurement
}

// The samples a watch takes while the measured work runs share the cores with it: a machine as
// fast as at calibration, measured under a load that doubles the sentinel's time mid-run, is not
// marked (the speed change compares the idle samples before and after).
TEST(HostEntry, SentinelSpeedChangeIgnoresTheSamplesTakenDuringTheWork) {
  DriftInputs d;
  d.calibration.samples = {{0, 0.010}, {2, 0.020}, {4, 0.020}, {6, 0.010}};
  d.measurement.samples = {{0, 0.0101}, {2, 0.021}, {4, 0.019}, {6, 0.020}, {8, 0.0100}};
  EXPECT_NEAR(speed_change(d), 0.01005 / 0.010 - 1, 1e-12);
  EXPECT_FALSE(drift_marked(d));
  d.measurement.samples.front().second = 0.0110;  // slower before the run: a real change
  d.measurement.samples.back().second = 0.0110;
  EXPECT_TRUE(drift_marked(d));
}

// The calibration's sentinel load (others' CPU and steal) survives the profile file, checked at its keys.
TEST(HostEntry, TheProfileKeepsTheCalibrationsLoadBesideItsSentinel) {
  DeviceProfile p = small_profile();
  p.sentinel.samples = {{0, 0.01}, {3, 0.011}};
  p.sentinel.others_cpu = 0.125;
  p.sentinel.steal = 0.0625;
  const std::string text = profile_to_json(p);
  EXPECT_EQ(parse_profile(text, "p.json").sentinel, p.sentinel);
  auto refused = [&](const std::string& a, const std::string& b) { return refused_edit(text, a, b); };
  EXPECT_EQ(refused("\"others_cpu\": 0.125", "\"others_cpu\": 1.5"),
            "sentinel_load.others_cpu: must be from a share of the machine's CPU time, 0 to 1");
  nlohmann::json j = nlohmann::json::parse(text);
  j.erase("sentinel");
  try {
    parse_profile(j.dump(), "bad.json");
    ADD_FAILURE() << "a sentinel_load without its sentinel was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key() + ": " + e.message(), "sentinel_load: given without the sentinel it describes");
  }
  EXPECT_EQ(refused("\"steal\": 0.0625", "\"stole\": 0.0625"), "sentinel_load.stole: unknown key; valid keys are: others_cpu, steal");
}

TEST(ServiceSensitivity, QueueingAmplifiesAServiceTimeErrorNearSaturation) {
  // One 1-core group serving a 10 ms segment: at a low rate latency follows the service time
  // (elasticity about 1); at 95% of capacity with random arrivals the queueing delay makes it
  // several times that.
  auto elasticity = [](double rate) {
    TwoGroups g(catalog_cpu());
    g.s.models.pop_back();
    g.p.models.pop_back();
    StreamDecl sd;
    sd.name = "s";
    sd.model = 0;
    sd.rate_hz = rate;
    sd.duration_s = 200;
    sd.arrival = "poisson";
    g.s.streams = {sd};
    g.s.seed = 7;
    const SimOptions o;
    const SimResult base = simulate(g.s, g.p, o);
    return service_sensitivity(g.s, g.p, o, base, 0.02);
  };
  const ServiceSensitivity lo = elasticity(5), hi = elasticity(95);
  EXPECT_NEAR(lo.p50_elasticity, 1.0, 0.3);
  EXPECT_NEAR(lo.mean_elasticity, 1.0, 0.3);
  EXPECT_GT(hi.mean_elasticity, 3.0);
  EXPECT_GT(hi.p50_elasticity, 3.0);
  EXPECT_GT(hi.utilisation, 0.85);
  EXPECT_LT(lo.utilisation, 0.1);
}

}  // namespace
}  // namespace vlasim
