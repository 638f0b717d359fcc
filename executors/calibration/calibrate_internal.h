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
struct CorunDetail;       // calibrate.h
struct InContextOptions;  // calibrate.h
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

// One place in the in-context calibration's cycle of requests: a request of `model` at
// `offset` seconds into each cycle.
struct Slot {
  int model = 0;
  double offset = 0;
};

// The in-context calibration's timed requests: the cycle's slots (the first at offset 0, in
// time order), one cycle each `period` seconds, `count` of them (o.warmup more are added to
// the run).
struct TimedRequests {
  std::vector<Slot> slots;
  double period = 0;
  int count = 0;
};

// The timed requests for scenario `s` whose models ran alone in alone[m] seconds: one request
// at a time, in the order and near the times the scenario's own arrivals take, since what ran
// before a request (whose weights fill the caches) and the idle time before it (sleeping
// OpenMP threads) decide how fast its first ops run. A cycle holds n_m = round(rate_m /
// slowest rate) requests of model m (1 to 8; rate_m its streams' rates, a load's from alone[m];
// 1 each without streams), the j-th wanted at (phase_m + j) / n_m of the cycle (phase_m: its
// first stream's start within its period), each placed there or once the request before it
// has had room for 1.5 x its alone latency + 2 ms, in that order. The cycle lasts as long as
// the scenario's arrivals take for as many requests, or longer when the rooms need it.
// o.repetitions cycles, fewer (not under o.min_repetitions) past o.max_seconds. One model: one
// slot a cycle, as often as its arrivals; equal rates: the models in turn.
TimedRequests timed_requests(const Scenario& s, const std::vector<double>& alone, const InContextOptions& o);

// One model run's part of a profile section: its ops in the section, their predicted time
// (the sum of their stored figures) and the request's time beyond them attributed there.
struct DispatchSample {
  double ops = 0;
  double op_seconds = 0;
  double gap_seconds = 0;
};

// The section's dispatch time as per_op seconds for every op plus share x the op's own time.
struct DispatchFit {
  double per_op = 0;
  double share = 0;
  bool two_terms = false;  // both terms fitted (else share is 0 and per_op the pooled mean)
  double pooled_per_op = 0;  // the samples' gap per op, >= 0
  int samples = 0;           // samples used
};

// Fits gap = per_op x ops + share x op_seconds over `samples`, least squares on each sample's
// gap relative to its op_seconds (a small model's runs count as much as a large one's), both
// terms >= 0 and the share at most 1. The two terms are told apart only when the samples'
// mean op times differ (the relative spread of ops / op_seconds over samples at least
// kDispatchMinSpread); otherwise, or with fewer than two samples, the pooled gap per op,
// share 0, as a single figure cannot say which term it is. Samples without ops or op time
// are left out; none: all 0.
DispatchFit fit_dispatch(const std::vector<DispatchSample>& samples);
constexpr double kDispatchMinSpread = 0.1;

}  // namespace vlasim::calib
