#include "executors/calibration/host_measure.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "executors/calibration/calibrate_internal.h"
#include "executors/executor.h"

namespace vlasim {

namespace {

using Clock = std::chrono::steady_clock;

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// "0-3,8" -> {0,1,2,3,8}; malformed parts skipped.
std::vector<int> cpulist(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      const size_t dash = part.find('-');
      const int a = std::stoi(part.substr(0, dash));
      const int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      for (int c = a; c <= b && c - a < 65536; ++c) out.push_back(c);
    } catch (const std::exception&) {
    }
  }
  return out;
}

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    throw std::runtime_error("host measurement: cannot pin a thread to CPU " + std::to_string(cpu));
}

// a[i] = b[i] + 3 c[i] for the first n elements.
void triad_pass(double* __restrict a, const double* __restrict b, const double* __restrict c, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}

// One triad run: a thread pinned to each of `cpus`, all starting together and stopping at the
// same deadline; returns the bytes/s each moved.
std::vector<double> triad_run(const std::vector<int>& cpus, size_t n, double seconds, double* freq_hz) {
  const size_t k = cpus.size();
  std::vector<double> bw(k, 0);
  std::vector<std::string> errors(k);
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point deadline;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < k; ++t)
    threads.emplace_back([&, t] {
      try {
        pin_self(cpus[t]);
        std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);  // first touch on this CPU's node
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        const Clock::time_point start = Clock::now();
        size_t passes = 0;
        while (Clock::now() < deadline || passes == 0) {
          triad_pass(a.data(), b.data(), c.data(), n);
          ++passes;
        }
        const double dt = std::chrono::duration<double>(Clock::now() - start).count();
        volatile double sink = a[n / 2];
        (void)sink;
        bw[t] = static_cast<double>(passes) * 24.0 * static_cast<double>(n) / dt;
      } catch (const std::exception& e) {
        errors[t] = e.what();
        ready.fetch_add(1);
      }
    });
  while (ready.load() < k) std::this_thread::yield();
  deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  go.store(true, std::memory_order_release);
  if (freq_hz) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 2));
    double sum = 0;
    int got = 0;
    for (int c : cpus) {
      const std::string khz = read_line("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/scaling_cur_freq");
      try {
        if (!khz.empty()) {
          sum += std::stod(khz) * 1e3;
          ++got;
        }
      } catch (const std::exception&) {
      }
    }
    if (got == 0) {  // no cpufreq (VMs): the kernel's own figure per CPU
      std::ifstream f("/proc/cpuinfo");
      std::string line;
      while (std::getline(f, line))
        if (line.rfind("cpu MHz", 0) == 0)
          if (size_t colon = line.find(':'); colon != std::string::npos) try {
              sum += std::stod(line.substr(colon + 1)) * 1e6;
              ++got;
            } catch (const std::exception&) {
            }
    }
    *freq_hz = got ? sum / got : 0;
  }
  for (auto& th : threads) th.join();
  for (const std::string& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  return bw;
}

// Bytes of the level-2 cache CPU `cpu` sees (sysfs), 0 when unknown.
double read_l2(int cpu) {
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(i);
    const std::string level = read_line(dir + "/level"), size = read_line(dir + "/size"), type = read_line(dir + "/type");
    if (level != "2" || size.empty() || type == "Instruction") continue;
    try {
      const double v = std::stod(size);
      const char unit = size.back();
      return v * (unit == 'K' ? 1024.0 : unit == 'M' ? 1024.0 * 1024 : unit == 'G' ? 1024.0 * 1024 * 1024 : 1.0);
    } catch (const std::exception&) {
    }
  }
  return 0;
}

// One thread pinned to `cpu`, nothing else running: the triad's best pass (after one untimed)
// at working sets of `from` bytes doubling up to `to`, each for about `seconds` and at least
// 3 passes; (working-set bytes, bytes/s) per size.
std::vector<std::pair<double, double>> triad_curve(int cpu, double from, double to, double seconds) {
  std::vector<std::pair<double, double>> out;
  std::string error;
  std::thread th([&] {
    try {
      pin_self(cpu);
      const size_t most = static_cast<size_t>(to / 24.0);
      std::vector<double> a(most, 0.0), b(most, 1.0), c(most, 2.0);
      for (double bytes = from; bytes <= to * 1.0001; bytes *= 2) {
        const size_t n = static_cast<size_t>(bytes / 24.0);
        double best = 0;
        const Clock::time_point start = Clock::now();
        for (int pass = 0; pass < 4 || Clock::now() - start < std::chrono::duration<double>(seconds); ++pass) {
          const Clock::time_point t0 = Clock::now();
          triad_pass(a.data(), b.data(), c.data(), n);
          const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
          if (pass > 0 && dt > 0) best = std::max(best, 24.0 * static_cast<double>(n) / dt);
        }
        volatile double sink = a[n / 2];
        (void)sink;
        out.push_back({24.0 * static_cast<double>(n), best});
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  th.join();
  if (!error.empty()) throw std::runtime_error(error);
  return out;
}

double sum_first(const std::vector<double>& v, size_t k) {
  double s = 0;
  for (size_t i = 0; i < k && i < v.size(); ++i) s += v[i];
  return s;
}

}  // namespace

LlcInfo read_llc(int cpu) {
  LlcInfo best;
  int best_level = -1;
  std::vector<int> allowed = allowed_cpus();  // executors/executor.h
  if (allowed.empty()) allowed.push_back(0);
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(i);
    const std::string level = read_line(dir + "/level"), size = read_line(dir + "/size"),
                      type = read_line(dir + "/type");
    if (level.empty() || size.empty() || type == "Instruction") continue;
    try {
      const int lv = std::stoi(level);
      double bytes = std::stod(size);
      const char unit = size.back();
      bytes *= unit == 'K' ? 1024.0 : unit == 'M' ? 1024.0 * 1024 : unit == 'G' ? 1024.0 * 1024 * 1024 : 1.0;
      if (lv <= best_level) continue;
      best_level = lv;
      best.bytes = bytes;
      best.shared_cpus = 0;
      for (int c : cpulist(read_line(dir + "/shared_cpu_list")))
        if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) ++best.shared_cpus;
    } catch (const std::exception&) {
    }
  }
  return best;
}

namespace {

// Bytes of a triad thread's three arrays: beyond the LLC, but bounded, as some VMs report the
// host's whole L3 (hundreds of MB).
double triad_bytes(const LlcInfo& llc) {
  return std::min(std::max(2 * llc.bytes, 48.0 * 1024 * 1024), 256.0 * 1024 * 1024);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return calib::quantile(v, 0.5);
}

}  // namespace

double window_spread(const std::vector<double>& window_medians) {
  if (window_medians.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(window_medians.begin(), window_medians.end());
  return *hi / *lo - 1;
}

HostSteadiness measure_steadiness(double seconds, double window_s) {
  if (!(window_s > 0) || !(2 * window_s <= seconds))
    throw std::invalid_argument("steadiness: needs at least two windows (window " + std::to_string(window_s) +
                                " s over " + std::to_string(seconds) + " s)");
  std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) cpus.push_back(0);
  const size_t n = static_cast<size_t>(triad_bytes(read_llc(cpus.front())) / 24.0);
  const int windows = static_cast<int>(seconds / window_s);
  std::vector<double> memory, core;
  std::string error;
  std::thread t([&] {
    try {
      pin_self(cpus.front());
      std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
      const Clock::time_point start = Clock::now();
      for (int w = 0; w < windows; ++w) {
        const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(window_s * (w + 1)));
        std::vector<double> m, k;
        while (Clock::now() < end) {
          const Clock::time_point t0 = Clock::now();
          triad_pass(a.data(), b.data(), c.data(), n);
          volatile double sink = a[n / 2];
          (void)sink;
          m.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
          k.push_back(sentinel_seconds());
        }
        if (m.size() >= 3) {
          memory.push_back(median_of(m));
          core.push_back(median_of(k));
        }
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  t.join();
  if (!error.empty()) throw std::runtime_error(error);
  HostSteadiness s;
  s.seconds = seconds;
  s.window_s = window_s;
  s.windows = static_cast<int>(memory.size());
  if (s.windows < 2) {  // too few passes per window to say (a very slow machine): not measured
    s = HostSteadiness{};
    return s;
  }
  s.memory_spread = window_spread(memory);
  s.core_spread = window_spread(core);
  return s;
}

HostEntry measure_host(const HostMeasureOptions& o) {
  std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) cpus.push_back(0);
  HostEntry h;
  const LlcInfo llc = read_llc(cpus.front());
  h.llc_bytes = llc.bytes;
  h.llc_shared_cpus = llc.shared_cpus;
  const double per_thread = triad_bytes(llc);
  const size_t n = static_cast<size_t>(per_thread / 24.0);
  std::vector<int> sizes;
  for (int g : o.group_cores)
    if (g >= 1 && g <= static_cast<int>(cpus.size())) sizes.push_back(g);
  if (sizes.empty()) sizes.push_back(1);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  // Every CPU at once: the node's bandwidth, each group's loaded figure, the clock.
  const std::vector<double> all = triad_run(cpus, n, o.seconds_per_run, &h.freq_hz);
  h.node_bw = sum_first(all, all.size());
  for (int g : sizes) {
    const std::vector<int> group(cpus.begin(), cpus.begin() + g);
    HostGroupBandwidth gb;
    gb.cores = g;
    gb.alone_bw = sum_first(triad_run(group, n, o.seconds_per_run, nullptr), group.size());
    gb.loaded_bw = g == static_cast<int>(cpus.size()) ? gb.alone_bw : sum_first(all, group.size());
    h.groups.push_back(gb);
  }
  // One core's bandwidth by working set, from twice its L2 (at least 1 MiB, a power of two
  // MiB) up to the triad's own or twice the reported LLC, at most 1 GiB: where it falls to
  // memory's says how much cache it really gets.
  double from = 1024.0 * 1024;
  while (from < 2 * read_l2(cpus.front())) from *= 2;
  const double to = std::max(per_thread, std::min(2 * llc.bytes, 1024.0 * 1024 * 1024));
  if (o.curve && from * 4 <= to) h.curve = triad_curve(cpus.front(), from, to, o.seconds_per_run / 8);
  return h;
}

double sentinel_seconds() {
  constexpr int N = 96;
  static thread_local std::vector<float> a(N * N), b(N * N), c(N * N);
  for (int i = 0; i < N * N; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  std::vector<double> runs;
  for (int rep = 0; rep < 5; ++rep) {
    const Clock::time_point t0 = Clock::now();
    for (int r = 0; r < 4; ++r)
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
          float s = 0;
          for (int k = 0; k < N; ++k) s += a[i * N + k] * b[k * N + j];
          c[i * N + j] = s + static_cast<float>(r);
        }
    volatile float sink = c[N + 1];
    (void)sink;
    runs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  // The mean, not the best nor the median: the sentinel is to see what the executor sees,
  // time lost to other work on the same cores (preemption within a run) included.
  double sum = 0;
  for (double r : runs) sum += r;
  return std::max(sum / static_cast<double>(runs.size()), 1e-9);
}

CpuTimes read_cpu_times() {
  CpuTimes c;
  std::ifstream f("/proc/stat");
  std::string cpu;
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  double v[8] = {};
  if (!(f >> cpu) || cpu != "cpu") return c;
  for (double& x : v)
    if (!(f >> x)) return c;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (!(tick > 0)) return c;
  c.busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / tick;
  c.steal = v[7] / tick;
  c.total = c.busy + (v[3] + v[4]) / tick + c.steal;
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return c;
  c.self = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  c.ok = true;
  return c;
}

std::pair<double, double> others_and_steal(const CpuTimes& before, const CpuTimes& after) {
  const double total = after.total - before.total;
  if (!before.ok || !after.ok || !(total > 0)) return {-1, -1};
  const auto share = [&](double x) { return std::clamp(x / total, 0.0, 1.0); };
  return {share((after.busy - before.busy) - (after.self - before.self)), share(after.steal - before.steal)};
}

SentinelWatch::SentinelWatch(double interval_s) : interval_s_(interval_s), t0_(Clock::now()), cpu0_(read_cpu_times()) {
  sample();
  thread_ = std::thread([this] {
    // The samples in between run only on a CPU the work leaves idle: the work never waits for them.
    sched_param idle{};
    const bool ok = pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle) == 0;
    std::unique_lock<std::mutex> lock(mu_);
    background_idle_ = ok;
    while (!stopping_) {
      if (cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stopping_; })) break;
      lock.unlock();
      sample();
      lock.lock();
    }
  });
}

SentinelWatch::~SentinelWatch() { stop(); }

void SentinelWatch::sample() {
  const double s = sentinel_seconds();
  const double t = std::chrono::duration<double>(Clock::now() - t0_).count();
  std::lock_guard<std::mutex> lock(mu_);
  if (!record_.samples.empty()) record_.samples.push_back({std::max(t, record_.samples.back().first), s});
  else record_.samples.push_back({t, s});
}

SentinelRecord SentinelWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return record_;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sample();
  const auto [others, steal] = others_and_steal(cpu0_, read_cpu_times());
  std::lock_guard<std::mutex> lock(mu_);
  record_.others_cpu = others;
  record_.steal = steal;
  stopped_ = true;
  return record_;
}

std::string sentinel_text(const SentinelRecord& r) {
  if (r.empty()) return "drift sentinel: not taken";
  char buf[256];
  std::snprintf(buf, sizeof buf, "drift sentinel: %zu samples over %.1f s, kernel %.3f ms, drift %+.1f%%, largest deviation %.1f%%%s",
                r.samples.size(), r.samples.back().first, r.median_s() * 1e3, 100 * r.drift(), 100 * r.max_deviation(),
                std::abs(r.drift()) > kDriftTarget ? " (over the 3% target: the machine changed speed)" : "");
  std::string out = buf;
  if (r.others_cpu >= 0) {
    std::snprintf(buf, sizeof buf, "; other processes used %.1f%% of the CPUs, the hypervisor stole %.1f%%%s", 100 * r.others_cpu,
                  100 * r.steal, r.disturbed() ? " (over the 5% target: the work shared its CPUs)" : "");
    out += buf;
  }
  return out;
}

}  // namespace vlasim
