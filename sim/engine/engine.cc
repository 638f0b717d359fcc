#include "sim/engine/engine.h"

#include "sim/engine/engine_modules.h"
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
#include <functional>
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

using engine_detail::Calendar;
using engine_detail::Domain;
using engine_detail::Job;
using engine_detail::TimeScale;
using engine_detail::Workload;
using engine_detail::Background;

double now_s() { return sc_core::sc_time_stamp().to_seconds(); }

// A factor drawn from the distribution with quantiles q (at probabilities 0, 1/(n-1), ..., 1;
// linear between them) by inverse transform of a uniform draw from rng.
double draw_factor(const std::vector<double>& q, std::mt19937_64& rng) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
  const double x = u * static_cast<double>(q.size() - 1);
  const size_t i = static_cast<size_t>(x);
  return q[i] + (x - static_cast<double>(i)) * (q[std::min(i + 1, q.size() - 1)] - q[i]);
}

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
      const KernelShape shape = kernel_shape(op, dev.spec, sms);
      KernelSpec k;
      k.seconds = c.seconds;
      k.sms = shape.width(sms);
      k.memory = std::min(1.0, c.memory_seconds / c.seconds);
      k.compute = std::min(1.0, c.compute_seconds / c.seconds);
      k.waves = shape.waves(sms);
      k.tail_sms = shape.tail_sms(sms);
      // Activations that fit in the half of L2 the cost models grant a kernel alone, charged
      // there at the roofline's default fraction (0.3) of their DRAM time: cold, at all of it.
      const double fixed = op.weight_bytes + op.kv_bytes;
      const double act = std::max(0.0, op.bytes_read + op.bytes_written - fixed);
      if (op.kind != OpKind::Embedding && act > 0 && act <= dev.spec.l2_bytes / 2) {
        k.l2_bytes = act;
        k.memory_cold = std::min(1.0, k.memory * (fixed + act) / (fixed + 0.3 * act));
      }
      t.add(k);
    }
  }
  if (t.kernels.empty()) t.add(KernelSpec{std::max(seg.seconds, 1e-9), pool_sms, seg.memory_frac});
  return t;
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

namespace {

// A CPU segment's slowdown with the rest of its node busy and whether it was measured, by
// (plan model, segment).
using CorunCache = std::map<std::pair<int, int>, std::pair<double, bool>>;

// Starts work item `w` on free unit `unit` as a job in its device's sharing domain: its alone
// time (times a draw of its run-to-run variation from rng), host delay and resource use, and
// on a CPU with a loaded bandwidth or measured co-runs its co-run slowdown (kept in corun_cache).
void start_job(const Scenario& s, const Plan& plan, std::vector<std::unique_ptr<Domain>>& domains,
               std::mt19937_64& rng, CorunCache& corun_cache, int unit, const WorkItem& w) {
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
}

// What the GPUs shared as their hardware schedules them keep for a run: the cost model their
// segments' kernels are costed with, the kernel tables costed so far, and each unit's SM pool.
struct KernelSharing {
  std::unique_ptr<CostModel> cost;
  std::map<std::tuple<int, int, int, int, int>, KernelTable> tables;
  std::vector<int> unit_pool;
  std::vector<char> unit_lends;  // its pool lends its SMs (a lockstep's first stream, give_back)
};

// Gives each GPU shared `gpu_sharing: blocks` by more than one stream a block scheduler in its
// domain. `kernels` holds what the schedulers use as the run goes, so it must outlive the run.
void use_block_schedulers(const Scenario& s, const Plan& plan, std::vector<std::unique_ptr<Domain>>& domains,
                          KernelSharing& kernels) {
  kernels.unit_pool.assign(plan.units.size(), 0);
  kernels.unit_lends.assign(plan.units.size(), 0);
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
    o.effects = plan.sharing[d].effects;
    o.saturating_sms = dev.spec.kernels.saturating_sms;
    o.l2_bytes = dev.spec.l2_bytes;
    o.time_slice_s = plan.sharing[d].time_slice_s >= 0 ? plan.sharing[d].time_slice_s : dev.spec.time_slice_s;
    o.context_switch_s =
        plan.sharing[d].context_switch_s >= 0 ? plan.sharing[d].context_switch_s : dev.spec.context_switch_s;
    o.tables = [&s, &plan, &kernels](const std::array<int, 5>& key) -> const KernelTable* {
      const auto k = std::make_tuple(key[0], key[1], key[2], key[3], key[4]);
      auto it = kernels.tables.find(k);
      if (it != kernels.tables.end()) return &it->second;
      if (!kernels.cost) kernels.cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
      WorkItem w;
      w.plan = key[0];
      w.segment = key[1];
      w.batch = key[2];
      w.sms = key[3];
      return &kernels.tables.emplace(k, segment_kernels(s, plan, *kernels.cost, w, key[4])).first->second;
    };
    auto gpu = std::make_unique<BlockScheduler>(o);
    gpu->set_pool_sms(0, std::max(1, plan.shared_sms[d]));
    int domain = -1;
    for (size_t u = 0; u < plan.units.size(); ++u) {
      const UnitInfo& ui = plan.units[u];
      if (ui.device != static_cast<int>(d)) continue;
      domain = ui.domain;
      const bool lockstep = dev.lockstep.on() && (ui.unit == dev.lockstep.first || ui.unit == dev.lockstep.second);
      // give_back: a lockstep limits its first stream only; its second shares the rest.
      const bool give_back = lockstep && plan.sharing[d].effects.give_back;
      if (give_back && ui.unit == dev.lockstep.first) {
        kernels.unit_pool[u] = gpu->add_pool(stream_sms(dev, dev.units[static_cast<size_t>(ui.unit)]), true);
        kernels.unit_lends[u] = 1;
      }
      else if (ui.partition || (lockstep && !give_back))
        kernels.unit_pool[u] = gpu->add_pool(stream_sms(dev, dev.units[static_cast<size_t>(ui.unit)]));
    }
    if (domain < 0) continue;
    BlockScheduler* sched = gpu.get();
    domains[static_cast<size_t>(domain)]->use_blocks(std::move(gpu), [&s, &plan, &kernels, sched, d](const Job& j) {
      const UnitInfo& ui = plan.units[static_cast<size_t>(j.unit)];
      const DeviceInstance& dv = s.devices[d];
      const UnitDecl& decl = dv.units[static_cast<size_t>(ui.unit)];
      BlockScheduler::JobSpec sp;
      sp.pool = kernels.unit_pool[static_cast<size_t>(j.unit)];
      // A lockstep stream's partition is the split its lockstep gave it; a batch its lockstep
      // runs alone on the whole GPU has no limit, and shares the SMs as unlimited streams do.
      const int own = j.item.sms > 0 ? j.item.sms : stream_sms(dv, decl);
      if (kernels.unit_lends[static_cast<size_t>(j.unit)] && own >= dv.spec.sms) sp.pool = 0;
      if (sp.pool > 0) sched->set_pool_sms(sp.pool, own);
      const double pool_sms = sp.pool > 0 ? own : std::max(1, plan.shared_sms[d]);
      sp.process = ui.process;
      sp.priority = ui.priority;
      sp.seconds = j.remaining;
      sp.delay = j.delay;
      sp.usage_compute = j.usage_compute;
      sp.usage_memory = j.usage_memory;
      sp.key = {j.item.plan, j.item.segment, j.item.batch, j.item.sms, static_cast<int>(pool_sms)};
      // A lockstep's second stream under give_back, costed on the SMs its lockstep left it,
      // runs faster on the whole GPU once the first stream's batch ends.
      if (sp.pool == 0 && j.item.sms > 0 && j.item.sms < dv.spec.sms && plan.sharing[d].effects.give_back) {
        const ModelPlan& mp = plan.models[static_cast<size_t>(j.item.plan)];
        const Segment& own_seg = mp.segment_at(j.item.segment, j.item.batch, j.item.sms);
        const Segment& wide = mp.segment_at(j.item.segment, j.item.batch, dv.spec.sms);
        const double a = own_seg.seconds - own_seg.overhead, b = wide.seconds - wide.overhead;
        if (a > 0 && b > 0 && a > b) {
          sp.sms = j.item.sms;
          sp.wide_sms = dv.spec.sms;
          sp.wide_speedup = a / b;
        }
      }
      return sp;
    });
  }
}

// Runs SystemC until `limit` seconds: in slices, reporting progress after each, when the
// options report progress or may ask for a stop; in one go otherwise. A halted calendar or a
// stop asked for (`ask`) ends the run early, cutting r.horizon to the time it got to.
void run_systemc(double limit, const SimOptions& options, const Calendar& calendar, const RequestFlow& flow,
                 const std::function<bool()>& ask, SimResult& r) {
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
}

}  // namespace

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
  CorunCache corun_cache;
  // A free unit starts its item as a job in its device's sharing domain.
  RequestFlow flow(s, plan, r, options.trace_limit, [&](int unit, const WorkItem& w) {
    start_job(s, plan, domains, rng, corun_cache, unit, w);
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
  KernelSharing kernels;
  use_block_schedulers(s, plan, domains, kernels);
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
  run_systemc(limit, options, calendar, flow, ask, r);
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
