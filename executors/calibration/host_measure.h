// This machine's memory system and speed, measured for the profile's host entry
// (sim/measured/profile.h HostEntry), and the drift sentinel (SentinelRecord) that watches the
// machine's own speed over a calibration or a measurement.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sim/measured/profile.h"

namespace vlasim {

struct HostMeasureOptions {
  // Core-group sizes measured (the first `cores` allowed CPUs each); sizes above the allowed
  // CPUs are left out.
  std::vector<int> group_cores = {1};
  double seconds_per_run = 0.25;  // wall time of each triad run
  bool curve = true;  // also one core's bandwidth by working-set size (HostEntry::curve)
};

// The last-level cache one CPU (`cpu`) sees, from sysfs: its bytes and how many of the
// process's allowed CPUs share it; {0, 0} when sysfs says nothing.
struct LlcInfo {
  double bytes = 0;
  int shared_cpus = 0;
};
LlcInfo read_llc(int cpu);

// Measures the host: for each group size, a STREAM-like triad (a[i] = b[i] + 3 c[i], 24 bytes
// per element, arrays per thread twice the LLC, at least 48 MiB and at most 256 MiB) with one pinned thread per
// CPU of the group, alone and while every other allowed CPU runs it too; the bandwidth all
// allowed CPUs reach together; the LLC (read_llc of the first allowed CPU); the mean clock
// read while every CPU ran (cpufreq scaling_cur_freq, else /proc/cpuinfo "cpu MHz"; 0 when
// neither exists); with o.curve, one core's triad alone at working sets doubling from twice
// its L2 (sysfs; at least 1 MiB) up to the triad's own or twice the LLC, at most 1 GiB (about
// seconds_per_run / 8 each, best pass: HostEntry::curve). About 3-4 runs of seconds_per_run plus the arrays' first touch.
// Throws std::runtime_error when a thread cannot be pinned.
HostEntry measure_host(const HostMeasureOptions& o = {});

// The machine's steadiness (HostSteadiness): one thread pinned to the first allowed CPU times,
// interleaved, a triad pass over arrays as measure_host sizes them (beyond the LLC) and
// sentinel_seconds(), for about `seconds`, and keeps each one's median per window of window_s
// (a window's last pass may end past it; windows with fewer than 3 of either are dropped).
// Throws std::invalid_argument unless 0 < window_s and 2 x window_s <= seconds, and
// std::runtime_error when the thread cannot be pinned.
HostSteadiness measure_steadiness(double seconds, double window_s = 2.0);

// Largest over smallest of `window_medians`, - 1 (every one > 0); 0 with fewer than 2.
double window_spread(const std::vector<double>& window_medians);

// Seconds the sentinel kernel takes once on the calling thread: a fixed 96x96x96 fp32
// matrix product (plain C++, no library), the mean of 5 runs, a few milliseconds. Its
// figure moves with the machine's speed (clock, other work on the same cores, co-tenants),
// not with anything vlasim does.
double sentinel_seconds();

// The machine's CPU time so far, from /proc/stat's "cpu" line (every CPU together), and this
// process's own (every thread's user and system time), all in seconds.
struct CpuTimes {
  double busy = 0;   // user, nice, system, irq, softirq
  double steal = 0;  // taken by the hypervisor
  double total = 0;  // busy + idle + iowait + steal
  double self = 0;   // this process
  bool ok = false;   // false: /proc/stat could not be read
};
CpuTimes read_cpu_times();

// Between two readings: the shares of the machine's CPU time that other processes (busy time
// not this process's) and the hypervisor (steal) took, each clamped to [0, 1]; {-1, -1} when
// either reading failed or no time passed.
std::pair<double, double> others_and_steal(const CpuTimes& before, const CpuTimes& after);

// Times the sentinel kernel now (start), every interval_s from a background thread, and at
// stop(). The samples in between run at the idle scheduling class (SCHED_IDLE), so they take
// only CPU time the watched work leaves idle: no run of it is delayed by a sample (with every CPU
// busy a sample waits, and times the work's load, not the machine). The record also
// carries the other processes' and the hypervisor's share of the CPUs over the watch.
class SentinelWatch {
 public:
  explicit SentinelWatch(double interval_s = 2.0);
  ~SentinelWatch();
  SentinelWatch(const SentinelWatch&) = delete;
  SentinelWatch& operator=(const SentinelWatch&) = delete;
  // Stops sampling, takes the last sample and returns every sample (idempotent: later calls
  // return the same record).
  SentinelRecord stop();
  // Samples taken so far.
  size_t taken() {
    std::lock_guard<std::mutex> lock(mu_);
    return record_.samples.size();
  }
  // Whether the sampling thread runs at the idle scheduling class (false until it has started,
  // or where the system refused it).
  bool background_idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return background_idle_;
  }

 private:
  void sample();
  double interval_s_;
  std::chrono::steady_clock::time_point t0_;
  CpuTimes cpu0_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false, stopped_ = false, background_idle_ = false;
  SentinelRecord record_;
  std::thread thread_;
};

// One line for a sentinel record: its samples, drift and largest deviation, and whether the
// drift is beyond kDriftTarget.
std::string sentinel_text(const SentinelRecord& r);

}  // namespace vlasim
