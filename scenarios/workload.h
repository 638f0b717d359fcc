// Workloads: when the requests of a stream arrive. Plain C++ shared by the simulator and the
// real runtime, so both see the same arrival times for the same scenario and seed.
#pragma once

#include <cstdint>
#include <memory>
#include <random>

#include "scenarios/config/registry.h"
#include "scenarios/stream.h"

namespace vlasim {

// The arrival times of one stream, in increasing order.
class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // Time (s) of the next arrival, or a negative number once the stream has ended.
  virtual double next() = 0;
};

using WorkloadRegistry = Registry<ArrivalProcess, const StreamDecl&, uint64_t>;
// "periodic" and "poisson".
const WorkloadRegistry& workloads();

// The arrival process of stream `stream`, the index-th of a scenario seeded `scenario_seed`,
// seeded from both. Throws ConfigError at the stream's load when it is still unresolved
// (rate_pending).
std::unique_ptr<ArrivalProcess> make_arrivals(const StreamDecl& stream, uint64_t scenario_seed, size_t index);

// A uniform double in [0, 1) from 53 random bits (the same on every standard library).
inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// splitmix64: decorrelates seeds derived from one scenario seed.
uint64_t mix_seed(uint64_t x);

}  // namespace vlasim
