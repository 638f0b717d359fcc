// Dynamic-zone scheduling: the blocks near a partition's cut form a zone that may run on
// either side. For each request, a zone policy picks one of the candidate cuts from live
// signals (backlog and slowdown of the units involved), so the split follows load that other
// software puts on a device. Plain C++ over a small view; no SystemC, no oneDNN.
#pragma once

#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "scenarios/config/registry.h"

namespace vlasim {

// One candidate cut and what a request would ask of each unit under it.
struct ZoneCandidate {
  int cut = 0;  // blocks kept on the first device
  // (unit, predicted seconds alone) for every unit the request visits.
  std::vector<std::pair<int, double>> unit_seconds;
};

struct ZoneView {
  double now = 0;
  std::span<const ZoneCandidate> candidates;  // in increasing cut order; not empty
  size_t configured = 0;                      // index of the partition's own cut
  std::span<const double> backlog_s;          // per unit: predicted seconds of work queued or running
  std::span<const double> slowdown;           // per unit: observed / predicted duration (EWMA)
};

class ZonePolicy {
 public:
  virtual ~ZonePolicy() = default;
  // Index into view.candidates of the cut this request runs with.
  virtual size_t choose(const ZoneView& view) = 0;
};

using ZonePolicyRegistry = Registry<ZonePolicy>;
// "static" (always the configured cut) and "balance" (the cut whose most loaded unit
// finishes first, counting backlog and observed slowdown).
const ZonePolicyRegistry& zone_policies();

}  // namespace vlasim
