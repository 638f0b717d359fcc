#include "sim/engine.h"

#include <systemc>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <queue>
#include <random>

namespace vlasim {

namespace {

using sc_core::sc_time;
using sc_core::SC_SEC;

double now_s() { return sc_core::sc_time_stamp().to_seconds(); }

// Gives this thread a fresh SystemC simulation context.
void fresh_context() {
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
}

// A uniform double in [0, 1) from 53 random bits (the same on every standard library).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

class Dispatcher;

// A running segment inside a domain.
struct Job {
  int unit = 0;
  double remaining = 0;  // seconds of alone-time left
  double rate = 0;       // fraction of alone-speed it progresses at now
  double usage_compute = 0, usage_memory = 0;
  int compute_resource = 0, memory_resource = 0;
  uint64_t request = 0;
  int segment = 0;
  double start = 0;
};

// A device (or link direction): its units' running jobs share its resources, max-min fair.
class Domain : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Domain);
  Domain(sc_core::sc_module_name name, int index, int resources, Dispatcher* d)
      : sc_module(name), index_(index), resources_(resources), dispatcher_(d) {
    stats.resource_usage.assign(resources, 0.0);
    SC_METHOD(on_wake);
    sensitive << wake_;
    dont_initialize();
  }

  // Starts a job now. REQUIRES: its unit has no job running.
  void start(const Job& j) {
    advance();
    jobs_.push_back(j);
    jobs_.back().start = now_s();
    resolve();
  }

  DomainStats stats;
  uint64_t activations = 0;

 private:
  void on_wake();
  // Moves every job forward to now at its current rate, accumulating statistics.
  void advance() {
    double t = now_s(), dt = t - last_;
    if (dt > 0) {
      if (!jobs_.empty()) stats.busy_seconds += dt;
      for (auto& j : jobs_) {
        j.remaining -= j.rate * dt;
        stats.resource_usage[j.compute_resource] += j.rate * j.usage_compute * dt;
        if (j.memory_resource != j.compute_resource || j.usage_compute == 0)
          stats.resource_usage[j.memory_resource] += j.rate * j.usage_memory * dt;
      }
    }
    last_ = t;
  }
  // Progressive filling: raise all unfrozen rates together until a resource saturates or a
  // job reaches full speed; freeze those; repeat.
  void share() {
    cap_.assign(resources_, 1.0);
    frozen_.assign(jobs_.size(), 0);
    for (auto& j : jobs_) j.rate = 0;
    size_t left = jobs_.size();
    while (left > 0) {
      load_.assign(resources_, 0.0);
      for (size_t i = 0; i < jobs_.size(); ++i)
        if (!frozen_[i]) {
          load_[jobs_[i].compute_resource] += jobs_[i].usage_compute;
          load_[jobs_[i].memory_resource] += jobs_[i].usage_memory;
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
                   (j.usage_memory > 0 && cap_[j.memory_resource] <= 1e-12);
        if (j.rate >= 1.0 - 1e-12 || sat) {
          frozen_[i] = 1;
          --left;
        }
      }
    }
  }
  // Gives every running job its rate and schedules the next completion.
  void resolve() {
    if (jobs_.size() == 1) {
      jobs_[0].rate = 1.0;  // alone: usage fractions never exceed 1
    } else if (!jobs_.empty()) {
      share();
    }
    wake_.cancel();
    if (jobs_.empty()) return;
    double next = INFINITY;
    for (auto& j : jobs_) next = std::min(next, std::max(0.0, j.remaining) / j.rate);
    wake_.notify(sc_time(next, SC_SEC));
  }

  int index_, resources_;
  Dispatcher* dispatcher_;
  std::vector<Job> jobs_;
  std::vector<double> cap_, load_;  // scratch for share()
  std::vector<char> frozen_;
  std::vector<Job> done_;
  double last_ = 0;
  sc_core::sc_event wake_;
};

// Arrival times of one workload stream, drawn from its own random sequence.
class StreamClock {
 public:
  StreamClock(const StreamDecl& s, uint64_t seed) : s_(&s), rng_(seed) {}
  // Time of the next arrival, or a negative number once the stream has ended.
  double next() {
    double t;
    if (s_->poisson) {
      poisson_t_ += -std::log(1.0 - uniform01(rng_)) / s_->rate_hz;
      t = s_->start_s + poisson_t_;
    } else {
      t = s_->start_s + static_cast<double>(k_) / s_->rate_hz;
      if (s_->jitter_s > 0) t += (2 * uniform01(rng_) - 1) * s_->jitter_s;
      t = std::max(t, s_->start_s);
    }
    ++k_;
    return t < s_->start_s + s_->duration_s ? t : -1;
  }

 private:
  const StreamDecl* s_;
  std::mt19937_64 rng_;
  uint64_t k_ = 0;
  double poisson_t_ = 0;
};

// The workload: issues every stream's requests at their arrival times. One process for all
// streams (its own heap, ordered by time then stream index) keeps SystemC's event queue short.
class Workload : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Workload);
  Workload(sc_core::sc_module_name name, const Scenario& s, Dispatcher* d);
  uint64_t activations = 0;

 private:
  void fire();
  using Next = std::pair<double, int>;  // (time, stream)
  std::vector<StreamClock> clocks_;
  std::priority_queue<Next, std::vector<Next>, std::greater<Next>> heap_;
  Dispatcher* dispatcher_;
};

// Request bookkeeping, queues and policies; plain C++ called from the SystemC processes.
class Dispatcher {
 public:
  Dispatcher(const Scenario& s, const Plan& p, const SimOptions& o, SimResult& r)
      : s_(s), p_(p), opt_(o), r_(r) {
    queue_ = queue_policies().make(s.queue.name, s.queue.params, s.queue.where);
    auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
    for (const auto& mp : p.models) window_.push_back(pipe->window(mp.pipeline_stages));
    in_flight_.assign(p.models.size(), 0);
    waiting_.resize(p.models.size());
    unit_queue_.resize(p.units.size());
    unit_busy_.assign(p.units.size(), 0);
    r_.units.resize(p.units.size());
    double expected = 0;  // requests the streams will issue, to size the record array once
    for (const auto& sd : s.streams) expected += sd.rate_hz * sd.duration_s * 1.05 + 16;
    r_.requests.reserve(static_cast<size_t>(std::min(expected, 5e7)));
  }
  void set_domains(std::vector<Domain*> d) { domains_ = std::move(d); }

  void arrive(int stream, double t) {
    const StreamDecl& sd = s_.streams[stream];
    RequestRecord rec;
    rec.id = r_.requests.size();
    rec.model = sd.model;
    rec.stream = stream;
    rec.arrival = t;
    rec.deadline = sd.deadline_s > 0 ? t + sd.deadline_s : 0;
    r_.requests.push_back(rec);
    if (in_flight_[sd.model] < window_[sd.model]) admit(rec.id);
    else waiting_[sd.model].push_back(rec.id);
  }

  void job_done(const Job& j) {
    double t = now_s();
    RequestRecord& rec = r_.requests[j.request];
    const ModelPlan& mp = p_.models[rec.model];
    const Segment& seg = mp.segments[j.segment];
    // Split the segment's interval among its stages in proportion to their alone-time.
    if (!seg.transfer && seg.seconds > 0) {
      double at = j.start;
      for (int st = 0; st < kStages; ++st) {
        if (seg.stage_seconds[st] <= 0) continue;
        double len = (t - j.start) * seg.stage_seconds[st] / seg.seconds;
        stage_span(rec, st, at, at + len);
        at += len;
      }
    }
    UnitStats& us = r_.units[j.unit];
    us.busy_seconds += t - j.start;
    ++us.segments;
    if (r_.trace.size() < opt_.trace_limit)
      r_.trace.push_back(TraceEvent{j.unit, j.start, t, j.request, rec.model, j.segment});
    else
      r_.trace_truncated = true;
    unit_busy_[j.unit] = 0;
    if (static_cast<size_t>(j.segment) + 1 < mp.segments.size()) {
      enqueue(j.request, j.segment + 1);
    } else {
      rec.end = t;
      finish(rec);
    }
    dispatch(j.unit);
  }

 private:
  void stage_span(RequestRecord& rec, int st, double a, double b) {
    if (rec.stage_start[st] < 0) rec.stage_start[st] = a;
    rec.stage_latency[st] = b - rec.stage_start[st];
  }

  void admit(uint64_t id) {
    RequestRecord& rec = r_.requests[id];
    ++in_flight_[rec.model];
    enqueue(id, 0);
  }

  void finish(const RequestRecord& rec) {
    --in_flight_[rec.model];
    auto& w = waiting_[rec.model];
    if (!w.empty()) {
      uint64_t next = w.front();
      w.pop_front();
      admit(next);
    }
  }

  void enqueue(uint64_t id, int segment) {
    const RequestRecord& rec = r_.requests[id];
    const Segment& seg = p_.models[rec.model].segments[segment];
    WorkItem w;
    w.request = id;
    w.model = rec.model;
    w.stream = rec.stream;
    w.segment = segment;
    w.arrival = rec.arrival;
    w.ready = now_s();
    w.deadline = rec.deadline > 0 ? rec.deadline : INFINITY;
    w.estimate = seg.seconds;
    unit_queue_[seg.unit].push_back(w);
    dispatch(seg.unit);
  }

  void dispatch(int unit) {
    auto& q = unit_queue_[unit];
    if (unit_busy_[unit] || q.empty()) return;
    UnitView v;
    v.now = now_s();
    v.unit = unit;
    v.queue = std::span<const WorkItem>(q.data(), q.size());
    v.busy_fraction = v.now > 0 ? r_.units[unit].busy_seconds / v.now : 0;
    size_t pick = q.size() == 1 ? 0 : queue_->pick(v);
    WorkItem w = q[pick];
    q.erase(q.begin() + static_cast<long>(pick));
    unit_busy_[unit] = 1;
    RequestRecord& rec = r_.requests[w.request];
    if (rec.start < 0) rec.start = v.now;
    const Segment& seg = p_.models[w.model].segments[w.segment];
    const UnitInfo& ui = p_.units[unit];
    Job j;
    j.unit = unit;
    j.remaining = seg.seconds;
    j.request = w.request;
    j.segment = w.segment;
    j.compute_resource = ui.compute_resource;
    j.memory_resource = ui.memory_resource;
    if (ui.type == DeviceType::Link) {
      j.usage_compute = 0;
      j.usage_memory = seg.memory_frac;
    } else {
      j.usage_compute = seg.compute_frac * ui.compute_share;
      j.usage_memory = seg.memory_frac * ui.memory_share;
    }
    domains_[ui.domain]->start(j);
  }

  const Scenario& s_;
  const Plan& p_;
  const SimOptions& opt_;
  SimResult& r_;
  std::unique_ptr<QueuePolicy> queue_;
  std::vector<int> window_, in_flight_;
  std::vector<std::deque<uint64_t>> waiting_;
  std::vector<std::vector<WorkItem>> unit_queue_;
  std::vector<char> unit_busy_;
  std::vector<Domain*> domains_;
};

void Domain::on_wake() {
  ++activations;
  advance();
  // Complete every job whose remaining time is within the clock's resolution.
  std::vector<Job>& done = done_;
  done.clear();
  for (size_t i = 0; i < jobs_.size();) {
    if (jobs_[i].remaining <= jobs_[i].rate * 2e-12) {
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
  for (const Job& j : finished) dispatcher_->job_done(j);
  finished.clear();
  done_.swap(finished);
}

void Workload::fire() {
  ++activations;
  double now = now_s();
  // Issue every arrival due now (their times may differ below the clock's resolution).
  while (!heap_.empty() && heap_.top().first <= now + 1e-12) {
    auto [t, stream] = heap_.top();
    heap_.pop();
    dispatcher_->arrive(stream, t);
    double n = clocks_[stream].next();
    if (n >= 0) heap_.push({n, stream});
  }
  if (!heap_.empty()) next_trigger(sc_time(heap_.top().first - now, SC_SEC));
}

// splitmix64: decorrelates per-stream seeds derived from one scenario seed.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

Workload::Workload(sc_core::sc_module_name name, const Scenario& s, Dispatcher* d)
    : sc_module(name), dispatcher_(d) {
  for (size_t i = 0; i < s.streams.size(); ++i) {
    clocks_.emplace_back(s.streams[i], mix(s.seed * 1000003ULL + i));
    double t = clocks_.back().next();
    if (t >= 0) heap_.push({t, static_cast<int>(i)});
  }
  SC_METHOD(fire);  // first run at time 0
}

}  // namespace

SimResult simulate(const Scenario& s, const Plan& plan, const SimOptions& options) {
  SimResult r;
  r.horizon = s.arrivals_end();
  fresh_context();
  Dispatcher dispatcher(s, plan, options, r);
  std::vector<std::unique_ptr<Domain>> domains;
  std::vector<Domain*> raw;
  for (int d = 0; d < plan.domains; ++d) {
    domains.push_back(std::make_unique<Domain>(("domain_" + std::to_string(d)).c_str(), d,
                                               plan.domain_resources[d], &dispatcher));
    raw.push_back(domains.back().get());
  }
  dispatcher.set_domains(raw);
  Workload workload("workload", s, &dispatcher);
  double limit = r.horizon + s.drain_s;
  if (options.progress) {
    // Run in slices so a long simulation can report progress.
    const int slices = 50;
    for (int k = 1; k <= slices; ++k) {
      sc_core::sc_start(sc_time(limit * k / slices, SC_SEC) - sc_core::sc_time_stamp(),
                        sc_core::SC_EXIT_ON_STARVATION);
      options.progress(std::min(1.0, now_s() / limit));
      if (!sc_core::sc_pending_activity()) break;
    }
  } else {
    sc_core::sc_start(sc_time(limit, SC_SEC), sc_core::SC_EXIT_ON_STARVATION);
  }
  r.end_time = now_s();
  for (auto& d : domains) {
    r.domains.push_back(d->stats);
    r.activations += d->activations;
  }
  r.activations += workload.activations;
  return r;
}

namespace {
// One self-notifying method: the cheapest SystemC event source there is.
class Ticker : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Ticker);
  Ticker(sc_core::sc_module_name n, uint64_t events, int period_ps)
      : sc_module(n), left_(events), period_(sc_time::from_value(period_ps)) {
    SC_METHOD(tick);
    sensitive << ev_;
    dont_initialize();
    if (left_ > 0) ev_.notify(period_);
  }
  uint64_t count = 0;

 private:
  void tick() {
    ++count;
    if (--left_ > 0) ev_.notify(period_);
  }
  uint64_t left_;
  sc_time period_;
  sc_core::sc_event ev_;
};
}  // namespace

double bare_systemc_event_rate(uint64_t events, uint64_t* handled, int processes) {
  fresh_context();
  std::vector<std::unique_ptr<Ticker>> tickers;
  for (int i = 0; i < processes; ++i)
    tickers.push_back(std::make_unique<Ticker>(("ticker_" + std::to_string(i)).c_str(),
                                               events / processes, 1000 + 7 * i));
  auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t count = 0;
  for (auto& t : tickers) count += t->count;
  if (handled) *handled = count;
  return static_cast<double>(count) / secs;
}

}  // namespace vlasim

// libsystemc refers to sc_main; vlasim owns main() and drives SystemC itself, so this is
// never called.
int sc_main(int, char*[]) { return 1; }
