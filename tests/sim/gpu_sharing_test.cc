// The `blocks` GPU sharing model (sim/costs/gpu_sharing.h): the block scheduler driven alone, as the
// engine drives it (advance to the next event, end what is due, resolve).
#include "sim/costs/gpu_sharing.h"
#include "tests/sim/block_job.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace vlasim {
namespace {

// `n` kernels of `seconds` each, occupying `sms` SMs, using `memory` of DRAM bandwidth alone.
KernelTable kernels(int n, double seconds, double sms, double memory = 0) {
  KernelTable t;
  for (int i = 0; i < n; ++i) t.add(KernelSpec{seconds, sms, memory});
  return t;
}


// Runs until every job has ended; returns each job's end time by id.
std::map<int, double> run(BlockScheduler& b, double now = 0) {
  std::map<int, double> ends;
  b.resolve(now);
  for (int guard = 0; !b.empty() && guard < 1000000; ++guard) {
    const double t = b.next_event();
    EXPECT_TRUE(std::isfinite(t)) << "jobs left but no event";
    if (!std::isfinite(t)) break;
    b.advance(t);
    for (int id : b.take_done(t, 1e-12)) ends[id] = t;
    b.resolve(t);
  }
  return ends;
}

BlockScheduler gpu(bool mps = false, double slice = 2e-3, double sw = 1e-4) {
  BlockScheduler::Options o;
  o.sms = 100;
  o.mps = mps;
  o.time_slice_s = slice;
  o.context_switch_s = sw;
  return BlockScheduler(o);
}

TEST(GpuSharing, RegistryListsFluidBlocksAndIssue30sBlocksWithTheirParameters) {
  const auto names = gpu_sharing_models().names();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "fluid");
  EXPECT_EQ(names[1], "blocks");
  EXPECT_EQ(names[2], "blocks_v1");
  for (const char* n : {"blocks", "blocks_v1"}) {
    EXPECT_TRUE(gpu_sharing_models().find(n)->has_param("time_slice_us"));
    EXPECT_TRUE(gpu_sharing_models().find(n)->has_param("context_switch_us"));
  }
  for (const char* e : {"memory_sms", "no_preemption", "wave_tails", "dram_fair", "l2_shared", "give_back"}) {
    EXPECT_TRUE(gpu_sharing_models().find("blocks")->has_param(e)) << e;
    EXPECT_FALSE(gpu_sharing_models().find("blocks_v1")->has_param(e)) << e;
  }
  EXPECT_FALSE(gpu_sharing_models().make("fluid", Params(), ConfigNode())->kernel_level);
  const auto blocks = gpu_sharing_models().make("blocks", Params(), ConfigNode());
  EXPECT_TRUE(blocks->kernel_level);
  EXPECT_TRUE(blocks->effects.memory_sms && blocks->effects.no_preemption && blocks->effects.wave_tails &&
              blocks->effects.dram_fair && blocks->effects.l2_shared && blocks->effects.give_back);
  const auto v1 = gpu_sharing_models().make("blocks_v1", Params(), ConfigNode());
  EXPECT_TRUE(v1->kernel_level);
  EXPECT_FALSE(v1->effects.memory_sms || v1->effects.no_preemption || v1->effects.wave_tails ||
               v1->effects.dram_fair || v1->effects.l2_shared || v1->effects.give_back);
  // Each effect can be switched off alone, for ablation.
  const ConfigNode off = ConfigNode::load_string("{wave_tails: false}", "<test>");
  const auto no_tails = gpu_sharing_models().make("blocks", Params(off), off);
  EXPECT_FALSE(no_tails->effects.wave_tails);
  EXPECT_TRUE(no_tails->effects.no_preemption);
}

TEST(GpuSharing, TwoKernelsTakeTheSmsInLaunchOrder) {
  // Two one-kernel jobs that each fill the GPU: the first launched runs alone, then the other.
  const KernelTable full = kernels(1, 1.0, 100);
  for (int first = 0; first < 2; ++first) {
    BlockScheduler b = gpu();
    int id[2];
    id[first] = b.add(test::block_job(&full), 0);
    id[1 - first] = b.add(test::block_job(&full), 0);
    b.resolve(0);
    EXPECT_TRUE(b.kernel_level(id[0]) && b.kernel_level(id[1]));
    EXPECT_DOUBLE_EQ(b.rate(id[first]), 1.0);
    EXPECT_DOUBLE_EQ(b.rate(id[1 - first]), 0.0);
    auto ends = run(b);
    EXPECT_NEAR(ends[id[first]], 1.0, 1e-9);
    EXPECT_NEAR(ends[id[1 - first]], 2.0, 1e-9);
  }
  // Two kernels that fit beside each other both run at once.
  BlockScheduler b = gpu();
  const KernelTable half = kernels(1, 1.0, 40);
  const int a = b.add(test::block_job(&half), 0), c = b.add(test::block_job(&half), 0);
  auto ends = run(b);
  EXPECT_NEAR(ends[a], 1.0, 1e-9);
  EXPECT_NEAR(ends[c], 1.0, 1e-9);
}

TEST(GpuSharing, HigherPriorityStreamTakesFreeSmsFirst) {
  const KernelTable full = kernels(1, 1.0, 100);
  BlockScheduler b = gpu();
  auto low = test::block_job(&full), high = test::block_job(&full);
  high.priority = -1;
  const int l = b.add(low, 0), h = b.add(high, 0);  // the low-priority kernel launched first
  auto ends = run(b);
  EXPECT_NEAR(ends[h], 1.0, 1e-9);
  EXPECT_NEAR(ends[l], 2.0, 1e-9);
}

TEST(GpuSharing, AStreamWithoutAnSmLimitStarvesBehindLargeKernels) {
  // A VLM of 10 kernels filling the GPU (0.1 s each) and an action expert of 10 small kernels
  // (10 SMs, 10 ms each), launched together, the VLM first: each expert kernel waits for the
  // VLM kernel ahead of it, so the expert takes about the VLM's time, not its own 0.1 s.
  const KernelTable vlm = kernels(10, 0.1, 100), ae = kernels(10, 0.01, 10);
  BlockScheduler b = gpu();
  const int v = b.add(test::block_job(&vlm), 0), a = b.add(test::block_job(&ae), 0);
  auto ends = run(b);
  EXPECT_GT(ends[a], 0.8);       // more than 8x its alone time
  EXPECT_LT(ends[v], 1.0 + 0.2);  // the VLM loses at most the expert's SMs now and then
  // With the expert on a partition of its own (20 SMs) and the VLM on the other 80, the
  // expert runs at its alone speed: 0.1 s.
  BlockScheduler p = gpu();
  p.set_pool_sms(0, 80);
  const int pool = p.add_pool(20);
  const KernelTable vlm80 = kernels(10, 0.125, 80);
  const int v2 = p.add(test::block_job(&vlm80), 0), a2 = p.add(test::block_job(&ae, pool), 0);
  auto ends2 = run(p);
  EXPECT_NEAR(ends2[a2], 0.1, 1e-9);
  EXPECT_NEAR(ends2[v2], 1.25, 1e-9);
}

TEST(GpuSharing, APartitionIsIsolatedFromTheOtherStreamsKernels) {
  // Whatever runs on the shared SMs, a job alone on its partition keeps its alone speed (no
  // memory traffic here: partitions share DRAM bandwidth, not SMs) and runs as a whole segment.
  const KernelTable mine = kernels(50, 0.002, 20), other = kernels(7, 0.03, 80);
  BlockScheduler b = gpu();
  b.set_pool_sms(0, 80);
  const int pool = b.add_pool(20);
  const int o1 = b.add(test::block_job(&other), 0), o2 = b.add(test::block_job(&other), 0);
  const int m = b.add(test::block_job(&mine, pool), 0);
  b.resolve(0);
  EXPECT_FALSE(b.kernel_level(m));
  EXPECT_TRUE(b.kernel_level(o1) && b.kernel_level(o2));
  EXPECT_DOUBLE_EQ(b.rate(m), 1.0);
  auto ends = run(b);
  EXPECT_NEAR(ends[m], 0.1, 1e-9);
  EXPECT_NEAR(std::max(ends[o1], ends[o2]), 0.42, 1e-9);  // the two share 80 SMs one kernel at a time
}

TEST(GpuSharing, AJobAloneRunsAsOneSegmentAndKernelByKernelOnlyWhileOthersOverlap) {
  const KernelTable long_job = kernels(100, 0.01, 100), short_job = kernels(1, 0.05, 100);
  BlockScheduler b = gpu();
  const int l = b.add(test::block_job(&long_job), 0);
  b.resolve(0);
  EXPECT_FALSE(b.kernel_level(l));
  EXPECT_NEAR(b.next_event(), 1.0, 1e-12);  // one event: the segment's end
  b.advance(0.305);                          // in its 31st kernel
  b.take_done(0.305, 1e-12);
  const int s = b.add(test::block_job(&short_job), 0.305);
  b.resolve(0.305);
  EXPECT_TRUE(b.kernel_level(l) && b.kernel_level(s));
  EXPECT_NEAR(b.next_event(), 0.31, 1e-12);  // the current kernel's end
  auto ends = run(b, 0.305);
  // The short job waits for the long one's current kernel, then runs alone (launched earlier
  // than the long job's next kernel); the long job loses exactly its 0.05 s.
  EXPECT_NEAR(ends[s], 0.36, 1e-9);
  EXPECT_NEAR(ends[l], 1.05, 1e-9);
}

TEST(GpuSharing, DramIsSharedInProportionToTheSmsAKernelHolds) {
  // Two memory-bound kernels (each pulls the whole bandwidth alone): one holds 90 SMs, the
  // other gets the 10 left of the 50 it would occupy; bandwidth splits 1 : 0.2.
  const KernelTable big = kernels(1, 1.0, 90, 1.0), small = kernels(1, 1.0, 50, 1.0);
  BlockScheduler b = gpu();
  const int x = b.add(test::block_job(&big), 0), y = b.add(test::block_job(&small), 0);
  b.resolve(0);
  EXPECT_NEAR(b.sms_held(y), 10, 1e-12);
  EXPECT_NEAR(b.rate(x), 1 / 1.2, 1e-12);
  EXPECT_NEAR(b.rate(y), 0.2 / 1.2, 1e-12);
  EXPECT_NEAR(b.memory_used(x) + b.memory_used(y), 1.0, 1e-12);
  // Partitions share DRAM too: two memory-bound segments on partitions run at half speed each.
  BlockScheduler p = gpu();
  p.set_pool_sms(0, 50);
  const KernelTable stream = kernels(1, 1.0, 50, 1.0);
  const int q = p.add_pool(50);
  const int u = p.add(test::block_job(&stream), 0), v = p.add(test::block_job(&stream, q), 0);
  auto ends = run(p);
  EXPECT_NEAR(ends[u], 2.0, 1e-9);
  EXPECT_NEAR(ends[v], 2.0, 1e-9);
}

TEST(GpuSharing, SeparateProcessesTimeSliceTheGpu) {
  // Two processes, 10 ms of work each, kernels that would fit side by side: without MPS they
  // take turns (2 ms slices, 0.1 ms switches), so both end near 20 ms, not 10.
  const KernelTable work = kernels(10, 1e-3, 40);
  BlockScheduler b = gpu(false, 2e-3, 1e-4);
  const int a = b.add(test::block_job(&work, 0, 0), 0), c = b.add(test::block_job(&work, 0, 1), 0);
  b.resolve(0);
  EXPECT_EQ(b.active_process(), 0);
  EXPECT_DOUBLE_EQ(b.rate(a), 1.0);
  EXPECT_DOUBLE_EQ(b.rate(c), 0.0);
  EXPECT_FALSE(b.kernel_level(a));  // alone on the GPU while its context runs
  EXPECT_NEAR(b.next_event(), 2e-3, 1e-12);  // the slice's end
  auto ends = run(b);
  EXPECT_GE(b.context_switches(), 8u);
  EXPECT_GT(std::min(ends[a], ends[c]), 18e-3);
  // Every switch costs 0.1 ms of an idle GPU: the last end is 20 ms plus the switches.
  EXPECT_NEAR(std::max(ends[a], ends[c]), 20e-3 + 1e-4 * static_cast<double>(b.context_switches()), 1e-9);
  // A process alone never switches or slices.
  BlockScheduler one = gpu(false, 2e-3, 1e-4);
  const int z = one.add(test::block_job(&work, 0, 1), 0);
  auto e1 = run(one);
  EXPECT_NEAR(e1[z], 10e-3, 1e-12);
  EXPECT_EQ(one.context_switches(), 0u);
}

TEST(GpuSharing, MpsLetsProcessesShareSmsAsStreamsDo) {
  const KernelTable work = kernels(10, 1e-3, 40);
  BlockScheduler b = gpu(true, 2e-3, 1e-4);
  const int a = b.add(test::block_job(&work, 0, 0), 0), c = b.add(test::block_job(&work, 0, 1), 0);
  auto ends = run(b);
  EXPECT_NEAR(ends[a], 10e-3, 1e-9);
  EXPECT_NEAR(ends[c], 10e-3, 1e-9);
  EXPECT_EQ(b.context_switches(), 0u);
}

TEST(GpuSharing, KernelShapeFollowsTheOpsTiles) {
  DeviceSpec d;
  d.sms = 132;
  d.kernels.tile_m = 128;
  d.kernels.tile_n = 128;
  Op big;
  big.kind = OpKind::Gemm;
  big.m = 1024;
  big.n = 16384;
  big.k = 2048;
  EXPECT_DOUBLE_EQ(kernel_shape(big, d, 132).blocks, 8 * 128);
  EXPECT_DOUBLE_EQ(kernel_shape(big, d, 132).width(132), 132);  // fills the GPU (8 waves)
  Op small = big;  // 50 rows x 1024: 8 tiles of 64 x 128, K (2048) split 8 ways, 256 deep each
  small.m = 50;
  small.n = 1024;
  EXPECT_DOUBLE_EQ(kernel_shape(small, d, 132).blocks, 8 * 8);
  Op norm;
  norm.kind = OpKind::Norm;
  norm.rows = 51;
  norm.width = 1024;
  EXPECT_DOUBLE_EQ(kernel_shape(norm, d, 132).width(132), 7);  // 51 blocks, 8 an SM
}

}  // namespace
}  // namespace vlasim
