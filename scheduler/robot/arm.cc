#include "scheduler/robot/arm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vlasim {

namespace {

// Nearest-rank quantile q of v (as reports/stats.h percentile); 0 when v is empty.
double rank_quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

}  // namespace

Arm::Arm(int chunk, double hz, double tick0_s, std::vector<double> observed)
    : chunk_(chunk), hz_(hz), tick0_(tick0_s), observed_(std::move(observed)), ready_(observed_.size(), -1) {
  if (chunk <= 0 || !(hz > 0)) throw std::invalid_argument("Arm: a chunk of at least one action at a rate above 0");
  run_.chunk = chunk;
  run_.hz = hz;
  run_.chunks.resize(observed_.size());
}

void Arm::ready(size_t request, double ready_s) { ready_.at(request) = ready_s; }

long Arm::first_tick_at(double t) const {
  return static_cast<long>(std::ceil((t - tick0_) * hz_ - 1e-9));
}

void Arm::tick(long k, double late_s) {
  const double t = tick_time(k), eps = 1e-9 / hz_;
  ArmTick tk;
  tk.k = k;
  tk.late_s = late_s;
  // The newest chunk in effect: the ready one observed last (a chunk takes effect after its
  // observation, and once in effect stays so: only requests observed since it can replace it).
  while (seen_ < observed_.size() && observed_[seen_] <= t + eps) ++seen_;
  for (size_t i = seen_; i-- > static_cast<size_t>(newest_ + 1);)
    if (ready_[i] >= 0 && ready_[i] <= t + eps) {
      newest_ = static_cast<int>(i);
      break;
    }
  const int newest = newest_;
  if (newest < 0) {
    ++run_.waiting_ticks;
  } else {
    ArmChunk& c = run_.chunks[static_cast<size_t>(newest)];
    tk.chunk = newest;
    const long action = std::max(0L, std::lround((t - observed_[static_cast<size_t>(newest)]) * hz_));
    if (c.first_action < 0) {  // it takes effect: the actions before this one are skipped
      c.first_action = static_cast<int>(std::min<long>(action, chunk_));
      ++run_.ran;
    }
    if (action < chunk_) {
      tk.action = static_cast<int>(action);
      ++c.executed;
      ++run_.executed;
    } else {
      // Out of actions: dry while a later request is observed (its chunk not yet in effect).
      const size_t next = static_cast<size_t>(newest) + 1;
      tk.dry = next < seen_;
      if (tk.dry) {
        if (c.dry_ticks++ == 0) ++run_.dry_chunks;
        ++run_.dry_ticks;
      } else {
        ++run_.idle_ticks;
        done_ = next >= observed_.size();
      }
    }
  }
  run_.ticks.push_back(tk);
}

ArmRun Arm::result() const {
  ArmRun r = run_;
  std::vector<double> first, late;
  r.usable_min = chunk_;
  for (const ArmChunk& c : r.chunks)
    if (c.first_action >= 0) {
      first.push_back(c.first_action);
      r.usable_min = std::min(r.usable_min, chunk_ - c.first_action);
    }
  for (const ArmTick& t : r.ticks) late.push_back(t.late_s);
  r.skipped_p50 = static_cast<int>(rank_quantile(first, 0.5));
  r.late_p50_s = rank_quantile(late, 0.5);
  r.late_p99_s = rank_quantile(late, 0.99);
  r.late_max_s = late.empty() ? 0 : *std::max_element(late.begin(), late.end());
  return r;
}

ArmRun run_arm(int chunk, double hz, double tick0_s, const std::vector<ArmRequest>& requests, double end_s) {
  std::vector<double> observed;
  for (const ArmRequest& q : requests) observed.push_back(q.observed_s);
  Arm arm(chunk, hz, tick0_s, observed);
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].ready_s >= 0) arm.ready(i, requests[i].ready_s);
  for (long k = std::max(0L, arm.first_tick_at(0)); arm.tick_time(k) < end_s && !arm.done(); ++k) arm.tick(k);
  return arm.result();
}

}  // namespace vlasim
