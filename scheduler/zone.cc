#include "scheduler/zone.h"

#include <cmath>

namespace vlasim {

namespace {

class StaticZone : public ZonePolicy {
 public:
  size_t choose(const ZoneView& v) override { return v.configured; }
};

// For each candidate, the time its busiest unit would finish this request: backlog plus
// the request's work there, scaled by the unit's observed slowdown. Picks the smallest;
// a candidate must beat the configured cut by `hysteresis` (relative) to be chosen, and ties
// go to the candidate closest to the configured cut.
class BalanceZone : public ZonePolicy {
 public:
  explicit BalanceZone(double hysteresis) : hysteresis_(hysteresis) {}
  size_t choose(const ZoneView& v) override {
    auto finish = [&](const ZoneCandidate& c) {
      double worst = 0;
      for (auto [unit, sec] : c.unit_seconds) {
        double slow = unit < static_cast<int>(v.slowdown.size()) ? v.slowdown[unit] : 1.0;
        double backlog = unit < static_cast<int>(v.backlog_s.size()) ? v.backlog_s[unit] : 0.0;
        worst = std::max(worst, backlog + sec * slow);
      }
      return worst;
    };
    size_t best = v.configured;
    double best_t = finish(v.candidates[best]) * (1 - hysteresis_);
    for (size_t i = 0; i < v.candidates.size(); ++i) {
      double t = finish(v.candidates[i]);
      auto dist = [&](size_t k) { return k > v.configured ? k - v.configured : v.configured - k; };
      if (t < best_t - 1e-12 || (std::abs(t - best_t) <= 1e-12 && dist(i) < dist(best))) {
        best = i;
        best_t = t;
      }
    }
    return best;
  }

 private:
  double hysteresis_;
};

}  // namespace

const ZonePolicyRegistry& zone_policies() {
  static const ZonePolicyRegistry r = [] {
    ZonePolicyRegistry r("zone policy");
    r.add({"static", "always the partition's configured cut",
           {{"width", "blocks on each side of the cut that may move", "2"}},
           [](const Params&) { return std::make_unique<StaticZone>(); }});
    r.add({"balance",
           "per request, the cut whose busiest unit finishes first (backlog + work x observed slowdown)",
           {{"width", "blocks on each side of the cut that may move", "2"},
            {"hysteresis", "relative gain needed to leave the configured cut", "0.05"}},
           [](const Params& p) {
             double h = p.get_double("hysteresis", 0.05);
             if (h < 0 || h >= 1) p.node().required("hysteresis").fail("must be in [0, 1)");
             return std::make_unique<BalanceZone>(h);
           }});
    return r;
  }();
  return r;
}

}  // namespace vlasim
