// The drift sentinel's record of who else used the CPUs (issue 32): other processes' and the
// hypervisor's share of the machine over a watch and its mark on a comparison (its place in the
// profile file: tests/sim/host_entry_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <tuple>
#include <string>
#include <thread>

#include "executors/calibration/host_measure.h"
#include "reports/drift.h"
#include "sim/measured/profile.h"

namespace vlasim {
namespace {

CpuTimes times(double busy, double steal, double total, double self) {
  CpuTimes c;
  c.busy = busy;
  c.steal = steal;
  c.total = total;
  c.self = self;
  c.ok = true;
  return c;
}

TEST(SentinelLoad, OthersAndStealAreSharesOfTheMachinesCpuTime) {
  // 40 s of CPU time passed (e.g. 20 s on 2 CPUs): 20 busy, 10 of them ours, 2 stolen.
  auto [others, steal] = others_and_steal(times(10, 1, 100, 2), times(30, 3, 140, 12));
  EXPECT_DOUBLE_EQ(others, 0.25);
  EXPECT_DOUBLE_EQ(steal, 0.05);
  // Our own time counted a tick ahead of /proc/stat's never gives a negative share.
  std::tie(others, steal) = others_and_steal(times(10, 1, 100, 2), times(12, 1, 140, 5));
  EXPECT_DOUBLE_EQ(others, 0);
  // Unread or no time passed: unknown.
  CpuTimes bad = times(30, 3, 140, 12);
  bad.ok = false;
  EXPECT_EQ(others_and_steal(times(10, 1, 100, 2), bad).first, -1);
  EXPECT_EQ(others_and_steal(times(10, 1, 100, 2), times(10, 1, 100, 2)).second, -1);
}

// A process spinning beside the watch is someone else's CPU time: on N CPUs a child spinning
// all through takes about 1/N of the machine (asserted: more than a quarter of that).
TEST(SentinelLoad, AProcessSpinningBesideTheWatchShowsAsOtherProcessesCpu) {
  if (!read_cpu_times().ok) GTEST_SKIP() << "no /proc/stat on this system";
  SentinelWatch w(10);  // no sample in between: the watch's own CPU is its two samples
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
    volatile double x = 1;
    while (std::chrono::steady_clock::now() < end) x = x * 1.0000001 + 1e-9;
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  const SentinelRecord r = w.stop();
  const double cpus = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GT(r.others_cpu, 0.25 / cpus);
  EXPECT_LE(r.others_cpu, 1);
  EXPECT_GE(r.steal, 0);
  EXPECT_NE(sentinel_text(r).find("other processes used"), std::string::npos);
}

// The samples a watch takes during the work run at the idle scheduling class, so no run of the
// work waits for one.
TEST(SentinelLoad, TheSamplesInBetweenTakeOnlyIdleCpuTime) {
  SentinelWatch w(0.02);
  bool idle = false;
  for (int i = 0; i < 200 && !idle; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    idle = w.background_idle();
  }
  EXPECT_TRUE(idle);
  // With every CPU busy (other tests) an idle-class sample waits: give it up to 20 s.
  for (int i = 0; i < 2000 && w.taken() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(w.stop().samples.size(), 3u);  // start, at least one in between, stop
}

TEST(SentinelLoad, AMeasurementSharingItsCpusIsMarkedWithoutAnyDrift) {
  DriftInputs d;
  d.measurement.samples = {{0, 0.010}, {2, 0.010}};
  EXPECT_FALSE(drift_marked(d));  // not read: unknown, not marked
  d.measurement.others_cpu = 0.01;
  d.measurement.steal = 0;
  EXPECT_FALSE(drift_marked(d));
  d.measurement.others_cpu = 0.2;  // a fifth of the machine went to something else
  EXPECT_TRUE(drift_marked(d));
  d.measurement.others_cpu = 0;
  d.measurement.steal = 0.08;  // the hypervisor's other guests
  EXPECT_TRUE(drift_marked(d));
}

}  // namespace
}  // namespace vlasim
