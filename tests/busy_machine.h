// Whether a measuring test ran on a machine quiet enough to judge the code (issue 46): the CPU
// time other processes (and a hypervisor's other guests: steal time) took while it ran, and the
// drift sentinel timed before and after it. A test whose figures miss its bounds while the
// machine was busy reports itself inconclusive (skipped, with the figures) instead of failing
// for the machine's sake; on a quiet machine (CI's) it runs and fails as before.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "executors/calibration/host_measure.h"

namespace vlasim::testing {

// Beyond these the machine moved more than a measuring test's bounds can absorb: other work took
// over a quarter of the machine's CPUs on average, or the sentinel kernel's time changed by more
// than 25% between before and after.
inline constexpr double kBusyOthersShare = 0.25;
inline constexpr double kBusySentinelDrift = 0.25;

// Verdict on the machine over one measurement.
struct MachineVerdict {
  bool busy = false;
  double others_share = 0;    // other processes' CPU seconds / (wall seconds x CPUs)
  double sentinel_drift = 0;  // sentinel time after / before - 1
  std::string text;           // the figures, for a skip message or a log line
};

// The rule, on its figures alone.
inline MachineVerdict judge_machine(double others_share, double sentinel_drift) {
  MachineVerdict v;
  v.others_share = others_share;
  v.sentinel_drift = sentinel_drift;
  v.busy = !(others_share <= kBusyOthersShare) || !(std::fabs(sentinel_drift) <= kBusySentinelDrift);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "other work took %.0f%% of the machine's CPUs (limit %.0f%%), the drift sentinel moved %+.0f%% "
                "(limit %.0f%%)",
                100 * others_share, 100 * kBusyOthersShare, 100 * sentinel_drift, 100 * kBusySentinelDrift);
  v.text = buf;
  return v;
}

// Watches the machine from construction to verdict(): other processes' and the hypervisor's
// share of the CPUs (host_measure.h others_and_steal), and the sentinel kernel before and after.
class MachineWatch {
 public:
  MachineWatch() : cpu0_(read_cpu_times()) { sentinel0_ = sentinel_seconds(); }

  MachineVerdict verdict() const {
    const double sentinel1 = sentinel_seconds();
    const auto [others, steal] = others_and_steal(cpu0_, read_cpu_times());
    return judge_machine(others >= 0 ? others + steal : 0, sentinel0_ > 0 ? sentinel1 / sentinel0_ - 1 : 0);
  }

  // Waits until a window of `window_s` seconds with this process idle finds the machine quiet,
  // at most max_s seconds; returns the last window's verdict.
  static MachineVerdict wait_for_quiet(double window_s = 5, double max_s = 60) {
    MachineVerdict v;
    for (double waited = 0; waited < max_s; waited += window_s) {
      MachineWatch w;
      std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
      v = w.verdict();
      if (!v.busy) break;
    }
    return v;
  }

 private:
  CpuTimes cpu0_;
  double sentinel0_ = 0;
};

}  // namespace vlasim::testing
