// What the calibration sources share (calibrate.cc, in_context.cc, corun.cc); not part of the
// library's interface (calibrate.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/engine/plan.h"
#include "sim/measured/profile.h"

namespace vlasim {
struct CorunDetail;  // calibrate.h
}  // namespace vlasim

namespace vlasim::calib {

// The q-quantile of `sorted` (ascending, not empty), interpolated between neighbours.
inline double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

// One segment's co-run samples (by corun_key) pooled over scenarios: its runs with the other
// core groups of its device idle, and with every one of them running its own segments.
struct CorunSamples {
  std::string label;                  // the first scenario's "<scenario> <model> <label> (<unit>)"
  int cores = 0;                      // its core group's (part of the key)
  std::vector<double> alone, loaded;  // seconds per run (the executor's wall time)
  std::vector<double> alone_cpu, loaded_cpu;  // the same runs' CPU time (SegmentTiming::cpu; < 0 unknown)
  std::vector<double> overlap;        // per loaded run: the share of it the other groups ran
};

// The co-run slowdown of `cs` at full overlap: the median over rounds of the loaded run over
// the same round's alone run (paired_ratio), in the running thread's CPU time where every
// run has one and the group has 1 core (else in wall time), scaled to full overlap by the
// median share of the loaded runs the other groups ran, 1 + (ratio - 1) / overlap, clamped to
// [1/10, 10]. None with fewer than kCorunMinRuns pairs, a run not positive, or an overlap
// under kCorunMinOverlap. Fills *d.
std::optional<CorunSlowdown> corun_figure(const std::string& key, const CorunSamples& cs, CorunDetail* d);

// The co-run pass for scenario `s` planned as `p` (its own plans, batch 1): every distinct CPU
// segment (by corun_key) is prepared on an executor of its unit's CPUs and dtype, as the real
// runtime makes them. Rounds then alternate: each segment run once in turn with nothing else
// running (alone), and, per core group, its segments run once each while every other core group
// of its device runs its own segments over and over on threads of its own (loaded; timing starts
// once each of them has run one). Every timed run follows an untimed run of the same segment,
// so alone and loaded runs start equally warm, and the ratio is the interference alone, not a
// cold start after idle time or the runtime's hand-offs. About `seconds` in all (at least
// kCorunMinRuns rounds, after a warm-up run of each). Nothing when fewer than two core groups
// of one device run segments.
void corun_pass(const Scenario& s, const Plan& p, double seconds, const std::string& executor,
                std::map<std::string, CorunSamples>& out);

}  // namespace vlasim::calib
