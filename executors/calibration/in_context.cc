// In-context calibration (calibrate.h calibrate_in_context): each scenario run through the
// real runtime one request at a time, its batched segments and its co-run pass, folded into
// a device profile.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "executors/calibration/calibrate.h"
#include "executors/calibration/calibrate_internal.h"
#include "executors/runtime/runtime.h"
#include "sim/costs/cost_models.h"
#include "sim/engine/planner.h"

namespace vlasim {

namespace {

using calib::CorunSamples;
using calib::DispatchFit;
using calib::DispatchSample;
using calib::Slot;
using calib::TimedRequests;
using calib::timed_requests;
using calib::quantile;

// Quantiles kept of the run-to-run variation (every percentile), and the segment runs a
// section needs before they are kept.
constexpr int kServiceQuantiles = 101;
constexpr size_t kMinVariabilitySamples = 20;

// One (cores, dtype) section's in-context samples over every scenario.
struct SectionSamples {
  std::map<std::string, std::vector<double>> op;  // signature -> per-op-instance medians
  std::map<std::string, Op> example;              // signature -> an op with it
  std::vector<calib::DispatchSample> dispatch;    // per model run: its time beyond ops here,
                                                  // outside segment intervals left out
  double outside_s = 0;                           // time outside segment intervals
  std::vector<double> ratios;  // segment run time / that segment's median (alone requests)
};

// One model of one scenario run alone: its median latency and its ops by section.
struct ModelRun {
  double latency_s = 0;
  double outside_s = 0;  // median over its alone requests of latency - the segments' run times
  std::vector<std::pair<std::pair<int, DType>, std::string>> ops;  // (section, signature)
};

// `s` made to run one request at a time: serial pipeline, no background load, one periodic
// stream per slot with no jitter, its first arrival at its offset, a new request each
// `period` seconds, `count` of them.
Scenario alone_runs(const Scenario& s, const std::vector<Slot>& slots, double period, int count) {
  Scenario c = s;
  c.pipeline = PolicyDecl{"serial", Params(), ConfigNode()};
  c.queue = PolicyDecl{"fifo", Params(), ConfigNode()};
  c.background.clear();
  c.streams.clear();
  for (size_t k = 0; k < slots.size(); ++k) {
    StreamDecl sd;
    sd.name = "calib." + s.models[static_cast<size_t>(slots[k].model)].name + "." + std::to_string(k);
    sd.model = slots[k].model;
    sd.rate_hz = 1 / period;
    sd.start_s = slots[k].offset;
    sd.duration_s = period * (count - 0.5);
    c.streams.push_back(sd);
  }
  // The run ends as soon as every request has; the drain only bounds one that does not, and
  // is wide because a real run cuts off what is still running at its end (a large model's
  // request on a few cores can take seconds), which would leave the probe with no latency.
  c.drain_s = 600 + 4 * period;
  return c;
}

// Per (cores, dtype) section: its in-context samples over every scenario.
using Sections = std::map<std::pair<int, DType>, SectionSamples>;
// Per section and op signature: the figure stored.
using Pooled = std::map<std::pair<int, DType>, std::map<std::string, double>>;

// Throws ConfigError at the first device of `s` whose catalog entry is not the profile's.
void check_profile_device(const DeviceProfile& prof, const Scenario& s) {
  for (const DeviceInstance& d : s.devices)
    if (d.spec.name != prof.catalog_device)
      throw ConfigError(s.file, d.line, 0, "hardware.devices",
                        "device '" + d.name + "' is catalog device '" + d.spec.name +
                            "' but the profile stands for '" + prof.catalog_device + "'");
}

// Probe: one request per model, far apart; each model's alone latency, the least of its
// finished requests (0.05 s when none finished).
std::vector<double> probe_alone_latencies(const Scenario& base, const Plan& plan, const ExecuteOptions& eo,
                                          size_t nm) {
  std::vector<Slot> slots(nm);
  std::vector<double> alone(nm, 0.05);
  for (size_t m = 0; m < nm; ++m) slots[m] = {static_cast<int>(m), 0.25 * static_cast<double>(m)};
  ExecResult r = execute(alone_runs(base, slots, 0.25 * static_cast<double>(nm), 2), plan, eo);
  for (size_t m = 0; m < nm; ++m) {
    std::vector<double> lat;
    for (const auto& q : r.result.requests)
      if (q.model == static_cast<int>(m) && q.finished()) lat.push_back(q.latency());
    if (!lat.empty()) alone[m] = *std::min_element(lat.begin(), lat.end());
  }
  return alone;
}

// Adds the runtime's op medians of model m's compute segments in `r` to their (unit cores,
// dtype) sections, and each op's (section, signature) to run.ops; returns their sum.
double record_op_medians(const Scenario& s, const Plan& plan, size_t m, const ExecResult& r, Sections& samples,
                         ModelRun& run) {
  const ModelPlan& mp = plan.models[m];
  const DType dtype = s.models[m].shape.dtype;
  double op_total = 0;
  for (const Segment& seg : mp.segments) {
    if (seg.transfer) continue;
    const UnitInfo& ui = plan.units[seg.unit];
    const int cores = s.devices[ui.device].units[ui.unit].cores;
    SectionSamples& ss = samples[{cores, dtype}];
    for (int id : seg.ops) {
      const double t = r.op_seconds[m][id];
      if (!std::isfinite(t)) continue;
      Op op = mp.graph.op(id);
      op.dtype = dtype;
      const std::string sig = op_signature(op);
      ss.op[sig].push_back(t);
      ss.example.emplace(sig, op);
      op_total += t;
      run.ops.push_back({{cores, dtype}, sig});
    }
  }
  return op_total;
}

// Model m's finished requests past the first `warmup` that ran alone: a request's latency
// counts only when nothing of another request ran between its arrival and its end (no
// queueing behind a slow neighbour when the machine is busy). Their latencies, sums of
// segment wall times and ids.
void alone_requests(const ExecResult& r, size_t m, int warmup, std::vector<double>& lat, std::vector<double>& wall,
                    std::set<uint64_t>& alone_ids) {
  std::map<uint64_t, double> seg_wall;
  for (const auto& e : r.result.trace)
    if (e.model == static_cast<int>(m)) seg_wall[e.request] += e.end - e.start;
  int k = 0;
  for (const auto& q : r.result.requests) {
    if (q.model != static_cast<int>(m) || !q.finished()) continue;
    if (k++ < warmup) continue;
    bool alone_run = true;
    for (const auto& e : r.result.trace)
      if (e.request != q.id && e.start < q.end && e.end > q.arrival) alone_run = false;
    if (!alone_run) continue;
    lat.push_back(q.latency());
    wall.push_back(seg_wall[q.id]);
    alone_ids.insert(q.id);
  }
}

// Run-to-run variation: each compute segment's runs in the alone requests over its median
// run, into its section's ratios.
void record_variability(const Scenario& s, const Plan& plan, size_t m, const ExecResult& r,
                        const std::set<uint64_t>& alone_ids, Sections& samples) {
  const ModelPlan& mp = plan.models[m];
  const DType dtype = s.models[m].shape.dtype;
  std::map<int, std::vector<double>> runs_of;  // segment index -> run seconds
  for (const auto& e : r.result.trace)
    if (e.plan == static_cast<int>(m) && alone_ids.count(e.request))
      runs_of[e.segment].push_back(e.end - e.start);
  for (auto& [si, d] : runs_of) {
    const Segment& seg = mp.segments[si];
    for (double& x : d) x -= seg.overhead;  // the engine's host time is the plan's, not the ops'
    if (seg.transfer) continue;
    std::sort(d.begin(), d.end());
    const double med = quantile(d, 0.5);

    if (!(med > 0)) continue;
    const UnitInfo& ui = plan.units[seg.unit];
    SectionSamples& ss = samples[{s.devices[ui.device].units[ui.unit].cores, dtype}];
    for (double x : d) ss.ratios.push_back(std::max(x, 1e-12) / med);
  }
}

// Model m's part of the timed run `r` (its first `warmup` requests left out of the latency
// figures): its op medians and run-to-run variation into `samples`, and, when a request ran
// alone, its median latency beyond the engine's host time into `runs` and its figures into `sum`.
void record_model(const Scenario& s, const Plan& plan, size_t m, const ExecResult& r, int warmup,
                  Sections& samples, std::vector<ModelRun>& runs, InContextSummary& sum) {
  const ModelPlan& mp = plan.models[m];
  // Sum of op medians per section, and the request's op total.
  ModelRun run;
  const double op_total = record_op_medians(s, plan, m, r, samples, run);
  std::vector<double> lat, wall;
  std::set<uint64_t> alone_ids;
  alone_requests(r, m, warmup, lat, wall, alone_ids);
  if (lat.empty()) return;
  record_variability(s, plan, m, r, alone_ids, samples);

  std::vector<double> outside(lat.size());
  for (size_t i = 0; i < lat.size(); ++i) outside[i] = std::max(0.0, lat[i] - wall[i]);
  std::sort(outside.begin(), outside.end());
  run.outside_s = quantile(outside, 0.5);
  std::sort(lat.begin(), lat.end());
  std::sort(wall.begin(), wall.end());
  const double med_lat = quantile(lat, 0.5);
  // The engine's per-step host time (Segment::overhead) is the plan's own; what is left
  // beyond the ops is dispatch.
  double engine_s = 0;
  for (const Segment& seg : mp.segments) engine_s += seg.overhead;
  run.latency_s = med_lat - engine_s;
  runs.push_back(std::move(run));
  sum.requests += static_cast<int>(lat.size());
  sum.segments += static_cast<int>(lat.size() * mp.segments.size());
  sum.op_seconds += op_total;
  sum.wall_seconds += quantile(wall, 0.5);
  sum.latency_seconds += med_lat;
}

// Batched segments (units with a batch size): the runs above are one request at a time,
// so each segment also runs at every batch size its unit may run, on an executor of the
// unit's cores: a warm-up run each, then rounds that run every batched segment once in
// turn (as in the scenario, where one segment's weights have left the caches by the time
// it runs again), `repetitions` rounds or about max_seconds; each op's median joins the
// section under its batched shape.
void measure_batched(const Scenario& s, const Plan& plan, const InContextOptions& o, Sections& samples) {
  struct BatchedRun {
    Executor* ex;
    int handle, cores;
    DType dtype;
    const OpGraph* graph;
    std::map<int, std::vector<double>> times;
  };
  const size_t nm = s.models.size();
  std::map<std::pair<int, DType>, std::unique_ptr<Executor>> executors;
  std::vector<BatchedRun> jobs;
  for (size_t m = 0; m < nm; ++m) {
    const ModelPlan& mp = plan.models[m];
    const DType dtype = s.models[m].shape.dtype;
    for (const BatchVariant& v : mp.batched)
      for (const Segment& seg : v.segments) {
        if (seg.transfer) continue;
        const UnitInfo& ui = plan.units[static_cast<size_t>(seg.unit)];
        if (ui.batch < v.size) continue;  // a size of another unit the model visits
        const int cores = s.devices[static_cast<size_t>(ui.device)].units[static_cast<size_t>(ui.unit)].cores;
        auto& ex = executors[{cores, dtype}];
        if (!ex) ex = make_calibration_executor(o.executor, cores, dtype);
        jobs.push_back({ex.get(), ex->prepare(v.graph, seg.ops), cores, dtype, &v.graph, {}});
      }
  }
  double round = 0;
  for (BatchedRun& j : jobs) {
    const auto t0 = std::chrono::steady_clock::now();
    j.ex->run(j.handle);
    round += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const int rounds = jobs.empty() ? 0 : std::max(1, std::min(o.repetitions, static_cast<int>(o.max_seconds / std::max(round, 1e-6))));
  for (int r = 0; r < rounds; ++r)
    for (BatchedRun& j : jobs) {
      const SegmentTiming& st = j.ex->run(j.handle);
      for (size_t i = 0; i < st.ops.size(); ++i) j.times[st.ops[i]].push_back(st.seconds[i]);
    }
  for (BatchedRun& j : jobs) {
    SectionSamples& ss = samples[{j.cores, j.dtype}];
    for (auto& [id, xs] : j.times) {
      std::sort(xs.begin(), xs.end());
      Op op = j.graph->op(id);
      op.dtype = j.dtype;
      const std::string sig = op_signature(op);
      ss.op[sig].push_back(quantile(xs, 0.5));
      ss.example.emplace(sig, op);
    }
  }
}

// Runs scenario `s` in context (probe, timed run, batched segments, and the co-run pass when
// prof.host is measured) on a plan made with `roofline`, adding its samples to `samples`,
// `runs` and `corun`; returns its summary.
InContextSummary run_in_context(const Scenario& s, const CostModel& roofline, const DeviceProfile& prof,
                                const InContextOptions& o, Sections& samples, std::vector<ModelRun>& runs,
                                std::map<std::string, CorunSamples>& corun) {
  check_profile_device(prof, s);
  Scenario base = s;
  base.pipeline = PolicyDecl{"serial", Params(), ConfigNode()};
  const Plan plan = make_plan(base, roofline, std::vector<int>(s.models.size(), 1));
  const size_t nm = s.models.size();  // each model's own plan (not dynamic-zone variants)
  ExecuteOptions eo;
  eo.executor = o.executor;
  eo.warmup = 2;
  eo.trace_limit = 1 << 20;

  const std::vector<double> alone = probe_alone_latencies(base, plan, eo, nm);
  const TimedRequests t = timed_requests(s, alone, o);
  ExecResult r = execute(alone_runs(base, t.slots, t.period, t.count + o.warmup), plan, eo);
  // The first o.warmup requests of each model are left out of the latency figures; the
  // runtime's op medians include them (it ran every segment eo.warmup times before its
  // clock started, and medians shrug off a few slow first runs).
  InContextSummary sum;
  sum.scenario = s.name;
  for (size_t m = 0; m < nm; ++m) record_model(s, plan, m, r, o.warmup, samples, runs, sum);
  measure_batched(s, plan, o, samples);
  if (o.corun_seconds > 0 && !prof.host.empty()) calib::corun_pass(s, plan, o.corun_seconds, o.executor, corun);
  return sum;
}

// Per signature: the mean over its occurrences (and scenarios) of the runtime's per-op
// medians, so that a request's predicted op total is the sum of its ops' medians even when
// occurrences differ (the first block after another stage runs colder than the rest).
Pooled pooled_op_means(const Sections& samples) {
  Pooled pooled;
  for (auto& [key, ss] : samples)
    for (auto& [sig, v] : ss.op) {
      double sum = 0;
      for (double x : v) sum += x;
      pooled[key][sig] = std::max(sum / static_cast<double>(v.size()), 1e-9);
    }
  return pooled;
}

// Dispatch overhead: what a median alone request takes beyond its ops' predicted times,
// split among its sections by op count; its part outside the segments' intervals (the
// request's median hand-off time, at most the whole overhead) summed per section, the rest
// a dispatch sample of the section (its ops there and their predicted time).
void attribute_overhead(const std::vector<ModelRun>& runs, Pooled& pooled, Sections& samples) {
  for (const ModelRun& run : runs) {
    double predicted = 0;
    std::map<std::pair<int, DType>, std::pair<double, double>> by_section;  // (ops, seconds)
    for (const auto& [key, sig] : run.ops) {
      const double t = pooled[key][sig];
      predicted += t;
      by_section[key].first += 1;
      by_section[key].second += t;
    }
    const double gap = run.latency_s - predicted;
    const double outside = std::clamp(run.outside_s, 0.0, std::max(gap, 0.0));
    for (const auto& [key, nt] : by_section) {
      const double part = nt.first / static_cast<double>(run.ops.size());
      samples[key].dispatch.push_back({nt.first, nt.second, (gap - outside) * part});
      samples[key].outside_s += outside * part;
    }
  }
}

// The profile's section for (cores, dtype); one is added when missing (its executor's device
// recorded, cores and dtype joining the profile's lists).
ProfileSection& section_for(DeviceProfile& prof, int cores, DType dtype, const std::string& executor) {
  ProfileSection* sec = nullptr;
  for (ProfileSection& x : prof.sections)
    if (x.threads == cores && x.dtype == dtype) sec = &x;
  if (!sec) {
    ProfileSection x;
    x.threads = cores;
    x.dtype = dtype;
    x.executor_device = make_calibration_executor(executor, cores, dtype)->device();
    prof.sections.push_back(std::move(x));
    sec = &prof.sections.back();
    if (std::find(prof.threads.begin(), prof.threads.end(), cores) == prof.threads.end())
      prof.threads.push_back(cores);
    if (std::find(prof.dtypes.begin(), prof.dtypes.end(), dtype) == prof.dtypes.end())
      prof.dtypes.push_back(dtype);
  }
  return *sec;
}

// Stores each section's samples in its profile section: per signature the pooled figure
// (source "in-context", replacing a grid or graph one), the dispatch overhead per op, the
// service-time quantiles when there are enough ratios; then refits it.
void fold_sections(DeviceProfile& prof, Sections& samples, Pooled& pooled, const InContextOptions& o) {
  for (auto& [key, ss] : samples) {
    const auto [cores, dtype] = key;
    ProfileSection* sec = &section_for(prof, cores, dtype, o.executor);
    for (auto& [sig, v] : ss.op) {
      std::sort(v.begin(), v.end());
      const Op& op = ss.example.at(sig);
      Measurement m;
      m.kind = op.kind;
      m.fn = op.fn;
      m.work = op_work(op);
      m.median_s = pooled[key][sig];
      m.spread = (quantile(v, 0.75) - quantile(v, 0.25)) / m.median_s;
      m.reps = static_cast<int>(v.size());
      m.source = "in-context";
      sec->table[sig] = m;
      sec->skipped.erase(sig);
    }
    const DispatchFit f = calib::fit_dispatch(ss.dispatch);
    double ops = 0;  // op runs the outside time is spread over
    for (const DispatchSample& d : ss.dispatch) ops += d.ops;
    sec->op_outside_s = ops > 0 ? std::max(0.0, ss.outside_s / ops) : 0;
    sec->op_overhead_s = sec->op_outside_s + f.per_op;
    sec->op_overhead_share = f.share;
    if (o.dispatch_details)
      o.dispatch_details->push_back(
          {cores, dtype, f.samples, f.two_terms, f.per_op, f.share, sec->op_outside_s, f.pooled_per_op});
    if (ss.ratios.size() >= kMinVariabilitySamples) {
      std::sort(ss.ratios.begin(), ss.ratios.end());
      sec->service_quantiles.clear();
      for (int i = 0; i < kServiceQuantiles; ++i)
        sec->service_quantiles.push_back(quantile(ss.ratios, i / double(kServiceQuantiles - 1)));
    }
    sec->refit();
  }
}

// Co-run slowdowns (corun_figure): at full overlap, in CPU time on 1-core groups; merged into
// prof.host when it is measured, and what lies behind each to o.corun_details.
void store_corun_figures(DeviceProfile& prof, const std::map<std::string, CorunSamples>& corun,
                         const InContextOptions& o) {
  std::vector<CorunSlowdown> measured;
  for (auto& [key, cs] : corun) {
    CorunDetail d;
    if (auto c = calib::corun_figure(key, cs, &d)) {
      measured.push_back(*c);
      if (o.corun_details) o.corun_details->push_back(d);
    }
  }
  if (!prof.host.empty()) prof.host.merge_corun(measured);
}

}  // namespace

std::vector<InContextSummary> calibrate_in_context(DeviceProfile& prof, const std::vector<Scenario>& scenarios,
                                                   const InContextOptions& o) {
  auto roofline = cost_models().make("roofline", Params(), ConfigNode());
  Sections samples;
  std::vector<ModelRun> runs;
  std::vector<InContextSummary> out;
  std::map<std::string, CorunSamples> corun;  // by corun_key, over every scenario
  int done = 0;
  for (const Scenario& s : scenarios) {
    if (o.should_stop && !o.should_stop().empty()) break;
    out.push_back(run_in_context(s, *roofline, prof, o, samples, runs, corun));
    if (o.progress) o.progress(++done, static_cast<int>(scenarios.size()), s.name);
  }
  Pooled pooled = pooled_op_means(samples);
  attribute_overhead(runs, pooled, samples);
  fold_sections(prof, samples, pooled, o);
  store_corun_figures(prof, corun, o);
  return out;
}

namespace calib {

DispatchFit fit_dispatch(const std::vector<DispatchSample>& samples) {
  // Weighted by 1 / op_seconds^2: in x = ops / op_seconds, y = gap / op_seconds the fit is
  // y = per_op x + share over samples of equal weight.
  std::vector<std::pair<double, double>> xy;
  double ops = 0, gap = 0;
  for (const DispatchSample& d : samples) {
    if (!(d.ops > 0) || !(d.op_seconds > 0)) continue;
    xy.push_back({d.ops / d.op_seconds, d.gap_seconds / d.op_seconds});
    ops += d.ops;
    gap += d.gap_seconds;
  }
  DispatchFit pooled;
  if (xy.empty()) return pooled;
  pooled.per_op = pooled.pooled_per_op = std::max(0.0, gap / ops);
  pooled.samples = static_cast<int>(xy.size());
  const double n = static_cast<double>(xy.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double mean_x = sx / n, var_x = std::max(0.0, sxx / n - mean_x * mean_x);
  if (xy.size() < 2 || std::sqrt(var_x) < kDispatchMinSpread * mean_x) return pooled;
  DispatchFit f = pooled;
  f.two_terms = true;
  f.per_op = (sxy / n - mean_x * sy / n) / var_x;
  f.share = sy / n - f.per_op * mean_x;
  if (f.per_op < 0) {  // the best fit with the time per op held at 0, and so on
    f.per_op = 0;
    f.share = std::max(0.0, sy / n);
  } else if (f.share < 0) {
    f.share = 0;
    f.per_op = std::max(0.0, sxy / sxx);
  } else if (f.share > 1) {  // more dispatch than op: held at 1, as a profile allows no more
    f.share = 1;
    f.per_op = std::max(0.0, (sxy - sx) / sxx);
  }
  return f;
}

// Most requests of one model a cycle: a model far faster than another is calibrated in runs
// of this many of its own requests at most.
constexpr int kMaxSlotsPerModel = 8;

TimedRequests timed_requests(const Scenario& s, const std::vector<double>& alone, const InContextOptions& o) {
  const size_t nm = s.models.size();
  std::vector<double> rate(nm, 0.0), phase(nm, 0.0);
  std::vector<char> phased(nm, 0);
  for (const StreamDecl& sd : s.streams) {  // a load: its share of the alone throughput just probed
    const size_t m = static_cast<size_t>(sd.model);
    const double r = sd.rate_pending ? sd.load / alone[m] : sd.rate_hz;
    if (!(r > 0)) continue;
    rate[m] += r;
    if (!phased[m]) {
      phased[m] = 1;
      phase[m] = std::fmod(sd.start_s * r, 1.0);
    }
  }
  double slowest = INFINITY, total_rate = 0;
  for (double r : rate)
    if (r > 0) slowest = std::min(slowest, r);
  std::vector<int> n(nm, 1);
  int requests = 0;
  for (size_t m = 0; m < nm; ++m) {
    if (rate[m] > 0) n[m] = static_cast<int>(std::clamp<long>(std::lround(rate[m] / slowest), 1, kMaxSlotsPerModel));
    total_rate += rate[m];
    requests += n[m];
  }
  TimedRequests t;
  // The scenario's time for a cycle's requests (0 without streams: the rooms decide).
  const double cycle = total_rate > 0 ? requests / total_rate : 0;
  std::vector<std::pair<double, int>> wanted;  // (time in the cycle, model)
  for (size_t m = 0; m < nm; ++m)
    for (int j = 0; j < n[m]; ++j) wanted.push_back({cycle * (phase[m] + j) / n[m], static_cast<int>(m)});
  std::sort(wanted.begin(), wanted.end());
  double free_at = 0;  // when the request before has had its room
  for (const auto& [want, m] : wanted) {
    const double at = t.slots.empty() ? 0 : std::max(want - wanted.front().first, free_at);
    t.slots.push_back({m, at});
    free_at = at + 1.5 * alone[static_cast<size_t>(m)] + 0.002;
  }
  t.period = std::max(cycle, free_at);
  t.count = o.repetitions;
  if (t.period * t.count > o.max_seconds)
    t.count = std::max(o.min_repetitions, static_cast<int>(o.max_seconds / t.period));
  return t;
}

}  // namespace calib

}  // namespace vlasim
