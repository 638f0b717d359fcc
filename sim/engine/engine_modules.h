// Internal to the engine: the SystemC model simulate() (sim/engine/engine.cc) builds, defined
// in sim/engine/engine_modules.cc. Nothing outside those two files includes it.
// The calendar serves every timed event; a sharing domain per device (or link direction) runs
// its units' jobs; the workload issues the streams' arrivals; the background applies the
// scenario's outside loads.
#pragma once

#include "scenarios/scenario.h"
#include "scenarios/workload.h"
#include "scheduler/policy.h"
#include "sim/costs/gpu_sharing.h"
#include "sim/engine/flow.h"
#include "sim/engine/plan.h"
#include "sim/engine/result.h"

#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

namespace vlasim::engine_detail {

using sc_core::sc_time;
using sc_core::SC_SEC;

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
  void set_background(int k, double share);

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
  void advance();
  // Shares the resources among the running jobs, max-min fair (progressive filling).
  void share();
  // Slows CPU jobs as the other cores of their node get busy (Job::corun_full).
  void corun();
  // Gives every running job its rate and schedules the next completion.
  void resolve();

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

// Applies the scenario's background loads to the domains at their start and end times.
class Background {
 public:
  Background(const Scenario& s, const Plan& p, std::vector<std::unique_ptr<Domain>>& domains,
             Calendar* calendar);

  // Sets every touched resource to the loads active now (a change within a tick of now is
  // now: the calendar runs this up to a tick early) and schedules the next change.
  void apply();

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

}  // namespace vlasim::engine_detail
