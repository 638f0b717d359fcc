#include "executors/runtime/runtime.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "executors/executor.h"
#include "scenarios/workload.h"
#include "sim/engine/flow.h"
#include "executors/executor_registry.h"

namespace vlasim {

namespace {

using Clock = std::chrono::steady_clock;

// ExecuteOptions::should_stop is asked at most this often, and every wait of the calling
// thread is cut into slices of at most kWaitSlice so that it is asked at least every 50 ms.
constexpr auto kAskEvery = std::chrono::milliseconds(10);
constexpr auto kWaitSlice = std::chrono::milliseconds(20);

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// What one unit runs: a prepared segment handle per (plan, segment, batch size), on the
// executor of the model's dtype; transfers are CUDA copies on a link between this host and a
// GPU (pinned or pageable memory, as the link says), else memcpy between two buffers of the unit.
struct UnitRunner {
  std::map<DType, std::unique_ptr<Executor>> executors;
  std::map<std::tuple<int, int, int>, std::pair<Executor*, int>> handles;
  std::vector<char> src, dst;                                          // transfer buffers
  std::unique_ptr<LinkCopier> copier;                                  // a CPU <-> GPU link
  std::vector<int> cpus;
  int cuda_device = -1;  // a GPU stream: the CUDA device its executor runs on (else -1)
  int sms = 0;           // a GPU stream: its SM limit (sms: / sm_fraction:); 0: the whole GPU
  bool sms_from_end = false;  // its limited SMs come from the GPU's end (a split's second stream)
  // The one item the flow has started on this unit, if any.
  bool has_item = false;
  WorkItem item;
  std::condition_variable cv;
  std::thread thread;
};

std::string yaml_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

using Units = std::vector<std::unique_ptr<UnitRunner>>;

// Refuses a run with a live traffic controller, one whose work passes the simulator's limits,
// and one whose arrivals end past o.max_seconds (at the stream that ends last).
void check_runnable(const Scenario& s, const Plan& p, const ExecuteOptions& o) {
  if (s.controller.on())
    s.controller.where.fail("the live traffic controller runs in the simulator (vlasim simulate, sweep); a real run "
                            "serves fixed placements: drop `controller:` and name instances in the workload");
  SimOptions limits;
  limits.max_requests = o.max_requests;
  limits.max_memory_bytes = o.max_memory_bytes;
  check_work(s, estimate_work(s, p, o.trace_limit), limits);
  if (!(s.arrivals_end() <= o.max_seconds)) {
    size_t last = 0;
    for (size_t i = 0; i < s.streams.size(); ++i)
      if (s.streams[i].start_s + s.streams[i].duration_s >
          s.streams[last].start_s + s.streams[last].duration_s)
        last = i;
    const std::string why = "a real run issues arrivals in wall-clock time, and these end at " +
                            std::to_string(s.arrivals_end()) + " s; the limit is " +
                            std::to_string(o.max_seconds) + " s (--max-run-s raises it)";
    if (s.streams[last].where.defined()) s.streams[last].where.fail(why);
    throw std::invalid_argument("execute: " + why);
  }
}

// Asks o.should_stop (at most every kAskEvery; from the calling thread only) unless it has
// answered already; true once it has, its answer in `stopped`.
class StopAsker {
 public:
  StopAsker(const ExecuteOptions& o, std::string& stopped) : o_(o), stopped_(stopped) {}
  bool operator()() {
    if (!stopped_.empty()) return true;
    if (!o_.should_stop || Clock::now() - last_ask_ < kAskEvery) return false;
    last_ask_ = Clock::now();
    stopped_ = o_.should_stop();
    return !stopped_.empty();
  }

 private:
  const ExecuteOptions& o_;
  std::string& stopped_;
  Clock::time_point last_ask_ = Clock::now() - kAskEvery;
};

// A runner for each unit some segment (of any plan, dynamic-zone variants included) runs on,
// its transfer buffers as large as its largest transfer; null for the other units.
Units make_units(const Plan& p) {
  Units units(p.units.size());
  for (size_t m = 0; m < p.models.size(); ++m)
    for (const Segment& seg : p.models[m].segments) {
      if (!units[seg.unit]) units[seg.unit] = std::make_unique<UnitRunner>();
      if (seg.transfer) {
        size_t n = static_cast<size_t>(seg.bytes);
        if (units[seg.unit]->src.size() < n) {
          units[seg.unit]->src.assign(n, 1);
          units[seg.unit]->dst.assign(n, 0);
        }
      }
    }
  return units;
}

// The CUDA device index of scenario device `device`: the scenario's GPUs are the process's
// CUDA devices in order.
int cuda_index(const Scenario& s, int device) {
  int index = 0;
  for (int d = 0; d < device; ++d) index += s.devices[static_cast<size_t>(d)].spec.type == DeviceType::Gpu;
  return index;
}

// A link between this host and a GPU copies for real, direction 0 towards the GPU
// (sim/engine/plan.cc): gives `ur` its CUDA copier (and drops its memcpy buffers). Other links
// (GPU to GPU) stay host memcpy. Throws ConfigError at the link when this host cannot copy.
void bind_link(const Scenario& s, const UnitInfo& ui, UnitRunner& ur, ExecResult& out) {
  const LinkInstance& link = s.links[static_cast<size_t>(ui.link)];
  const int a = s.device_index(link.a), b = s.device_index(link.b);
  const bool a_gpu = s.devices[static_cast<size_t>(a)].spec.type == DeviceType::Gpu;
  const bool b_gpu = s.devices[static_cast<size_t>(b)].spec.type == DeviceType::Gpu;
  if (a_gpu == b_gpu) return;
  const int gpu = a_gpu ? a : b;
  try {
    ur.copier = make_cuda_link_copier(cuda_index(s, gpu), ui.unit == 0, link.pinned,
                                      static_cast<int64_t>(ur.src.size()));
  } catch (const std::exception& e) {
    throw ConfigError(s.file, link.line, 0, "hardware.links",
                      "link '" + link.name + "' (" + ui.name + ") copies to and from GPU '" +
                          s.devices[static_cast<size_t>(gpu)].name + "' for real, which this host cannot do: " +
                          e.what());
  }
  ur.src.clear();
  ur.dst.clear();
  out.devices.push_back(ui.name + ": " + ur.copier->device());
}

// A GPU stream runs on the cuda executor, a CUDA stream of its own, limited to its share of
// the SMs by a green context: sets `ur`'s device, SM limit and which end its SMs come from.
void bind_gpu_stream(const Scenario& s, const UnitInfo& ui, UnitRunner& ur) {
  const DeviceInstance& dev = s.devices[ui.device];
  ur.cuda_device = cuda_index(s, ui.device);
  const UnitDecl& stream = dev.units[static_cast<size_t>(ui.unit)];
  if (stream.sm_fraction < 1) ur.sms = stream_sms(dev, stream);
  // The first stream's SMs come from the front of the GPU, the others' from its end, so
  // the two streams of a split (or a lockstep) share none; a third may share.
  ur.sms_from_end = dev.lockstep.on() ? ui.unit == dev.lockstep.second : ui.unit > 0;
}

// Gives a CPU core group's runner its CPUs; throws ConfigError at the device when this
// process may not run on them.
void bind_core_group(const Scenario& s, const UnitInfo& ui, UnitRunner& ur) {
  const DeviceInstance& dev = s.devices[ui.device];
  const UnitDecl& ud = dev.units[ui.unit];
  for (int c = 0; c < ud.cores; ++c) ur.cpus.push_back(ud.first_core + c);
  try {
    check_cpus(ur.cpus);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(s.file, dev.line, 0, "hardware.devices",
                      "device '" + dev.name + "': " + "core group '" + ud.name + "' needs CPUs " +
                          yaml_list(ur.cpus) + " that this process may not run on: " + e.what());
  }
}

// Binds every used unit to what it runs on: a link's copier, a GPU stream's device, a core
// group's CPUs.
void bind_units(const Scenario& s, const Plan& p, Units& units, ExecResult& out) {
  for (size_t u = 0; u < p.units.size(); ++u) {
    if (!units[u]) continue;
    const UnitInfo& ui = p.units[u];
    if (ui.type == DeviceType::Link) bind_link(s, ui, *units[u], out);
    else if (s.devices[ui.device].spec.type == DeviceType::Gpu) bind_gpu_stream(s, ui, *units[u]);
    else bind_core_group(s, ui, *units[u]);
  }
}

// The cuda executor of GPU stream `unit` at `dtype`; throws ConfigError at the device when
// this host cannot start it.
std::unique_ptr<Executor> make_stream_executor(const Scenario& s, const Plan& p, int unit, const UnitRunner& ur,
                                               DType dtype) {
  const DeviceInstance& dev = s.devices[static_cast<size_t>(p.units[unit].device)];
  const std::string yaml = "{dtype: " + std::string(to_string(dtype)) + ", device: " +
                           std::to_string(ur.cuda_device) + ", seed: " + std::to_string(s.seed) +
                           ", graph: " + (dev.graph_capture ? "true" : "false") +
                           ", sms: " + std::to_string(ur.sms) +
                           ", sms_from_end: " + (ur.sms_from_end ? "true" : "false") + "}";
  ConfigNode n = ConfigNode::load_string(yaml, "<execute>");
  try {
    return executor_registry().make("cuda", Params(n), n);
  } catch (const std::exception& e) {
    throw ConfigError(s.file, dev.line, 0, "hardware.devices",
                      "device '" + dev.name + "' (" + dev.spec.name + ", stream " + p.units[unit].name +
                          ") runs on the cuda executor, which this host cannot start: " + e.what());
  }
}

// The executor of a core group at `dtype` on its CPUs: o.make_executor's, else the registry's
// o.executor.
std::unique_ptr<Executor> make_core_executor(const Scenario& s, const ExecuteOptions& o, const UnitRunner& ur,
                                             DType dtype) {
  std::string yaml = "{dtype: " + std::string(to_string(dtype)) + ", cpus: " +
                     yaml_list(ur.cpus) + ", seed: " + std::to_string(s.seed) + "}";
  ConfigNode n = ConfigNode::load_string(yaml, "<execute>");
  return o.make_executor ? o.make_executor(Params(n), n) : executor_registry().make(o.executor, Params(n), n);
}

// Executors (one per unit and dtype) and prepared segments, at every batch size the batching
// policy may run on their unit; each executor's device joins out.devices as it is made.
void prepare_segments(const Scenario& s, const Plan& p, const ExecuteOptions& o, Units& units, ExecResult& out) {
  auto batching = scenario_batch_policy(s);
  for (size_t m = 0; m < p.models.size(); ++m) {
    const ModelPlan& mp = p.models[m];
    DType dtype = s.models[mp.model].shape.dtype;
    for (size_t k = 0; k < mp.segments.size(); ++k) {
      const Segment& seg = mp.segments[k];
      if (seg.transfer) continue;
      UnitRunner& ur = *units[seg.unit];
      auto& ex = ur.executors[dtype];
      if (!ex && ur.cuda_device >= 0) {
        ex = make_stream_executor(s, p, seg.unit, ur, dtype);
        out.devices.push_back(p.units[seg.unit].name + ": " + ex->device());
      }
      if (!ex) {
        ex = make_core_executor(s, o, ur, dtype);
        out.devices.push_back(p.units[seg.unit].name + ": " + ex->device());
      }
      const int max_batch = p.units[static_cast<size_t>(seg.unit)].batch;
      for (int b : max_batch > 1 ? batching->sizes(max_batch) : std::vector<int>{1})
        ur.handles[{static_cast<int>(m), static_cast<int>(k), b}] = {ex.get(), ex->prepare(mp.graph_at(b), seg.ops)};
    }
  }
}

// The SM limits each GPU stream may run with: its own (0), and on a lockstep GPU every split
// the table may choose (the first stream's, the rest for the second) and the whole GPU for a
// lone batch. Empty for other units.
std::vector<std::set<int>> sm_limits_used(const Plan& p, const Units& units) {
  std::vector<std::set<int>> limits(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    if (units[u] && units[u]->cuda_device >= 0) limits[u].insert(0);
  for (const LockstepPlan& lp : p.locksteps)
    for (int k = 0; k < 2; ++k) {
      const size_t u = static_cast<size_t>(lp.units[k]);
      if (u >= units.size() || !units[u] || units[u]->cuda_device < 0) continue;
      limits[u].insert(lp.sms);
      auto side = [&](int first) { return k == 0 ? first : lp.sms - first; };
      if (lp.static_first > 0) limits[u].insert(side(lp.static_first));
      for (const auto& [pair, first] : lp.lut) limits[u].insert(side(first));
    }
  return limits;
}

// The catalog's SM count must be the GPU's (lockstep splits and lone batches ask for it):
// throws ConfigError at the device when GPU stream `u`'s CUDA device is not its catalog entry.
void check_catalog_sms(const Scenario& s, const Plan& p, size_t u, UnitRunner& ur) {
  const DeviceInstance& dev = s.devices[static_cast<size_t>(p.units[u].device)];
  for (auto& [dtype, ex] : ur.executors) try {
      ex->set_sm_limit(dev.spec.sms);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(s.file, dev.line, 0, "hardware.devices",
                        "device '" + dev.name + "' is catalog entry " + dev.spec.name + " (" +
                            std::to_string(dev.spec.sms) + " SMs), which CUDA device " +
                            std::to_string(ur.cuda_device) + " is not: " + e.what() +
                            "; use the catalog entry of the GPU present");
    }
}

// Runs every prepared segment o.warmup times (fewer once a stop is asked) under each SM limit
// its unit may run with, so that no request pays for a green context's creation or a graph's
// capture; then puts GPU streams back on their own limit. Each stream's limits asked ->
// granted join out.devices.
void warm_up(const Scenario& s, const Plan& p, const ExecuteOptions& o, Units& units, StopAsker& stop_asked,
             ExecResult& out) {
  const std::vector<std::set<int>> limits = sm_limits_used(p, units);
  for (size_t u = 0; u < units.size(); ++u) {
    if (!units[u]) continue;
    UnitRunner& ur = *units[u];
    if (ur.cuda_device >= 0) check_catalog_sms(s, p, u, ur);
    std::string granted;  // "96 -> 96 SMs, 132 -> 132 SMs": what each limit got
    for (int limit : ur.cuda_device >= 0 ? limits[u] : std::set<int>{0}) {
      for (auto& [dtype, ex] : ur.executors)
        if (ur.cuda_device >= 0) {
          const int got = ex->set_sm_limit(limit);
          const int asked = limit > 0 ? limit : ur.sms;  // 0: the stream's own limit
          if (asked > 0 && dtype == ur.executors.begin()->first)
            granted += (granted.empty() ? "" : ", ") + std::to_string(asked) + " -> " + std::to_string(got);
        }
      for (auto& [key, h] : ur.handles)
        for (int w = 0; w < o.warmup && !stop_asked(); ++w) h.first->run(h.second);
    }
    if (!granted.empty()) out.devices.push_back(p.units[u].name + ": SM limits asked -> granted: " + granted);
    for (auto& [dtype, ex] : ur.executors)
      if (ur.cuda_device >= 0) ex->set_sm_limit(0);
  }
}

// The timed part of a run: the request flow, one worker thread per unit that runs the items
// the flow starts on it, background load threads, and the clock they share (t0: the start).
struct TimedRun {
  TimedRun(const Scenario& s, const Plan& p, Units& units, ExecResult& out, size_t trace_limit)
      : s(s), p(p), units(units), out(out), samples(sized_samples(s, p)),
        flow(s, p, out.result, trace_limit, [this](int unit, const WorkItem& w) {
          UnitRunner& ur = *this->units[unit];
          ur.item = w;
          ur.has_item = true;
          ur.cv.notify_one();
        }) {}

  const Scenario& s;
  const Plan& p;
  Units& units;
  ExecResult& out;
  // Per-op samples, per scenario model (its variants share the graph and its op ids).
  std::vector<std::vector<std::vector<double>>> samples;
  std::mutex mu;
  std::condition_variable done_cv;  // a request ended, or a worker stopped
  bool stop = false;  // the run has ended: units start nothing more
  int workers = 0;    // worker threads not yet stopped
  double flow_clock = 0;  // the latest time handed to the flow (guarded by mu)
  const Clock::time_point t0 = Clock::now();
  RequestFlow flow;
  std::atomic<bool> bg_stop{false};
  std::vector<std::thread> bg_threads;
  // The live arms (ExecuteOptions::arm): one per control stream, ticked by arm_thread until
  // a tick falls at or past arm_until (set by the drain to the run's end) or every arm is done.
  struct LiveArm {
    int stream = 0;
    double actuation_s = 0;
    Arm arm;
    std::vector<size_t> records;  // its requests' indices in out.result.requests, in arrival order
    std::vector<char> marked;     // per request: its ready time handed to the arm, or never will be
    size_t pending = 0;           // requests before it all marked
    long k = 0;                   // its next tick
  };
  std::vector<LiveArm> arms;
  std::thread arm_thread;
  std::atomic<double> arm_until{std::numeric_limits<double>::infinity()};
  size_t scanned = 0;  // records of out.result.requests sorted into arms (guarded by mu)

  // Seconds since t0.
  double now() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  // Per scenario model, an empty sample list per op of its graph.
  static std::vector<std::vector<std::vector<double>>> sized_samples(const Scenario& s, const Plan& p);
  // Starts one worker thread per used unit.
  void start_workers();
  // Unit u's worker: runs each item handed to it and reports it to the flow, until stop.
  void work(size_t u);
  // Runs the segment of item w on unit `ur`; an exception's message, else "" with *timing
  // set for a compute segment.
  static std::string run_segment(UnitRunner& ur, const Segment& seg, const WorkItem& w,
                                 const SegmentTiming** timing);
  // Under mu: records a segment of w that ran on unit u over [start, end] (per-op samples of
  // a lone request, stage shares) with the flow.
  void segment_ran(size_t u, const WorkItem& w, const SegmentTiming* timing, double start, double end);
  // Background load on CPU core groups: one spinning thread per core, busy for `compute` of
  // every 2 ms while the load lasts. (Memory-bandwidth load is not reproduced for real.)
  void start_background_load();
  // The arrivals, merged over streams in (time, stream) order.
  std::vector<std::pair<double, int>> schedule() const;
  // A live arm per control stream over its requests in `arrivals`, ticking from the first tick
  // at or after time 0 on a thread of its own.
  void start_arms(const std::vector<std::pair<double, int>>& arrivals);
  // The arms' thread: each tick at its time, after handing each arm the ready times of its
  // requests that ended since.
  void run_arms();
  // Under mu: sorts new records into the arms and hands them the chunks ready since.
  void arms_learn();
  // Lets the arms tick up to `tail_s` past the run's end `end_s` (until done: their last
  // chunks run out), joins their thread and keeps what they did.
  void finish_arms(double end_s, double tail_s);
  // Issues `arrivals` at their times, until a stop is asked.
  void issue_arrivals(const std::vector<std::pair<double, int>>& arrivals, const ExecuteOptions& o,
                      StopAsker& stop_asked);
  // Waits until every issued request has ended, the drain's end, or a stop; then the workers
  // stop taking work, and this waits for the segments still running and joins every thread.
  void drain(StopAsker& stop_asked);
};

std::vector<std::vector<std::vector<double>>> TimedRun::sized_samples(const Scenario& s, const Plan& p) {
  std::vector<std::vector<std::vector<double>>> samples(s.models.size());
  for (size_t m = 0; m < s.models.size(); ++m) samples[m].resize(p.models[m].graph.size());
  return samples;
}

void TimedRun::start_workers() {
  for (const auto& u : units) workers += u != nullptr;
  for (size_t u = 0; u < units.size(); ++u)
    if (units[u]) units[u]->thread = std::thread([this, u] { work(u); });
}

void TimedRun::work(size_t u) {
  UnitRunner& ur = *units[u];
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    ur.cv.wait(lock, [&] { return ur.has_item || stop; });
    if (stop) break;  // the run has ended: the item handed over does not start
    WorkItem w = ur.item;
    ur.has_item = false;
    const Segment& seg = p.models[w.plan].segment_at(w.segment, w.batch);
    lock.unlock();
    double start = now();
    const SegmentTiming* timing = nullptr;
    const std::string error = run_segment(ur, seg, w, &timing);
    double end = now();
    lock.lock();
    // The run ended while this segment ran: it is not recorded, and its requests stay
    // unfinished, as in a simulation cut at that time.
    if (stop) break;
    // The flow's clock never runs backwards: an arrival handed to it while this thread
    // waited for the lock may carry a later time than `end`.
    end = std::max(end, flow_clock);
    flow_clock = end;
    if (!error.empty()) {
      if (out.first_error.empty()) out.first_error = p.units[u].name + ": " + error;
      flow.segment_failed(static_cast<int>(u), w, start, end);
      done_cv.notify_all();
      continue;
    }
    segment_ran(u, w, timing, start, end);
    done_cv.notify_all();
  }
  --workers;
  done_cv.notify_all();
}

std::string TimedRun::run_segment(UnitRunner& ur, const Segment& seg, const WorkItem& w,
                                  const SegmentTiming** timing) {
  try {
    // The engine's per-step host work (BatchPolicy::step_overhead_seconds): the unit idles.
    if (seg.overhead > 0)
      std::this_thread::sleep_until(std::chrono::steady_clock::now() + std::chrono::duration<double>(seg.overhead));
    if (seg.transfer) {
      if (ur.copier) ur.copier->copy(static_cast<int64_t>(seg.bytes));
      else std::memcpy(ur.dst.data(), ur.src.data(), static_cast<size_t>(seg.bytes));
    } else {
      auto [ex, handle] = ur.handles.at({w.plan, w.segment, w.batch});
      if (ur.cuda_device >= 0) ex->set_sm_limit(w.sms);  // a lockstep's split, else the stream's own
      *timing = &ex->run(handle);
    }
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
  return "";
}

void TimedRun::segment_ran(size_t u, const WorkItem& w, const SegmentTiming* timing, double start, double end) {
  double stage[kStages] = {0, 0, 0, 0, 0};
  if (timing) {
    const OpGraph& g = p.models[w.plan].graph;
    for (size_t i = 0; i < timing->ops.size(); ++i) {
      // Per-op figures are of one request: batched runs give only their stage shares.
      if (w.batch == 1) samples[w.model][timing->ops[i]].push_back(timing->seconds[i]);
      stage[static_cast<int>(g.op(timing->ops[i]).stage)] += timing->seconds[i];
    }
  }
  flow.segment_done(static_cast<int>(u), w, start, end, stage);
}

void TimedRun::start_background_load() {
  for (const auto& l : s.background) {
    const DeviceInstance& dev = s.devices[s.device_index(l.device)];
    for (const auto& ud : dev.units) {
      if (!l.unit.empty() && ud.name != l.unit) continue;
      for (int c = 0; c < ud.cores; ++c) {
        int cpu = ud.first_core + c;
        double duty = l.compute, a = l.start_s, b = l.end_s;
        bg_threads.emplace_back([this, cpu, duty, a, b] {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(cpu, &set);
          sched_setaffinity(0, sizeof set, &set);
          const double period = 0.002;
          while (!bg_stop) {
            double t = now();
            if (t < a || t >= b) {
              std::this_thread::sleep_for(std::chrono::microseconds(500));
              continue;
            }
            double busy_until = t + duty * period;
            while (now() < busy_until && !bg_stop) {
            }
            std::this_thread::sleep_for(std::chrono::duration<double>((1 - duty) * period));
          }
        });
      }
    }
  }
}

std::vector<std::pair<double, int>> TimedRun::schedule() const {
  std::vector<std::pair<double, int>> arrivals;
  for (size_t i = 0; i < s.streams.size(); ++i) {
    auto a = make_arrivals(s.streams[i], s.seed, i);
    for (double t = a->next(); t >= 0; t = a->next()) arrivals.emplace_back(t, static_cast<int>(i));
  }
  std::sort(arrivals.begin(), arrivals.end());
  return arrivals;
}

void TimedRun::start_arms(const std::vector<std::pair<double, int>>& arrivals) {
  for (size_t i = 0; i < s.streams.size(); ++i) {
    const ControlDecl& c = s.streams[i].control;
    if (!c.on()) continue;
    std::vector<double> observed;
    for (auto [t, stream] : arrivals)
      if (stream == static_cast<int>(i)) observed.push_back(t - c.capture_s);
    const int chunk = s.models[static_cast<size_t>(s.streams[i].model)].shape.chunk;
    const size_t n = observed.size();
    Arm arm(chunk, c.hz, s.streams[i].start_s - c.capture_s, std::move(observed));
    const long k = std::max(0L, arm.first_tick_at(0));
    arms.push_back({static_cast<int>(i), c.actuation_s, std::move(arm), {}, std::vector<char>(n, 0), 0, k});
  }
  if (!arms.empty()) arm_thread = std::thread([this] { run_arms(); });
}

void TimedRun::arms_learn() {
  const std::vector<RequestRecord>& reqs = out.result.requests;
  for (; scanned < reqs.size(); ++scanned)
    for (LiveArm& a : arms)
      if (reqs[scanned].stream == a.stream) a.records.push_back(scanned);
  for (LiveArm& a : arms) {
    for (size_t i = a.pending; i < a.records.size(); ++i) {
      const RequestRecord& q = reqs[a.records[i]];
      if (a.marked[i]) continue;
      if (q.finished() && !q.failed) a.arm.ready(i, q.end + a.actuation_s);
      a.marked[i] = q.finished() || q.failed || q.dropped;
    }
    while (a.pending < a.records.size() && a.marked[a.pending]) ++a.pending;
  }
}

void TimedRun::run_arms() {
  for (;;) {
    LiveArm* next = nullptr;
    for (LiveArm& a : arms)
      if (!a.arm.done() && (!next || a.arm.tick_time(a.k) < next->arm.tick_time(next->k))) next = &a;
    if (!next) return;
    const double due_s = next->arm.tick_time(next->k);
    const Clock::time_point due = t0 + seconds(due_s);
    while (due_s < arm_until && Clock::now() < due) std::this_thread::sleep_until(std::min(due, Clock::now() + kWaitSlice));
    if (due_s >= arm_until) return;
    const double late = now() - due_s;
    {
      std::lock_guard<std::mutex> lock(mu);
      arms_learn();
    }
    next->arm.tick(next->k++, late);
  }
}

void TimedRun::finish_arms(double end_s, double tail_s) {
  if (arms.empty()) return;
  arm_until = end_s + tail_s;
  arm_thread.join();
  for (const LiveArm& a : arms) out.arms.push_back(a.arm.result());
}

void TimedRun::issue_arrivals(const std::vector<std::pair<double, int>>& arrivals, const ExecuteOptions& o,
                              StopAsker& stop_asked) {
  SimResult& r = out.result;
  size_t issued = 0;
  for (auto [t, stream] : arrivals) {
    const Clock::time_point due = t0 + seconds(t);
    while (!stop_asked() && Clock::now() < due) std::this_thread::sleep_until(std::min(due, Clock::now() + kWaitSlice));
    if (!r.stopped.empty()) break;
    {
      std::lock_guard<std::mutex> lock(mu);
      // The nominal arrival time, handed over at the flow's current time, which must not run
      // backwards behind a segment end it was already given (RequestFlow::arrive).
      flow_clock = std::max(flow_clock, t);
      flow.arrive(stream, t, flow_clock);
    }
    if (o.progress && (++issued % 16 == 0 || issued == arrivals.size()))
      o.progress(static_cast<double>(issued) / static_cast<double>(arrivals.size()));
  }
}

void TimedRun::drain(StopAsker& stop_asked) {
  SimResult& r = out.result;
  {
    std::unique_lock<std::mutex> lock(mu);
    const Clock::time_point limit = t0 + seconds(s.arrivals_end() + s.drain_s);
    auto ask = [&] {  // without the lock: the hook may take its time
      lock.unlock();
      stop_asked();
      lock.lock();
    };
    while (r.stopped.empty() && flow.ended() != flow.requests() && Clock::now() < limit) {
      done_cv.wait_until(lock, std::min(limit, Clock::now() + kWaitSlice));
      ask();
    }
    stop = true;
    for (auto& u : units)
      if (u) u->cv.notify_one();
    while (workers > 0) {
      done_cv.wait_for(lock, kWaitSlice);
      ask();
    }
  }
  for (auto& u : units)
    if (u && u->thread.joinable()) u->thread.join();
  r.end_time = now();
  out.failed = flow.failed();
  bg_stop = true;
  for (auto& t : bg_threads) t.join();
}

// Device busy time (the union of its units' busy time is not tracked: the largest), and per
// scenario model and op the median of its samples (NaN for an op never run at batch 1).
void summarize(const Scenario& s, const Plan& p, std::vector<std::vector<std::vector<double>>>& samples,
               ExecResult& out) {
  SimResult& r = out.result;
  r.domains.resize(p.domains);
  for (size_t u = 0; u < p.units.size(); ++u) {
    DomainStats& d = r.domains[p.units[u].domain];
    d.busy_seconds = std::max(d.busy_seconds, r.units[u].busy_seconds);
  }
  out.op_seconds.resize(s.models.size());
  for (size_t m = 0; m < s.models.size(); ++m) {
    out.op_seconds[m].assign(p.models[m].graph.size(), NAN);
    for (size_t i = 0; i < samples[m].size(); ++i) {
      auto& v = samples[m][i];
      if (v.empty()) continue;
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      out.op_seconds[m][i] = v[v.size() / 2];
    }
  }
}

}  // namespace

void check_cpu_dtypes(const Scenario& s) {
  for (const ModelInstance& mi : s.models)
    if (model_uses_cpu(s, mi))
      if (std::string why = cpu_dtype_problem(mi.shape.dtype); !why.empty())
        mi.dtype_where.fail("model '" + mi.name + "': dtype " + to_string(mi.shape.dtype) + ": " + why);
}

ExecResult execute(const Scenario& s, const Plan& p, const ExecuteOptions& o) {
  check_runnable(s, p, o);
  ExecResult out;
  SimResult& r = out.result;
  r.horizon = s.arrivals_end();
  StopAsker stop_asked(o, r.stopped);

  Units units = make_units(p);
  bind_units(s, p, units, out);
  check_cpu_dtypes(s);  // before any work starts
  prepare_segments(s, p, o, units, out);
  warm_up(s, p, o, units, stop_asked, out);

  TimedRun run(s, p, units, out, o.trace_limit);
  run.start_workers();
  run.start_background_load();
  const std::vector<std::pair<double, int>> arrivals = run.schedule();
  if (o.arm) run.start_arms(arrivals);
  run.issue_arrivals(arrivals, o, stop_asked);
  if (!r.stopped.empty()) r.horizon = std::min(r.horizon, run.now());  // as a simulation stopped early
  run.drain(stop_asked);
  // Each arm's last chunk in: the arms run their last chunks out (no dry tick can follow);
  // else they stop at the run's end, as the control analysis (reports/control.h) counts a
  // chunk followed by unfinished ones dry until then.
  double tail = 0;
  bool last_in = r.stopped.empty();
  for (const auto& a : run.arms) {
    auto last = std::find_if(r.requests.rbegin(), r.requests.rend(), [&](const RequestRecord& q) { return q.stream == a.stream; });
    last_in &= last != r.requests.rend() && last->finished() && !last->failed;
    tail = std::max(tail, a.actuation_s + (a.arm.chunk() + 1) / a.arm.hz());
  }
  if (!last_in) tail = 0;
  run.finish_arms(std::max(r.end_time, r.horizon), tail);
  summarize(s, p, run.samples, out);
  return out;
}

}  // namespace vlasim
