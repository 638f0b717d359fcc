// Issue 45's block scheduler (sim/costs/gpu_sharing.h, SharingEffects): each effect checked
// against issue 30's scheduler (`blocks_v1`, every effect off), which fails each of these.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sim/costs/gpu_sharing.h"
#include "tests/sim/block_job.h"

namespace vlasim {
namespace sharing_effects {  // own names in a unity build beside gpu_sharing_test.cc
namespace {

// A kernel of `seconds` alone on `sms` SMs whose compute and DRAM traffic take the fractions
// `compute` and `memory` of that time.
KernelSpec kernel(double seconds, double sms, double compute, double memory) {
  KernelSpec k;
  k.seconds = seconds;
  k.sms = sms;
  k.compute = compute;
  k.memory = memory;
  return k;
}

KernelTable table(std::initializer_list<KernelSpec> ks) {
  KernelTable t;
  for (const KernelSpec& k : ks) t.add(k);
  return t;
}


// A 100-SM GPU whose DRAM saturates at 50 SMs, with 40 MB of L2; issue 45's effects or none.
BlockScheduler gpu(bool effects) {
  BlockScheduler::Options o;
  o.sms = 100;
  o.effects = effects ? SharingEffects::all() : SharingEffects{};
  o.saturating_sms = 0.5;
  o.l2_bytes = 40e6;
  return BlockScheduler(o);
}

// Runs until every job has ended, jobs in `later` added at their time; returns end times by id.
std::map<int, double> run(BlockScheduler& b, std::map<double, std::vector<BlockScheduler::JobSpec>> later = {},
                          std::map<double, std::vector<int>>* ids = nullptr) {
  std::map<int, double> ends;
  double now = 0;
  b.resolve(now);
  for (int guard = 0; (!b.empty() || !later.empty()) && guard < 1000000; ++guard) {
    double t = b.next_event();
    if (!later.empty() && later.begin()->first <= t) t = later.begin()->first;
    EXPECT_TRUE(std::isfinite(t)) << "jobs left but no event";
    if (!std::isfinite(t)) break;
    b.advance(t);
    for (int id : b.take_done(t, 1e-12)) ends[id] = t;
    if (!later.empty() && later.begin()->first <= t) {
      for (auto& sp : later.begin()->second) {
        const int id = b.add(sp, t);
        if (ids) (*ids)[t].push_back(id);
      }
      later.erase(later.begin());
    }
    b.resolve(t);
    now = t;
  }
  return ends;
}

TEST(GpuSharingEffects, AMemoryBoundKernelOnHalfItsSmsKeepsNearlyItsSpeed) {
  // A kernel that fills the GPU alone (100 SMs, 1 s), its DRAM traffic 95% of its time and its
  // compute 20%, runs beside a compute-bound kernel launched first that holds 50 SMs.
  const KernelTable first = table({kernel(2.0, 50, 1.0, 0.0)});
  const KernelTable mem = table({kernel(1.0, 100, 0.2, 0.95)});
  for (bool effects : {true, false}) {
    BlockScheduler b = gpu(effects);
    b.add(test::block_job(&first), 0);
    const int m = b.add(test::block_job(&mem), 0);
    b.resolve(0);
    EXPECT_DOUBLE_EQ(b.sms_held(m), 50);
    if (effects) EXPECT_GE(b.rate(m), 0.9);  // 50 SMs saturate DRAM
    else EXPECT_NEAR(b.rate(m), 0.5, 1e-12);  // issue 30: g / w, as if compute-bound
  }
  // A compute-bound kernel on half its SMs still runs at half its speed.
  const KernelTable comp = table({kernel(1.0, 100, 0.95, 0.1)});
  BlockScheduler b = gpu(true);
  b.add(test::block_job(&first), 0);
  const int c = b.add(test::block_job(&comp), 0);
  b.resolve(0);
  EXPECT_NEAR(b.rate(c), 1 / (0.05 + 0.95 * 2), 1e-12);
}

TEST(GpuSharingEffects, AComputeBoundKernelBesideAMemoryBoundOneKeepsItsSpeedWhenDramIsShared) {
  // Two kernels on a partition each: a memory-bound one asking the whole bandwidth and a
  // compute-bound one asking 20% of it. Max-min fair: the small ask is met, the other gets 80%.
  const KernelTable mem = table({kernel(1.0, 50, 0.1, 1.0)});
  const KernelTable comp = table({kernel(1.0, 50, 1.0, 0.2)});
  for (bool effects : {true, false}) {
    BlockScheduler b = gpu(effects);
    b.set_pool_sms(0, 50);
    const int pool = b.add_pool(50);
    const int m = b.add(test::block_job(&mem), 0), c = b.add(test::block_job(&comp, pool), 0);
    b.resolve(0);
    if (effects) {
      EXPECT_DOUBLE_EQ(b.rate(c), 1.0);
      EXPECT_NEAR(b.rate(m), 0.8, 1e-12);
    } else {  // issue 30: both cut by 1 / 1.2
      EXPECT_NEAR(b.rate(c), 1 / 1.2, 1e-12);
      EXPECT_NEAR(b.rate(m), 1 / 1.2, 1e-12);
    }
    EXPECT_NEAR(b.memory_used(m) + b.memory_used(c), 1.0, 1e-12);
  }
}

TEST(GpuSharingEffects, ALateHighPriorityKernelWaitsForTheBlocksRunning) {
  // A low-priority kernel holding the whole GPU for 1 s (one wave); a high-priority one
  // arrives at 0.3 s. Blocks are not preempted: it starts at 1.0 s, not at once.
  const KernelTable low = table({kernel(1.0, 100, 1.0, 0.0)});
  const KernelTable high = table({kernel(0.2, 100, 1.0, 0.0)});
  for (bool effects : {true, false}) {
    BlockScheduler b = gpu(effects);
    const int l = b.add(test::block_job(&low), 0);
    std::map<double, std::vector<int>> ids;
    auto ends = run(b, {{0.3, {test::block_job(&high, 0, 0, -1)}}}, &ids);
    const int h = ids[0.3].at(0);
    if (effects) {
      EXPECT_NEAR(ends[l], 1.0, 1e-9);
      EXPECT_NEAR(ends[h], 1.2, 1e-9);
    } else {  // issue 30: the high-priority kernel takes every SM on arrival
      EXPECT_NEAR(ends[h], 0.5, 1e-9);
      EXPECT_NEAR(ends[l], 1.2, 1e-9);
    }
  }
  // A kernel of many waves gives its SMs up at its next wave's end: the same low-priority
  // work as 10 waves of 0.1 s; the high-priority kernel, arriving mid-wave at 0.35 s, waits
  // until 0.4 s only.
  KernelSpec waves = kernel(1.0, 100, 1.0, 0.0);
  waves.waves = 10;
  waves.tail_sms = 100;
  const KernelTable low10 = table({waves});
  BlockScheduler b = gpu(true);
  const int l = b.add(test::block_job(&low10), 0);
  std::map<double, std::vector<int>> ids;
  auto ends = run(b, {{0.35, {test::block_job(&high, 0, 0, -1)}}}, &ids);
  EXPECT_NEAR(ends[ids[0.35].at(0)], 0.6, 1e-9);
  EXPECT_NEAR(ends[l], 1.2, 1e-9);
}

TEST(GpuSharingEffects, AKernelsLastWaveFreesTheSmsItsBlocksLeave) {
  // Two waves of 0.5 s on 100 SMs, the second filling 30: a 70-SM kernel launched after it
  // starts when the first wave ends (0.5 s), not when the whole kernel does (1.0 s).
  KernelSpec two = kernel(1.0, 100, 1.0, 0.0);
  two.waves = 2;
  two.tail_sms = 30;
  const KernelTable first = table({two});
  const KernelTable next = table({kernel(0.4, 70, 1.0, 0.0)});
  for (bool effects : {true, false}) {
    BlockScheduler b = gpu(effects);
    const int f = b.add(test::block_job(&first), 0), n = b.add(test::block_job(&next), 0);
    auto ends = run(b);
    EXPECT_NEAR(ends[f], 1.0, 1e-9);
    EXPECT_NEAR(ends[n], effects ? 0.9 : 1.4, 1e-9);
  }
  // The engine's clock runs an event up to its slack early (it rounds times to its tick): a
  // wave's end taken a little early still starts the last wave, which frees the SMs.
  {
    BlockScheduler b = gpu(true);
    const int f = b.add(test::block_job(&first), 0), n = b.add(test::block_job(&next), 0);
    std::map<int, double> ends;
    b.resolve(0);
    for (int guard = 0; !b.empty() && guard < 1000; ++guard) {
      const double t = std::max(0.0, b.next_event() - 8e-10);  // early, within the slack
      b.advance(t);
      for (int id : b.take_done(t, 1e-9)) ends[id] = t;
      b.resolve(t);
    }
    EXPECT_NEAR(ends[f], 1.0, 1e-8);
    EXPECT_NEAR(ends[n], 0.9, 1e-8);
  }
  // kernel_shape's waves: 1024 blocks of one per SM on 132 SMs are 8 waves, the last of 100.
  KernelShape s;
  s.blocks = 1024;
  EXPECT_DOUBLE_EQ(s.waves(132), 8);
  EXPECT_DOUBLE_EQ(s.tail_sms(132), 1024 - 7 * 132);
  s.blocks = 51;  // one wave
  EXPECT_DOUBLE_EQ(s.waves(132), 1);
  EXPECT_DOUBLE_EQ(s.tail_sms(132), 51);
}

TEST(GpuSharingEffects, KernelsSharingL2RunAtTheirColdMemoryTime) {
  // Two kernels running at once on the shared SMs, 15 MB of L2-resident activations each: 30 MB
  // together against the 20 MB (half of L2) one kernel has alone. Their activations go to DRAM.
  KernelSpec k = kernel(1.0, 40, 0.1, 0.5);
  k.l2_bytes = 15e6;
  k.memory_cold = 0.8;
  const KernelTable a = table({k});
  for (bool effects : {true, false}) {
    BlockScheduler b = gpu(effects);
    const int x = b.add(test::block_job(&a), 0), y = b.add(test::block_job(&a), 0);
    b.resolve(0);
    // (DRAM is not oversubscribed: each asks 0.8 x 40 / 50 of it at its rate.)
    if (effects) EXPECT_NEAR(b.rate(x), 1 / (0.5 + 0.8), 1e-9);  // 0.5 of neither, 0.8 of DRAM
    else EXPECT_DOUBLE_EQ(b.rate(x), 1.0);
    EXPECT_GT(b.sms_held(y), 0);
  }
  // A kernel that waits for SMs (holding none) puts nothing in L2: the one running keeps its
  // activations there.
  KernelSpec wide = k;
  wide.sms = 100;
  const KernelTable full = table({wide});
  BlockScheduler w = gpu(true);
  const int run1 = w.add(test::block_job(&full), 0), wait1 = w.add(test::block_job(&full), 0);
  w.resolve(0);
  EXPECT_DOUBLE_EQ(w.sms_held(wait1), 0);
  EXPECT_DOUBLE_EQ(w.rate(run1), 1.0);
  // 15 MB together fit: each keeps its alone speed.
  k.l2_bytes = 7e6;
  const KernelTable small = table({k});
  BlockScheduler b = gpu(true);
  const int x = b.add(test::block_job(&small), 0);
  b.add(test::block_job(&small), 0);
  b.resolve(0);
  EXPECT_DOUBLE_EQ(b.rate(x), 1.0);
}

TEST(GpuSharingEffects, TheSecondLockstepStreamTakesTheFirstsSmsWhenItsBatchEnds) {
  // A lockstep on 100 SMs: the first stream limited to 60 (a lending pool), the second costed
  // on the 40 left (2 s there, 1 s on the whole GPU). The first's batch ends at 1 s: the second
  // has done half its work and runs the rest twice as fast.
  const KernelTable vlm = table({kernel(1.0, 60, 1.0, 0.0)});
  const KernelTable act = table({kernel(2.0, 40, 1.0, 0.0)});
  BlockScheduler b = gpu(true);
  const int pool = b.add_pool(60, true);
  auto a = test::block_job(&act, 0);
  a.sms = 40;
  a.wide_sms = 100;
  a.wide_speedup = 2;
  const int v = b.add(test::block_job(&vlm, pool), 0), x = b.add(a, 0);
  b.resolve(0);
  EXPECT_DOUBLE_EQ(b.rate(x), 1.0);
  auto ends = run(b);
  EXPECT_NEAR(ends[v], 1.0, 1e-9);
  EXPECT_NEAR(ends[x], 1.5, 1e-9);
  // Two hard partitions (issue 30): the second stream keeps its 40 SMs to its end.
  BlockScheduler h = gpu(false);
  h.set_pool_sms(0, 40);
  const int p1 = h.add_pool(60);
  const int v2 = h.add(test::block_job(&vlm, p1), 0), x2 = h.add(test::block_job(&act, 0), 0);
  auto e2 = run(h);
  EXPECT_NEAR(e2[v2], 1.0, 1e-9);
  EXPECT_NEAR(e2[x2], 2.0, 1e-9);
  // While the lending pool's job is in its host delay (no kernel on the GPU yet), or its
  // process's context is off the GPU, its SMs are the shared pool's.
  {
    BlockScheduler d = gpu(true);
    const int lp = d.add_pool(60, true);
    auto late = test::block_job(&vlm, lp);
    late.delay = 0.5;
    const KernelTable other = table({kernel(1.0, 100, 1.0, 0.0)});
    d.add(late, 0);
    const int o = d.add(test::block_job(&other, 0), 0);
    d.resolve(0);
    EXPECT_DOUBLE_EQ(d.rate(o), 1.0);
  }
  // A third stream on the shared SMs gets those the lending pool's job does not hold: 40 while
  // it runs (not 100 beside the lockstep's 60).
  BlockScheduler t = gpu(true);
  const int lp = t.add_pool(60, true);
  const KernelTable other = table({kernel(1.0, 100, 1.0, 0.0)});
  t.add(test::block_job(&vlm, lp), 0);
  const int o = t.add(test::block_job(&other, 0), 0);
  t.resolve(0);
  EXPECT_NEAR(t.rate(o), 0.4, 1e-12);
}

}  // namespace
}  // namespace sharing_effects
}  // namespace vlasim
