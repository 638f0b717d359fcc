#include "scenarios/workload.h"

#include <algorithm>
#include <cmath>

namespace vlasim {

uint64_t mix_seed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

namespace {

// One request every 1/rate seconds from start, each moved by uniform +-jitter.
class Periodic : public ArrivalProcess {
 public:
  Periodic(const StreamDecl& s, uint64_t seed) : s_(s), rng_(seed) {}
  double next() override {
    double t = s_.start_s + static_cast<double>(k_++) / s_.rate_hz;
    if (s_.jitter_s > 0) t += (2 * uniform01(rng_) - 1) * s_.jitter_s;
    t = std::max(t, s_.start_s);
    return t < s_.start_s + s_.duration_s ? t : -1;
  }

 private:
  StreamDecl s_;
  std::mt19937_64 rng_;
  uint64_t k_ = 0;
};

// Exponential gaps with mean 1/rate.
class Poisson : public ArrivalProcess {
 public:
  Poisson(const StreamDecl& s, uint64_t seed) : s_(s), rng_(seed) {}
  double next() override {
    t_ += -std::log(1.0 - uniform01(rng_)) / s_.rate_hz;
    double t = s_.start_s + t_;
    return t < s_.start_s + s_.duration_s ? t : -1;
  }

 private:
  StreamDecl s_;
  std::mt19937_64 rng_;
  double t_ = 0;
};

}  // namespace

const WorkloadRegistry& workloads() {
  static const WorkloadRegistry r = [] {
    WorkloadRegistry r("workload");
    r.add({"periodic", "one request every 1/rate_hz seconds, moved by uniform +-jitter_ms (or +-jitter_pct of the period)", {},
           [](const Params&, const StreamDecl& s, uint64_t seed) {
             return std::make_unique<Periodic>(s, seed);
           }});
    r.add({"poisson", "exponential gaps with mean 1/rate_hz (jitter_ms and jitter_pct ignored)", {},
           [](const Params&, const StreamDecl& s, uint64_t seed) {
             return std::make_unique<Poisson>(s, seed);
           }});
    return r;
  }();
  return r;
}

std::unique_ptr<ArrivalProcess> make_arrivals(const StreamDecl& sd, uint64_t scenario_seed, size_t index) {
  if (sd.rate_pending)
    sd.where.required("load").fail("stream '" + sd.name + "': its load was not turned into a rate "
                                   "(resolve_stream_loads after planning)");
  return workloads().make(sd.arrival, Params(), sd.where, sd,
                          mix_seed(scenario_seed * 1000003ULL + index));
}

}  // namespace vlasim
