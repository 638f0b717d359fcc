#include "executors/executor.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>


namespace vlasim {

std::map<std::string, double> time_by_kind(const OpGraph& g, const SegmentTiming& t) {
  std::map<std::string, double> out;
  double total = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    out[to_string(g.op(t.ops[i]).kind)] += t.seconds[i];
    total += t.seconds[i];
  }
  out["total"] = total;
  return out;
}

std::map<std::string, double> time_by_stage(const OpGraph& g, const SegmentTiming& t) {
  std::map<std::string, double> out;
  for (size_t i = 0; i < t.ops.size(); ++i) out[to_string(g.op(t.ops[i]).stage)] += t.seconds[i];
  return out;
}

std::vector<int> ops_of_stage(const OpGraph& g, Stage s) {
  std::vector<int> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.op(static_cast<int>(i)).stage == s) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> all_ops(const OpGraph& g) {
  std::vector<int> out(g.size());
  for (size_t i = 0; i < g.size(); ++i) out[i] = static_cast<int>(i);
  return out;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  } else {
    for (unsigned c = 0; c < std::thread::hardware_concurrency(); ++c)
      out.push_back(static_cast<int>(c));
  }
  return out;
}

static std::string list(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::vector<int> check_cpus(const std::vector<int>& cpus) {
  std::vector<int> ok = allowed_cpus();
  if (cpus.empty()) return ok;
  std::vector<int> bad;
  for (int c : cpus)
    if (std::find(ok.begin(), ok.end(), c) == ok.end()) bad.push_back(c);
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw std::invalid_argument("core group " + list(cpus) + " names a CPU twice");
  if (!bad.empty())
    throw std::invalid_argument("core group names CPU(s) " + list(bad) +
                                " that this process cannot use; available CPUs: " + list(ok));
  return cpus;
}

uint64_t available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

void check_memory(uint64_t bytes, const std::string& what) {
  uint64_t avail = available_memory();
  if (avail != 0 && bytes > avail) {
    char buf[256];
    std::snprintf(buf, sizeof buf, " needs %.1f MiB but only %.1f MiB are available",
                  static_cast<double>(bytes) / (1 << 20), static_cast<double>(avail) / (1 << 20));
    throw std::runtime_error(what + buf);
  }
}

int Executor::set_sm_limit(int sms) {
  if (sms != 0)
    throw std::invalid_argument("executor " + name() + " on " + device() + " has no SMs to limit (asked for " +
                                std::to_string(sms) + ")");
  return 0;
}

}  // namespace vlasim
