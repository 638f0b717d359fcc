#include "sim/engine/engine_modules.h"

#include <map>
#include <set>
#include <utility>

namespace vlasim::engine_detail {

namespace {

// The slack within which two times at or below t are the same instant on a clock of `tick`
// seconds: two ticks, or a few units in the last place of t where doubles are coarser than
// that (beyond about 9000 s at a picosecond), so a job due within rounding of now, or less
// than a tick ahead (the calendar runs such an event now: Calendar::run), completes now
// instead of being rescheduled at now forever.
double same_time_slack(double t, double tick) {
  return std::max(2 * tick, 4 * (std::nextafter(t, INFINITY) - t));
}

}  // namespace

void Domain::set_background(int k, double share) {
  advance();
  if (background_.empty()) background_.assign(resources_, 0.0);
  background_[k] = share;
  any_background_ = false;
  for (double b : background_) any_background_ = any_background_ || b > 0;
  if (gpu_) gpu_->set_background(background_[0], resources_ > 1 ? background_[1] : 0.0);
  resolve();
}

void Domain::advance() {
  double t = calendar_->now(), dt = t - last_;
  if (gpu_) {
    if (dt > 0 && !jobs_.empty()) {
      stats.busy_seconds += dt;
      double sm = 0, mem = 0;
      gpu_->usage(&sm, &mem);
      stats.resource_usage[0] += sm * dt;
      stats.resource_usage[1] += mem * dt;
    }
    gpu_->advance(t);
    last_ = std::max(last_, t);
    return;
  }
  if (dt > 0) {
    if (!jobs_.empty()) stats.busy_seconds += dt;
    for (auto& j : jobs_) {
      if (j.delay > 0) {  // an event falls at the delay's end, so dt never passes it
        j.delay = std::max(0.0, j.delay - dt);
        continue;
      }
      j.remaining -= j.rate * dt;
      stats.resource_usage[j.compute_resource] += j.rate * j.usage_compute * dt;
      if (j.memory_resource != j.compute_resource || j.usage_compute == 0)
        stats.resource_usage[j.memory_resource] += j.rate * j.usage_memory * dt;
    }
  }
  last_ = t;
}

// Progressive filling: raise all unfrozen rates together until a resource saturates or a
// job reaches full speed; freeze those; repeat. A job with a measured co-run slowdown
// (Job::corun_measured) takes no part in the filling of its memory resource: its measured
// figure covers the co-runners' DRAM contention (corun() applies it), so the filling
// neither slows it for that resource nor counts its traffic against the others'; only a
// background load, which the measurement did not see, limits it there (to the capacity the
// background leaves over its own memory use).
void Domain::share() {
  cap_.assign(resources_, 1.0);
  if (any_background_)
    for (int k = 0; k < resources_; ++k) cap_[k] = std::max(0.05, 1.0 - background_[k]);
  frozen_.assign(jobs_.size(), 0);
  for (auto& j : jobs_) j.rate = 0;
  size_t left = jobs_.size();
  for (size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i].delay > 0) {  // host time: takes no share
      frozen_[i] = 1;
      --left;
    }
  while (left > 0) {
    load_.assign(resources_, 0.0);
    for (size_t i = 0; i < jobs_.size(); ++i)
      if (!frozen_[i]) {
        load_[jobs_[i].compute_resource] += jobs_[i].usage_compute;
        if (!jobs_[i].corun_measured) load_[jobs_[i].memory_resource] += jobs_[i].usage_memory;
      }
    double step = 1.0;
    for (size_t i = 0; i < jobs_.size(); ++i)
      if (!frozen_[i]) step = std::min(step, 1.0 - jobs_[i].rate);
    for (int k = 0; k < resources_; ++k)
      if (load_[k] > 1e-15) step = std::min(step, cap_[k] / load_[k]);
    for (size_t i = 0; i < jobs_.size(); ++i)
      if (!frozen_[i]) jobs_[i].rate += step;
    for (int k = 0; k < resources_; ++k) cap_[k] -= step * load_[k];
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (frozen_[i]) continue;
      const Job& j = jobs_[i];
      bool sat = (j.usage_compute > 0 && cap_[j.compute_resource] <= 1e-12) ||
                 (!j.corun_measured && j.usage_memory > 0 && cap_[j.memory_resource] <= 1e-12);
      if (j.rate >= 1.0 - 1e-12 || sat) {
        frozen_[i] = 1;
        --left;
      }
    }
  }
  if (any_background_)
    for (Job& j : jobs_)
      if (j.corun_measured && j.delay == 0 && j.usage_memory > 1e-15)
        j.rate = std::min(j.rate, std::max(0.05, 1.0 - background_[j.memory_resource]) / j.usage_memory);
}

// CPU core groups with a measured host: a job slows towards its slowdown with every other
// core of its node busy (Job::corun_full: the segment's measured co-run slowdown, else its
// memory time stretched by core_bw / core_bw_loaded) as the other cores get busy (the
// fraction of them running a job now), which max-min filling alone does not see below
// saturation (the co-runners' LLC and DRAM contention). Its rate is the lower of the filled
// rate and 1 / (1 + (corun_full - 1) busy_fraction), so a streaming job is not slowed twice.
void Domain::corun() {
  for (Job& j : jobs_) {
    if (j.corun_full <= 1 || j.delay > 0 || j.node_cores <= j.cores) continue;
    int busy = 0;
    for (const Job& o : jobs_)
      if (&o != &j && o.delay == 0 && o.memory_resource == j.memory_resource) busy += o.cores;
    const double f = std::min(1.0, static_cast<double>(busy) / (j.node_cores - j.cores));
    j.rate = std::min(j.rate, 1.0 / (1.0 + (j.corun_full - 1) * f));
  }
}

void Domain::resolve() {
  if (gpu_) {
    gpu_->resolve(last_);
    const double next = gpu_->next_event();
    if (next == INFINITY) calendar_->cancel(calendar_->domain_slot(index_));
    else calendar_->schedule(calendar_->domain_slot(index_), next);
    return;
  }
  if (jobs_.size() == 1 && !any_background_) {
    jobs_[0].rate = 1.0;  // alone: usage fractions never exceed 1
  } else if (!jobs_.empty()) {
    share();
    corun();
  }
  if (jobs_.empty()) {
    calendar_->cancel(calendar_->domain_slot(index_));
    return;
  }
  double next = INFINITY;
  for (auto& j : jobs_) next = std::min(next, j.delay > 0 ? j.delay : std::max(0.0, j.remaining) / j.rate);
  calendar_->schedule(calendar_->domain_slot(index_), last_ + next);
}

void Domain::on_wake() {
  advance();
  // Complete every job whose remaining time is within the clock's resolution.
  std::vector<Job>& done = done_;
  done.clear();
  const double slack = same_time_slack(calendar_->now(), calendar_->tick());
  if (gpu_) {
    const std::vector<int>& ids = gpu_->take_done(calendar_->now(), slack);
    for (size_t i = 0; i < jobs_.size();) {
      if (std::find(ids.begin(), ids.end(), jobs_[i].sched) != ids.end()) {
        done.push_back(jobs_[i]);
        jobs_.erase(jobs_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
  for (Job& j : jobs_)
    if (j.delay <= slack) j.delay = 0;
  for (size_t i = 0; i < jobs_.size() && !gpu_;) {
    if (jobs_[i].delay == 0 && jobs_[i].remaining <= jobs_[i].rate * slack) {
      done.push_back(jobs_[i]);
      jobs_.erase(jobs_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  std::sort(done.begin(), done.end(), [](const Job& a, const Job& b) { return a.unit < b.unit; });
  resolve();
  // job_done may start new jobs here (re-entering start()), so iterate over a copy.
  std::vector<Job> finished;
  finished.swap(done);
  double now = calendar_->now();
  for (const Job& j : finished) {
    const Segment& seg = plan_->models[j.item.plan].segment_at(j.item.segment, j.item.batch, j.item.sms);
    // The hand-off time outside the runtime's segment interval, as the run stretched it.
    const double lead = seg.seconds > 0 ? seg.outside * (now - j.start) / seg.seconds : 0;
    flow_->segment_done(j.unit, j.item, j.start, now, seg.stage_seconds, lead);
  }
  finished.clear();
  done_.swap(finished);
}

void Workload::fire(int stream, double t) {
  flow_->arrive(stream, t);
  const double next = clocks_[stream]->next();  // negative once the stream has ended
  calendar_->schedule(calendar_->stream_slot(stream), next >= 0 ? next : INFINITY);
}

Workload::Workload(const Scenario& s, RequestFlow* flow, Calendar* calendar)
    : flow_(flow), calendar_(calendar) {
  for (size_t i = 0; i < s.streams.size(); ++i) {
    clocks_.push_back(make_arrivals(s.streams[i], s.seed, i));
    double t = clocks_.back()->next();
    if (t >= 0) calendar_->schedule(calendar_->stream_slot(static_cast<int>(i)), t);
  }
}

Background::Background(const Scenario& s, const Plan& p, std::vector<std::unique_ptr<Domain>>& domains,
                       Calendar* calendar)
    : domains_(domains), calendar_(calendar) {
  for (const auto& l : s.background) {
    // The (domain, resource) pairs the load takes compute or memory from: each unit's
    // compute, and each memory resource once (a CPU's core groups share their node's DRAM:
    // a load on the whole CPU takes `memory` of it, not that once per group).
    std::set<std::pair<int, int>> memory_taken;
    for (const auto& u : p.units) {
      if (u.device < 0 || s.devices[u.device].name != l.device) continue;
      if (!l.unit.empty() && s.devices[u.device].units[u.unit].name != l.unit) continue;
      const double m = memory_taken.insert({u.domain, u.memory_resource}).second ? l.memory : 0.0;
      Load x{u.domain, u.compute_resource, u.memory_resource, l.compute, m, l.start_s, l.end_s};
      loads_.push_back(x);
      if (s.devices[u.device].spec.type == DeviceType::Gpu) break;  // streams share one SM pool
    }
    times_.push_back(l.start_s);
    if (l.end_s < 1e299) times_.push_back(l.end_s);
  }
  std::sort(times_.begin(), times_.end());
  times_.erase(std::unique(times_.begin(), times_.end()), times_.end());
  calendar_->schedule(Calendar::kBackgroundSlot, 0.0);
}

void Background::apply() {
  const double t = calendar_->now(), tick = calendar_->tick();
  // Sum the loads active now per (domain, resource) and set every touched resource.
  std::map<std::pair<int, int>, double> share;
  for (const auto& l : loads_) {
    share[{l.domain, l.compute}] += 0;
    share[{l.domain, l.memory}] += 0;
    if (t + tick >= l.start && t < l.end - tick) {
      share[{l.domain, l.compute}] += l.c;
      if (l.memory != l.compute) share[{l.domain, l.memory}] += l.m;
    }
  }
  for (auto& [key, v] : share) domains_[key.first]->set_background(key.second, std::min(v, 0.95));
  while (next_ < times_.size() && times_[next_] <= t + tick) ++next_;
  if (next_ < times_.size()) calendar_->schedule(Calendar::kBackgroundSlot, times_[next_]);
}

void Calendar::run() {
  ++activations;
  const TimeScale::Ticks woke = sc_core::sc_time_stamp().value();
  // SystemC's sc_start(limit) does not run events due at the limit itself; neither do we.
  const TimeScale::Ticks until = std::min(stop_ > 0 ? stop_ - 1 : 0, woke + quantum_);
  ticks_ = woke;
  for (;;) {
    now_ = time_.seconds(ticks_);
    // Run every slot due now: within a tick of now, the step SystemC's rounding to its ticks
    // would give a later one being zero or a tick (a nanosecond clock's events may be closer
    // than that; a double's last place past ~9e6 s is coarser). A source run here may
    // schedule more slots due now, which run in this loop too.
    for (int slot = node_[1].slot; node_[1].t <= now_ + tick_s_; slot = node_[1].slot) {
      const double t = node_[1].t;
      node_[leaves_ + slot].t = INFINITY;  // consumed: the source schedules its next time itself
      running_ = slot;
      ++events;
      if (slot == kBackgroundSlot) background_->apply();
      else if (slot <= domains_) (*domain_)[slot - 1]->on_wake();
      else workload_->fire(slot - 1 - domains_, t);
      running_ = -1;
      fix(slot);
      if (events % kPollEvents == 0 && poll_ && poll_()) {
        halted_ = true;
        return;
      }
    }
    const double next = node_[1].t;
    if (next == INFINITY) return;
    if (next >= stop_s_) {
      // Nothing more runs before the stop; wake there so SystemC's time ends at it (no tick
      // arithmetic on times beyond it, which may not fit).
      if (stop_ > woke) next_trigger(sc_time::from_value(stop_ - woke));
      return;
    }
    // The step SystemC would take to the next event (next_trigger(sc_time(next - now, SC_SEC))),
    // at least a tick (the event is more than a tick ahead), so time always moves.
    const TimeScale::Ticks step = std::max<TimeScale::Ticks>(1, time_.ticks(next - now_));
    if (ticks_ + step > until) {
      next_trigger(sc_time::from_value(ticks_ + step - woke));
      return;
    }
    ticks_ += step;
  }
}

}  // namespace vlasim::engine_detail
