#include "sim/engine/engine.h"

#include "scenarios/workload.h"
#include "sim/engine/flow.h"
#include "sim/costs/gpu_sharing.h"
#include "sim/measured/profile.h"
#include "sim/costs/cost_models.h"

#include <systemc>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <tuple>

namespace vlasim {

namespace {

using sc_core::sc_time;
using sc_core::SC_SEC;

double now_s() { return sc_core::sc_time_stamp().to_seconds(); }

// A factor drawn from the distribution with quantiles q (at probabilities 0, 1/(n-1), ..., 1;
// linear between them) by inverse transform of a uniform draw from rng.
double draw_factor(const std::vector<double>& q, std::mt19937_64& rng) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
  const double x = u * static_cast<double>(q.size() - 1);
  const size_t i = static_cast<size_t>(x);
  return q[i] + (x - static_cast<double>(i)) * (q[std::min(i + 1, q.size() - 1)] - q[i]);
}

// SystemC's conversions between seconds and its integer time, with the same arithmetic as
// sc_time(double, SC_SEC) and sc_time::to_seconds(), so the calendar can step time exactly
// as SystemC would between two of its activations. Made after a fresh context's resolution
// is fixed; throws if its results would differ from SystemC's own.
class TimeScale {
 public:
  using Ticks = sc_time::value_type;
  // The time resolution a simulation that runs until `limit` seconds uses: SystemC's default
  // picosecond while its ticks fit SystemC's signed 64-bit conversion (about 9e6 s), a
  // nanosecond beyond (about 9e9 s); 0 if even that does not hold it (clock_tick_s).
  static double resolution_for(double limit) { return clock_tick_s(limit); }
  TimeScale() {
    ticks_per_s_ = static_cast<double>(sc_time(1, SC_SEC).value());
    resolution_fs_ = 1e15 / ticks_per_s_;
    for (double x : {1e-12, 0.0123456789, 1.5e-7, 0.5, 600.000000001, 3600.0})
      if (ticks(x) != sc_time(x, SC_SEC).value() ||
          seconds(ticks(x)) != sc_time(x, SC_SEC).to_seconds())
        throw std::logic_error(
            "simulate: this SystemC's seconds-to-ticks conversion differs from the one the "
            "calendar steps time with (is the time resolution a power of ten?)");
  }
  // sc_time(s, SC_SEC).value() for s >= 0.
  Ticks ticks(double s) const {
    return s == 0 ? 0 : static_cast<Ticks>(static_cast<int64_t>(s * ticks_per_s_ + 0.5));
  }
  // sc_time::from_value(t).to_seconds().
  double seconds(Ticks t) const { return static_cast<double>(t) * resolution_fs_ * 1e-15; }

 private:
  double ticks_per_s_ = 0, resolution_fs_ = 0;
};

// Gives this thread a fresh SystemC simulation context with time resolution `resolution_s`
// (1e-12 or 1e-9), and frees the one the previous call made (its modules are gone by then:
// each run's modules live in the function that called this).
void fresh_context(double resolution_s = 1e-12) {
  static sc_core::sc_simcontext* ours = nullptr;
  sc_core::sc_simcontext* old = ours;
  ours = new sc_core::sc_simcontext();
  sc_core::sc_curr_simcontext = ours;
  sc_core::sc_default_global_context = ours;
  delete old;
  if (resolution_s == 1e-9) sc_core::sc_set_time_resolution(1, sc_core::SC_NS);
}

// The slack within which two times at or below t are the same instant on a clock of `tick`
// seconds: two ticks, or a few units in the last place of t where doubles are coarser than
// that (beyond about 9000 s at a picosecond), so a job due within rounding of now, or less
// than a tick ahead (the calendar runs such an event now: Calendar::run), completes now
// instead of being rescheduled at now forever.
double same_time_slack(double t, double tick) {
  return std::max(2 * tick, 4 * (std::nextafter(t, INFINITY) - t));
}


// A running segment inside a domain.
struct Job {
  int unit = 0;
  WorkItem item;
  double remaining = 0;  // seconds of alone-time left
  // Host seconds left before it starts (Segment::overhead): the unit is held, no resource used.
  double delay = 0;
  double rate = 0;       // fraction of alone-speed it progresses at now
  double usage_compute = 0, usage_memory = 0;
  int compute_resource = 0, memory_resource = 0;
  double start = 0;
  int sched = -1;  // its id in the domain's BlockScheduler (a GPU shared by `blocks`)
  // CPU core groups with a loaded bandwidth or measured co-run slowdowns: the job's slowdown
  // when every other core of its node runs (corun_slowdown), its cores and its node's cores.
  double corun_full = 1;
  int cores = 0, node_cores = 0;
  // corun_full is a measured co-run slowdown (the host entry's, for this segment beside these
  // co-runners): it already includes the node's memory-bandwidth contention, so max-min
  // sharing of the node's DRAM does not slow the job again (Domain::share).
  bool corun_measured = false;
};

// Segment `w`'s ops as the kernels it launches (sim/costs/gpu_sharing.h): each op's time and memory
// share from `cost` on its stream (limited to w.sms SMs when its lockstep split it), the SMs it
// occupies from its thread blocks on the stream's SMs (kernel_shape; its pool, `pool_sms` SMs,
// may hold fewer). At least one kernel.
KernelTable segment_kernels(const Scenario& s, const Plan& p, const CostModel& cost, const WorkItem& w,
                            double pool_sms) {
  const ModelPlan& mp = p.models[static_cast<size_t>(w.plan)];
  const Segment& seg = mp.segment_at(w.segment, w.batch, w.sms);
  const OpGraph& g = mp.graph_at(w.batch);
  const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
  KernelTable t;
  if (ui.device >= 0 && !seg.transfer) {
    const DeviceInstance& dev = s.devices[static_cast<size_t>(ui.device)];
    UnitDecl unit = dev.units[static_cast<size_t>(ui.unit)];
    if (w.sms > 0) unit.sm_fraction = static_cast<double>(w.sms) / dev.spec.sms;
    const int sms = stream_sms(dev, unit);
    for (int id : seg.ops) {
      const Op& op = g.op(id);
      const OpCost c = cost.op_cost(op, dev, unit);
      if (!(c.seconds > 0)) continue;
      KernelSpec k;
      k.seconds = c.seconds;
      k.sms = kernel_shape(op, dev.spec, sms).width(sms);
      k.memory = std::min(1.0, c.memory_seconds / c.seconds);
      t.add(k);
    }
  }
  if (t.kernels.empty()) t.add(KernelSpec{std::max(seg.seconds, 1e-9), pool_sms, seg.memory_frac});
  return t;
}

class Domain;
class Workload;
class Background;

// The model's timed events, served by one SystemC method (as TLM's payload event queues do):
// each source (the background changes, each domain's next completion, each stream's next
// arrival) has one slot holding its next time, and SystemC holds a single pending timed
// notification, the earliest slot's, instead of one per busy device. The earliest slot is
// kept by a tournament tree (every inner node holds the earlier of its two children), so a
// change costs one leaf-to-root pass without data-dependent branches. Slots due at the
// same time run in slot order (background, domains by index, streams by index), so runs are
// repeatable.
// Temporal decoupling (as TLM-2.0's quantum keeper): one activation runs every event up to
// `quantum` seconds past SystemC's time, stepping its own time exactly as SystemC would (the
// same tick rounding), then hands SystemC the next event time. The results are the same as
// with one activation per event time (quantum 0); only other SystemC processes would see
// time lag by up to a quantum, and the model has none.
class Calendar : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Calendar);
  // `tick`: the context's time resolution in seconds (1e-12 or 1e-9: fresh_context).
  Calendar(sc_core::sc_module_name name, int domains, int streams, double quantum, double stop, double tick)
      : sc_module(name),
        tick_s_(tick),
        quantum_(time_.ticks(std::min(quantum, stop))),
        stop_(time_.ticks(stop)),
        stop_s_(stop),
        domains_(domains) {
    const int slots = 1 + domains + streams;
    leaves_ = 1;
    while (leaves_ < slots) leaves_ *= 2;
    node_.assign(2 * leaves_, Node{INFINITY, 0});
    for (int k = 0; k < leaves_; ++k) node_[leaves_ + k].slot = k;
    for (int i = leaves_ - 1; i >= 1; --i) node_[i] = node_[2 * i];
    SC_METHOD(run);  // first run at time 0
  }
  void bind(std::vector<std::unique_ptr<Domain>>* d, Workload* w, Background* b) {
    domain_ = d;
    workload_ = w;
    background_ = b;
  }
  static constexpr int kBackgroundSlot = 0;
  int domain_slot(int d) const { return 1 + d; }
  int stream_slot(int s) const { return 1 + domains_ + s; }
  // Source `slot` runs next at absolute time t (seconds; INFINITY: never), replacing its
  // previous time.
  void schedule(int slot, double t) {
    node_[leaves_ + slot].t = t;
    if (slot != running_) fix(slot);
  }
  void cancel(int slot) { schedule(slot, INFINITY); }
  // The current simulated time in seconds (valid while a source runs). An event runs when
  // now() is within a tick of its time, so a source may run up to a tick before the time it
  // asked for (never later, but for the rounding of now() to a double).
  double now() const { return now_; }
  // The clock's tick in seconds: two times less than this apart are the same instant.
  double tick() const { return tick_s_; }
  // The time of the last event run (seconds), or SystemC's time if later.
  double last_time() const { return time_.seconds(std::max(ticks_, sc_core::sc_time_stamp().value())); }
  // Called after every kPollEvents events; when it answers true the calendar halts there:
  // it runs nothing more and schedules nothing, so SystemC starves and sc_start returns.
  void set_poll(std::function<bool()> poll) { poll_ = std::move(poll); }
  bool halted() const { return halted_; }
  static constexpr uint64_t kPollEvents = 128;

  uint64_t events = 0;       // slot runs
  uint64_t activations = 0;  // SystemC activations of the calendar

 private:
  struct Node {
    double t;  // the winner's time
    int slot;  // the winner
  };
  // Recomputes the winners on the path from `slot`'s leaf to the root. The climbing winner
  // stays in registers and meets one sibling a level (loads that do not wait on each other),
  // and the choice is made without branches: a slot's time is random to the branch predictor.
  void fix(int slot) {
    int i = leaves_ + slot;
    double t = node_[i].t;
    int w = slot;
    for (; i > 1; i /= 2) {
      const Node& sib = node_[i ^ 1];
      // Ties go to the left (lower) slot: the sibling wins when earlier, or equal and left.
      const int sib_wins = (sib.t < t) | ((sib.t == t) & (i & 1));
      w ^= (w ^ sib.slot) & -sib_wins;
      t = std::min(t, sib.t);
      node_[i / 2] = Node{t, w};
    }
  }
  void run();

  TimeScale time_;
  double tick_s_;
  TimeScale::Ticks quantum_, stop_;
  double stop_s_;
  TimeScale::Ticks ticks_ = 0;  // the current time in SystemC ticks
  std::function<bool()> poll_;
  bool halted_ = false;
  int domains_, leaves_ = 1;
  // [1, leaves): inner nodes, each the earlier of its children 2i and 2i+1; [leaves,
  // 2*leaves): slot k's next time at leaves+k (INFINITY: none).
  std::vector<Node> node_;
  int running_ = -1;          // the slot whose source runs now (fixed once after it returns)
  double now_ = 0;
  std::vector<std::unique_ptr<Domain>>* domain_ = nullptr;
  Workload* workload_ = nullptr;
  Background* background_ = nullptr;
};

// A device (or link direction): its units' running jobs share its resources, max-min fair.
class Domain {
 public:
  Domain(int index, int resources, RequestFlow* flow, const Plan* plan, Calendar* calendar)
      : index_(index), resources_(resources), flow_(flow), plan_(plan), calendar_(calendar) {
    stats.resource_usage.assign(resources, 0.0);
  }

  // Makes this GPU's segments share it as `gpu` schedules them (sim/costs/gpu_sharing.h) instead
  // of max-min fair; `spec` describes a job that has just started. Before any job starts.
  using GpuSpec = std::function<BlockScheduler::JobSpec(const Job&)>;
  void use_blocks(std::unique_ptr<BlockScheduler> gpu, GpuSpec spec) {
    gpu_ = std::move(gpu);
    gpu_spec_ = std::move(spec);
  }

  // Sets the share of resource k taken by load from outside the scenario, from now on.
  void set_background(int k, double share) {
    advance();
    if (background_.empty()) background_.assign(resources_, 0.0);
    background_[k] = share;
    any_background_ = false;
    for (double b : background_) any_background_ = any_background_ || b > 0;
    if (gpu_) gpu_->set_background(background_[0], resources_ > 1 ? background_[1] : 0.0);
    resolve();
  }

  // Starts a job now: fill in the job returned, then call started(). REQUIRES: its unit has
  // no job running.
  Job& start() {
    advance();
    Job& j = jobs_.emplace_back();
    j.start = calendar_->now();
    return j;
  }
  void started() {
    if (gpu_) jobs_.back().sched = gpu_->add(gpu_spec_(jobs_.back()), calendar_->now());
    resolve();
  }

  // Completes the jobs due now (called by the calendar at this domain's entry).
  void on_wake();

  DomainStats stats;

 private:
  // Moves every job forward to now at its current rate, accumulating statistics.
  void advance() {
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
  void share() {
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
  void corun() {
    for (Job& j : jobs_) {
      if (j.corun_full <= 1 || j.delay > 0 || j.node_cores <= j.cores) continue;
      int busy = 0;
      for (const Job& o : jobs_)
        if (&o != &j && o.delay == 0 && o.memory_resource == j.memory_resource) busy += o.cores;
      const double f = std::min(1.0, static_cast<double>(busy) / (j.node_cores - j.cores));
      j.rate = std::min(j.rate, 1.0 / (1.0 + (j.corun_full - 1) * f));
    }
  }
  // Gives every running job its rate and schedules the next completion.
  void resolve() {
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

  int index_, resources_;
  RequestFlow* flow_;
  const Plan* plan_;
  Calendar* calendar_;
  std::vector<Job> jobs_;
  std::vector<double> cap_, load_;  // scratch for share()
  std::vector<char> frozen_;
  std::vector<double> background_;  // share of each resource taken from outside
  bool any_background_ = false;
  std::vector<Job> done_;
  double last_ = 0;
  std::unique_ptr<BlockScheduler> gpu_;
  GpuSpec gpu_spec_;
};

// The workload: every stream's arrival clock, each on its own calendar slot.
class Workload {
 public:
  Workload(const Scenario& s, RequestFlow* flow, Calendar* calendar);
  // Issues stream `stream`'s arrival due at t (now) and schedules its next.
  void fire(int stream, double t);

 private:
  std::vector<std::unique_ptr<ArrivalProcess>> clocks_;
  RequestFlow* flow_;
  Calendar* calendar_;
};

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
    flow_->segment_done(j.unit, j.item, j.start, now, seg.stage_seconds);
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

// Applies the scenario's background loads to the domains at their start and end times.
class Background {
 public:
  Background(const Scenario& s, const Plan& p, std::vector<std::unique_ptr<Domain>>& domains,
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

  // Sets every touched resource to the loads active now (a change within a tick of now is
  // now: the calendar runs this up to a tick early) and schedules the next change.
  void apply() {
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

 private:
  struct Load {
    int domain, compute, memory;
    double c, m, start, end;
  };
  std::vector<std::unique_ptr<Domain>>& domains_;
  Calendar* calendar_;
  std::vector<Load> loads_;
  std::vector<double> times_;
  size_t next_ = 0;
};

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

}  // namespace

namespace {
std::string fmt3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
// A ratio as a whole percentage: 10 -> "1000%".
std::string percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * ratio);
  return buf;
}
}  // namespace

SimWork estimate_work(const Scenario& s, const Plan& plan, size_t trace_limit) {
  // kBytesPerRequest: measured ~160 bytes a request (its 96-byte record, grown by doubling,
  // and queue state).
  SimWork w;
  double most = -1;
  std::vector<double> n(s.streams.size());
  for (size_t i = 0; i < s.streams.size(); ++i) {
    const StreamDecl& sd = s.streams[i];
    n[i] = std::ceil(sd.rate_hz * sd.duration_s) + 1;
    w.requests += n[i];
    double segs = 0;
    for (const ModelPlan& mp : plan.models)
      if (mp.model == sd.model) segs = std::max(segs, static_cast<double>(mp.segments.size()));
    w.segments += n[i] * segs;
    if (n[i] > most) {
      most = n[i];
      w.busiest_stream = i;
    }
  }
  w.trace_bytes = std::min<double>(trace_limit, w.segments) * sizeof(TraceEvent);
  w.memory_bytes = w.requests * kBytesPerRequest + w.trace_bytes;

  // Overload, as a lower bound. Each unit's demand: seconds of work a second of arrivals puts
  // on it, a segment at the cheapest per-request time of the batch sizes the unit may run.
  // Each model's: its requests' alone time over the requests its pipeline lets in flight
  // (Little's law: no more than window / alone_seconds a second finish). Streams a controller
  // routes (their instance is chosen as they run) and the stale chain of a V-AEFusion plan
  // (which overlaps its VLM) are left out of the bound.
  std::vector<double> unit_demand(plan.units.size(), 0.0), model_demand(plan.models.size(), 0.0);
  std::unique_ptr<PipelinePolicy> pipe;
  if (plan.models.size() >= s.models.size() && !s.pipeline.name.empty())
    pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  auto runs = [](const StreamDecl& sd, const Segment& seg) {
    if (sd.stages == 0) return true;
    for (int st = 0; st < kStages; ++st)
      if (((sd.stages >> st) & 1) && seg.stage_seconds[st] > 0) return true;
    return false;
  };
  auto counted = [&](const StreamDecl& sd) {
    return sd.group.empty() && sd.model >= 0 && static_cast<size_t>(sd.model) < plan.models.size();
  };
  for (const StreamDecl& sd : s.streams) {
    if (!counted(sd)) continue;
    const ModelPlan& mp = plan.models[static_cast<size_t>(sd.model)];
    for (size_t k = 0; k < mp.segments.size(); ++k) {
      const Segment& seg = mp.segments[k];
      if (!runs(sd, seg) || seg.unit < 0 || static_cast<size_t>(seg.unit) >= plan.units.size()) continue;
      double per_request = seg.seconds;
      for (const BatchVariant& v : mp.batched)
        if (v.size <= plan.units[static_cast<size_t>(seg.unit)].batch && k < v.segments.size())
          per_request = std::min(per_request, v.segments[k].seconds / v.size);
      unit_demand[static_cast<size_t>(seg.unit)] += sd.rate_hz * per_request;
    }
    if (sd.stages == 0 && mp.fork < 0 && pipe)
      model_demand[static_cast<size_t>(sd.model)] += sd.rate_hz * mp.alone_seconds / pipe->window(mp.pipeline_stages);
  }
  double most_backlog = 0;
  for (size_t i = 0; i < s.streams.size(); ++i) {
    const StreamDecl& sd = s.streams[i];
    if (!counted(sd)) continue;
    const ModelPlan& mp = plan.models[static_cast<size_t>(sd.model)];
    double rho = model_demand[static_cast<size_t>(sd.model)];
    std::string at = s.models[static_cast<size_t>(sd.model)].name;
    for (const Segment& seg : mp.segments)
      if (runs(sd, seg) && seg.unit >= 0 && static_cast<size_t>(seg.unit) < plan.units.size() &&
          unit_demand[static_cast<size_t>(seg.unit)] > rho) {
        rho = unit_demand[static_cast<size_t>(seg.unit)];
        at = plan.units[static_cast<size_t>(seg.unit)].name;
      }
    if (rho > w.overload) {
      w.overload = rho;
      w.bottleneck = at;
    }
    if (!(rho > 1)) continue;
    const double backlog = n[i] * (1 - 1 / rho);
    w.backlog += backlog;
    if (backlog > most_backlog) {
      most_backlog = backlog;
      w.backlog_stream = i;
    }
  }
  const double kept = s.queue_limit > 0 ? std::min(w.backlog, static_cast<double>(s.queue_limit)) : w.backlog;
  w.backlog_bytes = kept * kBytesPerRequest;
  return w;
}

void check_work(const Scenario& s, const SimWork& w, const SimOptions& options) {
  const auto g = fmt3;
  std::string why;
  ConfigNode at;  // where the refusal points; the busiest stream's entry when undefined
  if (!(w.requests <= options.max_requests)) {
    why = "the scenario would simulate " + g(w.requests) + " requests; the limit is " +
          g(options.max_requests) + " (--max-requests raises it)";
  } else if (!options.on_record && !(w.memory_bytes <= options.max_memory_bytes)) {
    why = "the scenario would keep about " + g(w.memory_bytes / 1e9) + " GB of records for its " +
          g(w.requests) + " requests; the limit is " + g(options.max_memory_bytes / 1e9) +
          " GB (--max-memory-gb raises it; simulate --stream-records keeps none)";
  } else if (options.on_record && !(w.trace_bytes <= options.max_memory_bytes)) {
    why = "the scenario's trace would keep about " + g(w.trace_bytes / 1e9) + " GB; the limit is " +
          g(options.max_memory_bytes / 1e9) + " GB (--max-memory-gb raises it; --trace-limit lowers the trace)";
  } else if (options.on_record && !(w.trace_bytes + w.backlog_bytes <= options.max_memory_bytes)) {
    const std::string over = "the scenario is overloaded: " + w.bottleneck + " is asked for " +
                             percent(w.overload) + " of what it can serve, so about " + g(w.backlog) +
                             " requests would be waiting when arrivals end";
    if (s.queue_limit > 0) {
      why = over + "; queue_limit " + g(static_cast<double>(s.queue_limit)) + " lets " +
            g(w.backlog_bytes / kBytesPerRequest) + " of them wait, about " + g(w.backlog_bytes / 1e9) +
            " GB of records; the limit is " + g(options.max_memory_bytes / 1e9) +
            " GB: lower queue_limit (arrivals past it are dropped and counted) or raise --max-memory-gb";
      at = s.queue_limit_where;
    } else {
      why = over + ", about " + g(w.backlog_bytes / 1e9) + " GB of records; the limit is " +
            g(options.max_memory_bytes / 1e9) + " GB. Set queue_limit: N in the scenario to drop arrivals "
            "that find N requests waiting (counted in the report), lower the rate, or raise --max-memory-gb";
      if (w.backlog_stream < s.streams.size()) at = s.streams[w.backlog_stream].where;
    }
  }
  if (why.empty()) return;
  if (!at.defined() && w.busiest_stream < s.streams.size()) at = s.streams[w.busiest_stream].where;
  if (at.defined()) at.fail(why);
  throw std::invalid_argument("simulate: " + why);
}

std::string overload_note(const Scenario& s, const SimWork& w) {
  if (!(w.backlog > 0)) return "";
  std::string note = "overloaded: " + w.bottleneck + " is asked for " + percent(w.overload) +
                     " of what it can serve (at best), so about " + fmt3(w.backlog) +
                     " requests would be waiting when arrivals end; ";
  if (s.queue_limit > 0)
    return note + "queue_limit " + fmt3(static_cast<double>(s.queue_limit)) +
           " drops each arrival that finds that many waiting (dropped requests are counted in the report)";
  return note + "every one waits (no queue_limit), and latencies grow with the run";
}

namespace {

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;

// 64-bit FNV-1a of `text` continued from h, with a separator after it (so "ab","c" and
// "a","bc" differ).
uint64_t fnv1a(uint64_t h, const std::string& text) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= 0xff;
  return h * 0x100000001b3ull;
}

std::string hex16(uint64_t h) {
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

// A CPU segment's slowdown from bandwidth alone with every other core of its node streaming:
// its memory time stretched by core_bw / core_bw_loaded (1 without a loaded bandwidth).
double bandwidth_slowdown(const DeviceSpec& spec, double memory_frac) {
  return spec.core_bw_loaded > 0 ? 1 + memory_frac * (spec.core_bw / spec.core_bw_loaded - 1) : 1;
}

// Whether `seg` runs on a CPU core group (not a transfer).
bool cpu_segment(const Plan& p, const Segment& seg) {
  if (seg.transfer || seg.unit < 0 || static_cast<size_t>(seg.unit) >= p.units.size()) return false;
  const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
  return ui.type == DeviceType::Cpu && ui.device >= 0;
}

// A CPU segment's work: its unit's cores and its ops' signatures in order.
uint64_t segment_hash(const Scenario& s, const Plan& p, const ModelPlan& mp, const Segment& seg) {
  const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
  uint64_t h = fnv1a(kFnvBasis, "cores=" + std::to_string(s.devices[static_cast<size_t>(ui.device)]
                                                              .units[static_cast<size_t>(ui.unit)].cores));
  for (int id : seg.ops) h = fnv1a(h, op_signature(mp.graph.op(id)));
  return h;
}

}  // namespace

std::string corun_key(const Scenario& s, const Plan& p, int plan_model, int segment) {
  const size_t own = std::min(p.models.size(), s.models.size());
  if (plan_model < 0 || static_cast<size_t>(plan_model) >= own) return "";
  const ModelPlan& mp = p.models[static_cast<size_t>(plan_model)];
  if (segment < 0 || static_cast<size_t>(segment) >= mp.segments.size()) return "";
  const Segment& seg = mp.segments[static_cast<size_t>(segment)];
  if (!cpu_segment(p, seg)) return "";
  const int device = p.units[static_cast<size_t>(seg.unit)].device;
  std::set<uint64_t> others;
  for (size_t m = 0; m < own; ++m)
    for (const Segment& o : p.models[m].segments)
      if (cpu_segment(p, o) && o.unit != seg.unit && p.units[static_cast<size_t>(o.unit)].device == device)
        others.insert(segment_hash(s, p, p.models[m], o));
  uint64_t c = kFnvBasis;
  for (uint64_t h : others) c = fnv1a(c, hex16(h));
  return hex16(segment_hash(s, p, mp, seg)) + "-" + hex16(c);
}

double corun_slowdown(const Scenario& s, const Plan& p, int plan_model, int segment, bool* measured) {
  if (measured) *measured = false;
  if (plan_model < 0 || static_cast<size_t>(plan_model) >= p.models.size()) return 1;
  const ModelPlan& mp = p.models[static_cast<size_t>(plan_model)];
  if (segment < 0 || static_cast<size_t>(segment) >= mp.segments.size()) return 1;
  const Segment& seg = mp.segments[static_cast<size_t>(segment)];
  if (!cpu_segment(p, seg)) return 1;
  const DeviceSpec& spec = s.devices[static_cast<size_t>(p.units[static_cast<size_t>(seg.unit)].device)].spec;
  if (!spec.corun_slowdown.empty()) {
    auto it = spec.corun_slowdown.find(corun_key(s, p, plan_model, segment));
    if (it != spec.corun_slowdown.end()) {
      if (measured) *measured = true;
      return std::max(1.0, it->second);
    }
  }
  return bandwidth_slowdown(spec, seg.memory_frac);
}

SimResult simulate(const Scenario& s, const Plan& plan, const SimOptions& options) {
  if (!(options.quantum_s >= 0))
    throw std::invalid_argument("simulate: quantum_s must be >= 0, not " + std::to_string(options.quantum_s));
  const SimWork work = estimate_work(s, plan, options.trace_limit);
  check_work(s, work, options);
  SimResult r;
  r.horizon = s.arrivals_end();
  double limit = r.horizon + s.drain_s;
  const double resolution = TimeScale::resolution_for(limit);
  if (!(resolution > 0) || !(limit <= kMaxSimulatedSeconds))
    throw std::invalid_argument("simulate: arrivals end at " + std::to_string(r.horizon) +
                                " s and drain_s is " + std::to_string(s.drain_s) +
                                " s; a simulation may run at most " +
                                std::to_string(kMaxSimulatedSeconds) + " s in all");
  fresh_context(resolution);
  std::vector<std::unique_ptr<Domain>> domains;
  // Draws of run-to-run variation, in the (deterministic) order segments start.
  std::mt19937_64 rng(s.seed * 0x9E3779B97F4A7C15ull + 0x5EC7);
  // Each CPU segment's slowdown with the rest of its node busy, found when it first runs.
  std::map<std::pair<int, int>, std::pair<double, bool>> corun_cache;  // slowdown, measured
  // A free unit starts its item as a job in its device's sharing domain.
  RequestFlow flow(s, plan, r, options.trace_limit, [&](int unit, const WorkItem& w) {
    const Segment& seg = plan.models[w.plan].segment_at(w.segment, w.batch, w.sms);
    const UnitInfo& ui = plan.units[unit];
    Domain& d = *domains[ui.domain];
    Job& j = d.start();
    j.unit = unit;
    j.item = w;
    j.remaining = seg.seconds - seg.overhead;
    if (!seg.variability.empty()) j.remaining *= draw_factor(seg.variability, rng);
    j.delay = seg.overhead;
    j.compute_resource = ui.compute_resource;
    j.memory_resource = ui.memory_resource;
    if (ui.type == DeviceType::Link) {
      j.usage_memory = seg.memory_frac;
    } else {
      // A lockstep stream runs with the SMs its lockstep gave it, not its declared share.
      const double share = w.sms > 0 ? static_cast<double>(w.sms) / s.devices[ui.device].spec.sms : ui.compute_share;
      j.usage_compute = seg.compute_frac * share;
      j.usage_memory = seg.memory_frac * ui.memory_share;
      const DeviceInstance& dev = s.devices[ui.device];
      if (ui.type == DeviceType::Cpu && (dev.spec.core_bw_loaded > 0 || !dev.spec.corun_slowdown.empty())) {
        if (w.batch <= 1 && static_cast<size_t>(w.plan) < s.models.size()) {
          // A model's own plan at batch 1: the measured figure where the host entry has one.
          auto it = corun_cache.find({w.plan, w.segment});
          if (it == corun_cache.end()) {
            bool measured = false;
            const double c = corun_slowdown(s, plan, w.plan, w.segment, &measured);
            it = corun_cache.emplace(std::make_pair(w.plan, w.segment), std::make_pair(c, measured)).first;
          }
          j.corun_full = it->second.first;
          j.corun_measured = it->second.second;
        } else {
          j.corun_full = bandwidth_slowdown(dev.spec, seg.memory_frac);
        }
        j.cores = dev.units[ui.unit].cores;
        j.node_cores = dev.spec.cores() / std::max(1, dev.spec.numa_nodes);
      }
    }
    d.started();
  }, options.on_record);
  if (std::any_of(s.streams.begin(), s.streams.end(), [](const StreamDecl& d) { return !d.group.empty(); })) {
    if (!options.router)
      s.controller.where.fail("this command cannot run the live traffic controller (vlasim simulate and sweep do)");
    flow.set_router(options.router);
  }
  Calendar calendar("calendar", plan.domains, static_cast<int>(s.streams.size()),
                    options.quantum_s, limit, resolution);
  for (int d = 0; d < plan.domains; ++d)
    domains.push_back(std::make_unique<Domain>(d, plan.domain_resources[d], &flow, &plan, &calendar));
  // GPUs shared as their hardware schedules them (`gpu_sharing: blocks`): a block scheduler
  // each. A segment's kernels are costed the first time it runs kernel by kernel.
  std::unique_ptr<CostModel> kernel_cost;
  std::map<std::tuple<int, int, int, int, int>, KernelTable> kernel_tables;
  std::vector<int> unit_pool(plan.units.size(), 0);
  for (size_t d = 0; d < s.devices.size() && d < plan.sharing.size(); ++d) {
    const DeviceInstance& dev = s.devices[d];
    if (dev.spec.type != DeviceType::Gpu || !plan.sharing[d].kernel_level) continue;
    // One stream runs one segment at a time, in one process: the block scheduler would give it
    // exactly the max-min fair rate (its alone speed, less background load), so such a GPU
    // keeps the domain's own arithmetic (the large fleets of one stream per GPU run faster).
    if (dev.units.size() == 1) continue;
    BlockScheduler::Options o;
    o.sms = dev.spec.sms;
    o.mps = dev.mps;
    o.time_slice_s = plan.sharing[d].time_slice_s >= 0 ? plan.sharing[d].time_slice_s : dev.spec.time_slice_s;
    o.context_switch_s =
        plan.sharing[d].context_switch_s >= 0 ? plan.sharing[d].context_switch_s : dev.spec.context_switch_s;
    o.tables = [&](const std::array<int, 5>& key) -> const KernelTable* {
      const auto k = std::make_tuple(key[0], key[1], key[2], key[3], key[4]);
      auto it = kernel_tables.find(k);
      if (it != kernel_tables.end()) return &it->second;
      if (!kernel_cost) kernel_cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
      WorkItem w;
      w.plan = key[0];
      w.segment = key[1];
      w.batch = key[2];
      w.sms = key[3];
      return &kernel_tables.emplace(k, segment_kernels(s, plan, *kernel_cost, w, key[4])).first->second;
    };
    auto gpu = std::make_unique<BlockScheduler>(o);
    gpu->set_pool_sms(0, std::max(1, plan.shared_sms[d]));
    int domain = -1;
    for (size_t u = 0; u < plan.units.size(); ++u) {
      const UnitInfo& ui = plan.units[u];
      if (ui.device != static_cast<int>(d)) continue;
      domain = ui.domain;
      const bool lockstep = dev.lockstep.on() && (ui.unit == dev.lockstep.first || ui.unit == dev.lockstep.second);
      if (ui.partition || lockstep) unit_pool[u] = gpu->add_pool(stream_sms(dev, dev.units[static_cast<size_t>(ui.unit)]));
    }
    if (domain < 0) continue;
    BlockScheduler* sched = gpu.get();
    domains[static_cast<size_t>(domain)]->use_blocks(std::move(gpu), [&, sched, d](const Job& j) {
      const UnitInfo& ui = plan.units[static_cast<size_t>(j.unit)];
      const DeviceInstance& dv = s.devices[d];
      const UnitDecl& decl = dv.units[static_cast<size_t>(ui.unit)];
      BlockScheduler::JobSpec sp;
      sp.pool = unit_pool[static_cast<size_t>(j.unit)];
      // A lockstep stream's partition is the split its lockstep gave it.
      const int own = j.item.sms > 0 ? j.item.sms : stream_sms(dv, decl);
      if (sp.pool > 0) sched->set_pool_sms(sp.pool, own);
      const double pool_sms = sp.pool > 0 ? own : std::max(1, plan.shared_sms[d]);
      sp.process = ui.process;
      sp.priority = ui.priority;
      sp.seconds = j.remaining;
      sp.delay = j.delay;
      sp.usage_compute = j.usage_compute;
      sp.usage_memory = j.usage_memory;
      sp.key = {j.item.plan, j.item.segment, j.item.batch, j.item.sms, static_cast<int>(pool_sms)};
      return sp;
    });
  }
  Workload workload(s, &flow, &calendar);
  std::unique_ptr<Background> background;
  if (!s.background.empty()) background = std::make_unique<Background>(s, plan, domains, &calendar);
  calendar.bind(&domains, &workload, background.get());
  // A stop asked for while the calendar runs: should_stop, asked at most every
  // kStopAskSeconds of wall time (and where progress is reported), so a stop is heard within
  // a fraction of a second whatever stretch of simulated time the run is in.
  using Clock = std::chrono::steady_clock;
  constexpr double kStopAskSeconds = 0.05;
  Clock::time_point last_ask = Clock::now();
  auto ask = [&] {
    last_ask = Clock::now();
    r.stopped = options.should_stop();
    return !r.stopped.empty();
  };
  // A constant-memory run whose held records pass the memory limit (an overload the estimate
  // did not foresee: devices shared, background loads, bursts) stops there instead of
  // growing until it fails; checked on events, so where it stops does not depend on the host.
  const double held_limit =
      options.on_record ? std::max(0.0, options.max_memory_bytes - work.trace_bytes) / kBytesPerRequest : INFINITY;
  auto over_memory = [&] {
    if (!(static_cast<double>(flow.held()) > held_limit)) return false;
    r.stopped = "the records held passed the memory limit (" + fmt3(static_cast<double>(flow.held())) +
                " requests not yet handed on, " + fmt3(static_cast<double>(flow.waiting())) +
                " of them waiting; the limit is " + fmt3(options.max_memory_bytes / 1e9) +
                " GB): the scenario is overloaded beyond the estimate; set queue_limit: N in the scenario to drop "
                "arrivals that find N requests waiting, lower the rate, or raise --max-memory-gb";
    return true;
  };
  if (options.should_stop || options.on_record)
    calendar.set_poll([&] {
      return over_memory() ||
             (options.should_stop &&
              std::chrono::duration<double>(Clock::now() - last_ask).count() >= kStopAskSeconds && ask());
    });
  if (options.progress || options.should_stop) {
    // Run in slices so a long simulation can report progress.
    const int slices = 50;
    for (int k = 1; k <= slices; ++k) {
      const double until = k == slices ? limit : limit * k / slices;  // end exactly at limit
      // A slice with no event before its end would only make SystemC warn (W571: with
      // SC_EXIT_ON_STARVATION it does not move the clock); the next slice runs that event.
      // (Before the first sc_start nothing is scheduled yet: the first slice always runs.)
      if (k == 1 ||
          sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity() < sc_time(until, SC_SEC))
        sc_core::sc_start(sc_time(until, SC_SEC) - sc_core::sc_time_stamp(),
                          sc_core::SC_EXIT_ON_STARVATION);
      // Nothing left: 100% (unless the calendar halted, starving SystemC).
      const bool done = !calendar.halted() && (k == slices || !sc_core::sc_pending_activity());
      if (options.progress)
        options.progress({done ? 1.0 : std::min(1.0, now_s() / limit), now_s(), flow.ended(),
                          static_cast<uint64_t>(calendar.events)});
      if (done) break;
      if (calendar.halted() || (k < slices && options.should_stop && ask())) {
        r.horizon = std::min(r.horizon, calendar.last_time());
        break;
      }
    }
  } else {
    sc_core::sc_start(sc_time(limit, SC_SEC), sc_core::SC_EXIT_ON_STARVATION);
    if (calendar.halted()) r.horizon = std::min(r.horizon, calendar.last_time());
  }
  flow.flush();
  r.end_time = calendar.last_time();
  for (auto& d : domains) r.domains.push_back(d->stats);
  r.activations = calendar.events;
  r.systemc_activations = calendar.activations;
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
