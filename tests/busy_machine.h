// Whether a measuring test ran on a machine quiet enough to judge the code (issue 46): the CPU
// time other processes (and a hypervisor's other guests: steal time) took while it ran, and the
// drift sentinel timed before and after it. A test whose figures miss its bounds while the
// machine was busy reports itself inconclusive (skipped, with the figures) instead of failing
// for the machine's sake; on a quiet machine (CI's) it runs and fails as before.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
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

// Watches the machine from construction to verdict(): /proc/stat's busy and steal jiffies less
// this process's own CPU time (getrusage), and the sentinel kernel before and after.
class MachineWatch {
 public:
  MachineWatch() : t0_(std::chrono::steady_clock::now()), jiffies0_(busy_jiffies()), own0_(own_cpu_s()) {
    sentinel0_ = sentinel_seconds();
  }

  MachineVerdict verdict() const {
    const double sentinel1 = sentinel_seconds();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double all_cpu_s = (busy_jiffies() - jiffies0_) / (hz > 0 ? hz : 100);
    const double others = std::max(0.0, all_cpu_s - (own_cpu_s() - own0_));
    const double cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    return judge_machine(wall > 0 ? others / (wall * cpus) : 0, sentinel0_ > 0 ? sentinel1 / sentinel0_ - 1 : 0);
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
  // Jiffies every CPU spent busy (user, nice, system, irq, softirq, steal) since boot.
  static double busy_jiffies() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    return user + nice + system + irq + softirq + steal;
  }
  // CPU seconds this process (every thread) has used.
  static double own_cpu_s() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
    return s(r.ru_utime) + s(r.ru_stime);
  }

  std::chrono::steady_clock::time_point t0_;
  double jiffies0_, own0_, sentinel0_ = 0;
};

}  // namespace vlasim::testing
