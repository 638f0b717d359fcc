#include "sim/engine/planner.h"

#include "sim/engine/lockstep.h"

#include "scheduler/partition.h"
#include "scheduler/policy.h"
#include "sim/costs/cost_models.h"

#include <algorithm>
#include <functional>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

namespace vlasim {

namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

void add_units(const Scenario& s, Plan& p) {
  for (size_t d = 0; d < s.devices.size(); ++d) {
    const DeviceInstance& dev = s.devices[d];
    int domain = p.domains++;
    p.domain_names.push_back(dev.name);
    if (dev.spec.type == DeviceType::Gpu) {
      p.domain_resources.push_back(2);  // SMs, memory bandwidth
      for (size_t u = 0; u < dev.units.size(); ++u) {
        UnitInfo ui;
        ui.name = dev.name + "." + dev.units[u].name;
        ui.device = static_cast<int>(d);
        ui.unit = static_cast<int>(u);
        ui.type = DeviceType::Gpu;
        ui.domain = domain;
        ui.compute_resource = 0;
        ui.memory_resource = 1;
        ui.compute_share = dev.units[u].sm_fraction;
        ui.memory_share = 1;
        ui.batch = dev.units[u].batch;
        ui.priority = dev.units[u].priority;
        const bool lockstep = dev.lockstep.on() && (static_cast<int>(u) == dev.lockstep.first ||
                                                     static_cast<int>(u) == dev.lockstep.second);
        ui.partition = !lockstep && dev.units[u].sm_fraction < 1;
        p.units.push_back(ui);
      }
    } else {
      int groups = static_cast<int>(dev.units.size());
      p.domain_resources.push_back(groups + dev.spec.numa_nodes);  // each group's cores, each node's DRAM
      for (int u = 0; u < groups; ++u) {
        UnitInfo ui;
        ui.name = dev.name + "." + dev.units[u].name;
        ui.device = static_cast<int>(d);
        ui.unit = u;
        ui.type = DeviceType::Cpu;
        ui.domain = domain;
        ui.compute_resource = u;
        ui.memory_resource = groups + dev.units[u].node;
        ui.compute_share = 1;
        ui.memory_share = unit_bandwidth(dev, dev.units[u]) / dev.spec.mem_bw;
        ui.batch = dev.units[u].batch;
        p.units.push_back(ui);
      }
    }
  }
  for (size_t l = 0; l < s.links.size(); ++l) {
    for (int dir = 0; dir < 2; ++dir) {
      UnitInfo ui;
      ui.name = s.links[l].name + (dir == 0 ? ".h2d" : ".d2h");
      ui.link = static_cast<int>(l);
      ui.unit = dir;
      ui.type = DeviceType::Link;
      ui.domain = p.domains++;
      p.domain_names.push_back(ui.name);
      p.domain_resources.push_back(1);
      ui.compute_resource = 0;  // a link has one resource: its bandwidth
      ui.memory_resource = 0;
      p.units.push_back(ui);
    }
  }
}

// Each GPU's sharing model (ConfigError at its `gpu_sharing:` for an unknown name or a bad
// parameter), its streams' processes, and the SMs its streams without a partition share
// (ConfigError at its streams when partitions leave them none).
void plan_gpu_sharing(const Scenario& s, Plan& p) {
  p.sharing.assign(s.devices.size(), GpuSharingModel{});
  p.shared_sms.assign(s.devices.size(), 0);
  for (size_t d = 0; d < s.devices.size(); ++d) {
    const DeviceInstance& dev = s.devices[d];
    if (dev.spec.type != DeviceType::Gpu) continue;
    p.sharing[d] = *gpu_sharing_models().make(dev.sharing, dev.sharing_params, dev.sharing_where);
    // Processes: a stream's `process:`; else its own when a `handoff: host` model (stages as
    // separate processes) runs a stage on it; else the device's one process "".
    std::vector<std::string> names;
    int partitions = 0;
    bool shared = false;
    for (UnitInfo& ui : p.units) {
      if (ui.device != static_cast<int>(d)) continue;
      const UnitDecl& u = dev.units[static_cast<size_t>(ui.unit)];
      std::string name = u.process;
      if (name.empty())
        for (const ModelInstance& mi : s.models)
          if (mi.handoff_host)
            for (const PlacementRule& r : mi.placement)
              if (r.device == dev.name && (r.unit == u.name || (r.unit.empty() && ui.unit == 0)))
                name = "\x01" + u.name;  // a process of its own (no declared name can clash)
      auto it = std::find(names.begin(), names.end(), name);
      ui.process = static_cast<int>(it - names.begin());
      if (it == names.end()) names.push_back(name);
      if (ui.partition) partitions += stream_sms(dev, u);
      else if (!(dev.lockstep.on() && (ui.unit == dev.lockstep.first || ui.unit == dev.lockstep.second)))
        shared = true;
    }
    p.shared_sms[d] = dev.spec.sms - partitions;
    if (p.sharing[d].kernel_level && partitions > 0 && (p.shared_sms[d] < (shared ? 1 : 0)))
      dev.sharing_where.fail("the SM limits of " + dev.name + "'s streams (green contexts, each its SMs alone under "
                             "gpu_sharing " + dev.sharing + ") take " + std::to_string(partitions) + " SMs; " +
                             dev.spec.name + " has " + std::to_string(dev.spec.sms) +
                             (shared ? " and a stream without a limit needs at least one" : ""));
  }
}

int unit_index(const Plan& p, int device, const std::string& unit_name, const Scenario& s) {
  const DeviceInstance& dev = s.devices[device];
  int u = 0;
  if (!unit_name.empty())
    for (size_t i = 0; i < dev.units.size(); ++i)
      if (dev.units[i].name == unit_name) u = static_cast<int>(i);
  for (size_t i = 0; i < p.units.size(); ++i)
    if (p.units[i].device == device && p.units[i].unit == u) return static_cast<int>(i);
  return -1;
}

// The unit each op runs on. Ops outside blocks take the block of the nearest block op before
// them in the same stage (or block 0 before any), so a block range carries its stem and tail.
std::vector<int> assign_units(const OpGraph& g, const ModelInstance& mi, const Scenario& s,
                              const Plan& p, const std::vector<PlacementRule>& placement) {
  std::vector<int> out(g.size(), -1);
  std::map<Stage, int> last_block;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(static_cast<int>(i));
    int block = op.block;
    if (block < 0) block = last_block.count(op.stage) ? last_block[op.stage] : 0;
    else last_block[op.stage] = block;
    const PlacementRule* match = nullptr;
    for (const auto& r : placement)
      if (r.stage == op.stage &&
          (r.first_block < 0 || (block >= r.first_block && block <= r.last_block)))
        match = &r;
    if (!match) {
      mi.where.fail("model '" + mi.name + "' has no placement for " + to_string(op.stage) +
                    (op.block >= 0 ? " block " + std::to_string(op.block) : std::string()) +
                    " (op " + op.name + ")");
    }
    out[i] = unit_index(p, s.device_index(match->device), match->unit, s);
  }
  // A block range that names blocks the model does not have is a mistake.
  for (const auto& r : placement)
    if (r.first_block >= 0 && r.last_block >= g.blocks(r.stage))
      r.where.fail(std::string("stage ") + to_string(r.stage) + " of model '" + mi.name +
                   "' has " + std::to_string(g.blocks(r.stage)) + " blocks (0.." +
                   std::to_string(g.blocks(r.stage) - 1) + ")");
  return out;
}

// Whether op `id` of g is a denoising step of the action expert that per-step batching
// (per_step) makes a segment of its own.
bool stepwise_op(const OpGraph& g, bool per_step, int id) {
  const Op& op = g.op(id);
  return per_step && op.step >= 0 && op.stage == Stage::Action;
}

// The link that joins GPU `device` to its host: where an inter-process hand-off is staged;
// -1 when none.
int host_link(const Scenario& s, int device) {
  const std::string& name = s.devices[static_cast<size_t>(device)].name;
  for (size_t l = 0; l < s.links.size(); ++l) {
    const LinkInstance& li = s.links[l];
    const std::string& other = li.a == name ? li.b : li.b == name ? li.a : std::string();
    if (!other.empty() && s.devices[static_cast<size_t>(s.device_index(other))].spec.type == DeviceType::Cpu)
      return static_cast<int>(l);
  }
  return -1;
}

// Sets mp.fork (op fresh_from starts the fresh steps); ConfigError at the model's v_aefusion
// when the stale steps cannot run beside its VLM.
void set_fork(const Plan& p, const ModelInstance& mi, int fresh_from, ModelPlan& mp) {
  // The stale steps' segment: the one before the fresh steps' first op. It must follow the
  // VLM's last segment directly, on another unit of the same device (no transfer between).
  int fresh = -1;
  for (size_t k = 0; k < mp.segments.size() && fresh < 0; ++k)
    if (!mp.segments[k].transfer && mp.segments[k].ops.front() == fresh_from) fresh = static_cast<int>(k);
  const int f = fresh - 1;
  auto refuse = [&](const std::string& why) {
    mi.v_aefusion_where.fail("V-AEFusion on model '" + mi.name + "': " + why);
  };
  if (mi.zone_width > 0 || !mi.zone_name.empty()) refuse("a dynamic zone changes the plan per request; use one or the other");
  if (f < 1 || mp.segments[f].transfer || mp.segments[f - 1].transfer)
    refuse("its action expert must run on a stream or core group of its own on the device that runs its VLM "
           "(the stale steps start beside the VLM, reading features already there)");
  const UnitInfo& a = p.units[mp.segments[f - 1].unit];
  const UnitInfo& b = p.units[mp.segments[f].unit];
  if (a.device != b.device || mp.segments[f - 1].unit == mp.segments[f].unit)
    refuse("its action expert runs on " + b.name + " and its VLM on " + a.name +
           ": the stale steps need a stream or core group of their own on the VLM's device");
  for (int k = 0; k < f; ++k)
    if (mp.segments[k].unit == mp.segments[f].unit)
      refuse("an earlier stage runs on " + b.name + ", the unit of the stale steps");
  mp.fork = f;
}

// Sets each segment's kind (Segment::kind), which says what segments may run as one batch.
void set_step_kinds(bool per_step, ModelPlan& mp) {
  const OpGraph& g = mp.graph;
  auto stepwise = [&](int id) { return stepwise_op(g, per_step, id); };
  for (size_t k = 0; k < mp.segments.size(); ++k) {
    Segment& seg = mp.segments[k];
    seg.kind = static_cast<int>(k);
    if (seg.transfer || !stepwise(seg.ops.front())) continue;
    // A step batches with the first earlier step of the same ops on the same unit.
    for (size_t j = 0; j < k; ++j) {
      const Segment& o = mp.segments[j];
      if (o.transfer || o.unit != seg.unit || !stepwise(o.ops.front()) || o.ops.size() != seg.ops.size()) continue;
      bool same = true;
      for (size_t x = 0; same && x < o.ops.size(); ++x) {
        const Op &a = g.op(o.ops[x]), &b = g.op(seg.ops[x]);
        same = a.kind == b.kind && a.fn == b.fn && a.stage == b.stage && a.block == b.block &&
               a.flops == b.flops && a.bytes_read == b.bytes_read && a.bytes_written == b.bytes_written;
      }
      if (same) {
        seg.kind = o.kind;
        break;
      }
    }
  }
}

// Finishes mp's segments (times, resource use, run-to-run variation) and sums the plan's
// alone time and pipeline stages (the stale steps of a fork overlapping its VLM).
void finish_segments(const Scenario& s, const Plan& p, const CostModel& cost, ModelPlan& mp) {
  const OpGraph& g = mp.graph;
  int stages = 0, prev = -1;
  for (auto& seg : mp.segments) {
    if (!seg.transfer) {
      const UnitInfo& u = p.units[seg.unit];
      finish_segment(seg, mp.graph, mp.op_costs, p.unit_stack(s, u),
                     first_on_unit(mp, int(&seg - mp.segments.data())));
      const DeviceInstance& dev = s.devices[u.device];
      seg.variability = cost.service_variability(dev, dev.units[u.unit], g.op(seg.ops.front()).dtype);
    }
    mp.alone_seconds += seg.seconds;
    if (seg.unit != prev) ++stages;
    prev = seg.unit;
  }
  mp.pipeline_stages = stages;
  if (mp.fork >= 0) {
    // Alone, the stale steps run beside the VLM: the longer of the two, then the rest.
    double vlm = 0;
    for (int k = 0; k < mp.fork; ++k) vlm += mp.segments[static_cast<size_t>(k)].seconds;
    const double stale = mp.segments[static_cast<size_t>(mp.fork)].seconds;
    mp.alone_seconds -= std::min(vlm, stale);
    mp.segments[static_cast<size_t>(mp.fork)].label += ".stale";
  }
}

// The plan of model m with the given placement: graph, op units and costs, segments.
ModelPlan plan_model(const Scenario& s, const Plan& p, const CostModel& cost, const BatchPolicy& batching, int m,
                     OpGraph graph, int cut) {
  const ModelInstance& mi = s.models[m];
  ModelPlan mp;
  mp.model = m;
  mp.cut = mi.partition ? (cut >= 0 ? cut : mi.partition->cut()) : -1;
  mp.graph = std::move(graph);
  const OpGraph& g = mp.graph;
  mp.op_unit = assign_units(g, mi, s, p, placement_rules(s, m, g, cut));
  mp.op_costs.resize(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const UnitInfo& u = p.units[mp.op_unit[i]];
    const DeviceInstance& dev = s.devices[u.device];
    mp.op_costs[i] = cost.op_cost(g.op(static_cast<int>(i)), dev, dev.units[u.unit]);
  }

  // Segments: maximal runs of ops on one unit, with transfers where data changes device.
  std::vector<int> op_device(g.size());
  for (size_t i = 0; i < g.size(); ++i) op_device[i] = p.units[mp.op_unit[i]].device;
  // Bytes already moved to a device, per source op, so each tensor crosses once.
  std::set<std::pair<int, int>> moved;  // (source op, destination device)
  // Per-step batching: every denoising step of the action expert is a segment of its own.
  const bool per_step = batching.per_step();
  auto stepwise = [&](int id) { return stepwise_op(g, per_step, id); };
  if (per_step && mi.v_aefusion > 0)
    mi.v_aefusion_where.fail("V-AEFusion on model '" + mi.name +
                             "' needs the action expert's steps in two segments; per-step batching (" +
                             s.batching.name + ") schedules them one by one");
  auto add_transfer = [&](int li, bool h2d, double bytes, const std::string& a, const std::string& b) {
    const LinkInstance& link = s.links[static_cast<size_t>(li)];
    Segment t;
    t.transfer = true;
    t.bytes = bytes;
    for (size_t k = 0; k < p.units.size(); ++k)
      if (p.units[k].link == li && p.units[k].unit == (h2d ? 0 : 1)) t.unit = static_cast<int>(k);
    OpCost c = cost.transfer_cost(bytes, link, h2d);
    t.seconds = c.seconds;
    t.memory_frac = c.seconds > 0 ? c.memory_seconds / c.seconds : 0;
    t.label = std::string(h2d ? "h2d " : "d2h ") + a + "->" + b;
    mp.segments.push_back(t);
  };
  // V-AEFusion: the action expert's ops before its step mi.v_aefusion end a segment.
  int fresh_from = -1;
  if (mi.v_aefusion > 0)
    for (size_t i = 0; i < g.size() && fresh_from < 0; ++i)
      if (g.op(static_cast<int>(i)).stage == Stage::Action && g.op(static_cast<int>(i)).step >= mi.v_aefusion)
        fresh_from = static_cast<int>(i);
  for (size_t i = 0; i < g.size(); ++i) {
    int unit = mp.op_unit[i];
    const bool new_step = stepwise(static_cast<int>(i)) &&
                          (i == 0 || !stepwise(static_cast<int>(i) - 1) || g.op(static_cast<int>(i) - 1).step != g.op(static_cast<int>(i)).step);
    if (mp.segments.empty() || mp.segments.back().transfer || mp.segments.back().unit != unit ||
        static_cast<int>(i) == fresh_from || new_step) {
      // Inputs this new segment reads from other devices travel first.
      std::map<int, double> incoming;  // source device -> bytes
      double handoff = 0;              // bytes from other units of this device, through the host
      for (size_t j = i; j < g.size() && mp.op_unit[j] == unit; ++j)
        for (int pred : g.preds(static_cast<int>(j))) {
          if (op_device[pred] != op_device[j] && moved.insert({pred, op_device[j]}).second)
            incoming[op_device[pred]] += g.edge_bytes(pred, static_cast<int>(j));
          if (mi.handoff_host && op_device[pred] == op_device[j] && mp.op_unit[pred] != unit &&
              moved.insert({pred, -1 - unit}).second)
            handoff += g.edge_bytes(pred, static_cast<int>(j));
        }
      if (handoff > 0) {
        // Separate processes: the producer's output goes to host memory and back.
        const int li = host_link(s, op_device[i]);
        const std::string& gpu = s.devices[static_cast<size_t>(op_device[i])].name;
        if (s.devices[static_cast<size_t>(op_device[i])].spec.type == DeviceType::Cpu)
          mi.handoff_where.fail("model '" + mi.name + "' hands its stages' data off through the host, but " + gpu +
                                " is a CPU: its core groups share host memory already; drop handoff: host");
        if (li < 0)
          mi.handoff_where.fail("model '" + mi.name + "' hands its stages' data off through the host, but " + gpu +
                                " has no link to a CPU; declare one under hardware.links");
        const LinkInstance& link = s.links[static_cast<size_t>(li)];
        const std::string& host = link.a == gpu ? link.b : link.a;
        add_transfer(li, false, handoff, gpu, host);
        add_transfer(li, true, handoff, host, gpu);
      }
      for (auto& [src, bytes] : incoming) {
        const std::string& a = s.devices[src].name;
        const std::string& b = s.devices[op_device[i]].name;
        const LinkInstance* link = s.link_between(a, b);
        if (!link)
          mi.where.fail("model '" + mi.name + "' moves data from " + a + " to " + b +
                        " but no link joins them; declare one under hardware.links");
        int li = static_cast<int>(link - s.links.data());
        // h2d: towards the GPU side (or from the link's first device to its second).
        bool h2d = s.devices[src].spec.type == DeviceType::Cpu ||
                   (s.devices[op_device[i]].spec.type != DeviceType::Cpu && link->a == a);
        add_transfer(li, h2d, bytes, a, b);
      }
      Segment seg;
      seg.unit = unit;
      if (new_step) seg.overhead = batching.step_overhead_seconds();
      mp.segments.push_back(seg);
    }
    mp.segments.back().ops.push_back(static_cast<int>(i));
  }
  if (fresh_from >= 0) set_fork(p, mi, fresh_from, mp);
  set_step_kinds(per_step, mp);
  finish_segments(s, p, cost, mp);
  return mp;
}

// The batched variants of plan `mp` (model m): one per size above 1 that `policy` may form on
// any unit the plan visits, each with the graph built for that many requests at once.
void add_batches(const Scenario& s, const Plan& p, const CostModel& cost, const BatchPolicy& policy,
                 ModelPlan& mp) {
  std::set<int> sizes;
  for (const Segment& seg : mp.segments)
    for (int b : policy.sizes(p.units[seg.unit].batch))
      if (b > 1) sizes.insert(b);
  const ModelInstance& mi = s.models[mp.model];
  mp.batched.reserve(sizes.size());  // no reallocation: a variant holds a whole graph
  for (const Segment& seg : mp.segments) {  // requests of the model's own batch, times the unit's
    const UnitInfo& u = p.units[static_cast<size_t>(seg.unit)];
    if (u.device >= 0 && static_cast<long long>(mi.shape.batch) * u.batch > kMaxBatch)
      s.devices[static_cast<size_t>(u.device)].units[static_cast<size_t>(u.unit)].batch_where.fail(
          "batch " + std::to_string(u.batch) + " on " + u.name + " times the batch of model '" + mi.name + "' (" +
          std::to_string(mi.shape.batch) + ") passes the largest graph batch, " + std::to_string(kMaxBatch));
  }
  for (int b : sizes) {
    RunShape shape = mi.shape;
    shape.batch = mi.shape.batch * b;
    OpGraph g;
    try {
      g = build_graph(mi.card, shape);
    } catch (const GraphTooLarge& e) {
      mi.where.fail("model '" + mi.name + "' at batch " + std::to_string(b) + ": " + e.what());
    }
    ModelPlan at = plan_model(s, p, cost, policy, mp.model, std::move(g), mp.cut);
    // The builder emits the same ops at every batch size, so the segments line up.
    bool same = at.segments.size() == mp.segments.size();
    for (size_t k = 0; same && k < at.segments.size(); ++k)
      same = at.segments[k].unit == mp.segments[k].unit && at.segments[k].ops == mp.segments[k].ops &&
             at.segments[k].transfer == mp.segments[k].transfer;
    if (!same)
      throw std::logic_error("make_plan: model '" + mi.name + "' at batch " + std::to_string(b) +
                             " splits into other segments than at batch 1");
    mp.batched.push_back(BatchVariant{b, std::move(at.graph), std::move(at.segments)});
  }
}

}  // namespace

namespace {
// Requests in flight of model m, given the pipeline stages of its plan.
using WindowFn = std::function<int(int model, int stages)>;

Plan make_plan_with(const Scenario& s, const CostModel& cost, const WindowFn& in_flight) {
  Plan p;
  check_stack_name(s.stack.name, s.stack.where);
  const ConfigNode& sp = s.stack.params.node();
  if (s.stack.name == "none" && sp.defined()) sp.fail("the stack 'none' takes no params");
  // auto makes an eager and a graph stack from the same params: only the keys both take.
  if (s.stack.name == "auto" && sp.defined()) sp.check_keys({"fit", "launch_us", "step_us"});
  if (s.stack.name == "auto") {
    p.stack = stack_registry().make("eager", s.stack.params, s.stack.where);
    p.stack_captured = stack_registry().make("graph", s.stack.params, s.stack.where);
  } else if (s.stack.name != "none") {
    p.stack = stack_registry().make(s.stack.name, s.stack.params, s.stack.where);
  }
  add_units(s, p);
  plan_gpu_sharing(s, p);
  p.memory.resize(s.devices.size());
  for (size_t d = 0; d < s.devices.size(); ++d) {
    p.memory[d].device = s.devices[d].name;
    p.memory[d].capacity = s.devices[d].spec.mem_bytes;
    p.memory[d].reserved = s.devices[d].reserved_bytes;
  }
  const std::unique_ptr<BatchPolicy> batching = scenario_batch_policy(s);
  for (size_t m = 0; m < s.models.size(); ++m) {
    const ModelInstance& mi = s.models[m];
    if (mi.dtype_pending)
      mi.dtype_where.fail("model '" + mi.name + "': dtype auto stands for this machine's native dtype, "
                          "which the program planning it did not resolve (resolve_auto_dtypes)");
    OpGraph g;
    try {
      g = build_graph(mi.card, mi.shape);
    } catch (const GraphTooLarge& e) {
      mi.where.fail("model '" + mi.name + "' (" + std::to_string(mi.shape.steps) + " steps, " +
                    std::to_string(mi.shape.views) + " views, chunk " + std::to_string(mi.shape.chunk) +
                    "): " + e.what());
    }
    p.models.push_back(plan_model(s, p, cost, *batching, static_cast<int>(m), std::move(g), -1));
  }
  // Dynamic zones: one more plan per candidate cut around the configured one.
  for (size_t m = 0; m < s.models.size(); ++m) {
    const ModelInstance& mi = s.models[m];
    if (mi.zone_name.empty()) continue;
    int blocks = p.models[m].graph.blocks(mi.partition->stage());
    int c = p.models[m].cut;
    std::vector<std::pair<int, int>> by_cut{{c, static_cast<int>(m)}};
    for (int k = std::max(0, c - mi.zone_width); k <= std::min(blocks, c + mi.zone_width); ++k) {
      if (k == c) continue;
      by_cut.push_back({k, static_cast<int>(p.models.size())});
      p.models.push_back(plan_model(s, p, cost, *batching, static_cast<int>(m), p.models[m].graph, k));
    }
    std::sort(by_cut.begin(), by_cut.end());
    for (auto [cut, index] : by_cut) p.models[m].variants.push_back(index);
    for (int index : p.models[m].variants) p.models[index].variants = p.models[m].variants;
  }
  // Batched variants of every plan, dynamic-zone ones included.
  for (ModelPlan& mp : p.models) add_batches(s, p, cost, *batching, mp);
  plan_locksteps(s, cost, p);

  // Memory per device: unique weights of every op a device may run (any variant), and the
  // largest KV cache and activation working set of any variant, times the requests in flight.
  std::vector<bool> device_used(s.devices.size(), false);
  for (size_t m = 0; m < s.models.size(); ++m) {
    int window = in_flight(static_cast<int>(m), p.models[m].pipeline_stages);
    std::vector<std::set<std::string>> seen(s.devices.size());
    std::vector<double> kv_peak(s.devices.size(), 0), act_peak(s.devices.size(), 0);
    for (const ModelPlan& mp : p.models) {
      if (mp.model != static_cast<int>(m)) continue;
      std::vector<double> kv(s.devices.size(), 0);
      const OpGraph& g = mp.graph;
      for (size_t i = 0; i < g.size(); ++i) {
        const Op& op = g.op(static_cast<int>(i));
        int d = p.units[mp.op_unit[i]].device;
        device_used[d] = true;
        if (!op.weight_id.empty() && seen[d].insert(op.weight_id).second) p.memory[d].weights += op.weight_bytes;
        if (op.kv_cache) kv[d] += op.kv_bytes;
        act_peak[d] = std::max(act_peak[d], std::max(0.0, op.bytes_read + op.bytes_written - op.weight_bytes - op.kv_bytes));
      }
      for (size_t d = 0; d < s.devices.size(); ++d) kv_peak[d] = std::max(kv_peak[d], kv[d]);
    }
    for (size_t d = 0; d < s.devices.size(); ++d) {
      p.memory[d].kv_cache += kv_peak[d] * window;
      p.memory[d].activations += act_peak[d] * window;
    }
  }
  for (size_t d = 0; d < s.devices.size(); ++d) {
    DeviceMemory& mem = p.memory[d];
    if (device_used[d] && s.devices[d].spec.type == DeviceType::Gpu)
      mem.runtime = s.devices[d].spec.context_bytes;
    if (mem.total() > mem.capacity) {
      // Point at the first model placed on this device.
      ConfigNode where = s.models.front().where;
      for (size_t m = 0; m < p.models.size(); ++m)
        for (int u : p.models[m].op_unit)
          if (p.units[u].device == static_cast<int>(d)) {
            where = s.models[m].where;
            goto found;
          }
    found:
      where.fail("placement does not fit on " + mem.device + " (" + s.devices[d].spec.name +
                 "): needs " + gb(mem.total()) + " (weights " + gb(mem.weights) + ", KV cache " +
                 gb(mem.kv_cache) + ", activations " + gb(mem.activations) + ", runtime " +
                 gb(mem.runtime) + ", reserved " + gb(mem.reserved) + ") but has " +
                 gb(mem.capacity) + ": over by " + gb(mem.total() - mem.capacity));
    }
  }
  return p;
}

}  // namespace

Plan make_plan(const Scenario& s, const CostModel& cost, const std::vector<int>& in_flight) {
  return make_plan_with(s, cost, [&](int m, int) { return in_flight.empty() ? 1 : in_flight[m]; });
}

Plan plan_scenario(const Scenario& s) {
  auto cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
  auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  Plan p = make_plan_with(s, *cost, [&](int, int stages) { return pipe->window(stages); });
  // A batch larger than the requests of a model that may be in flight could never fill.
  for (const ModelPlan& mp : p.models) {  // every plan, dynamic-zone variants included
    const size_t m = static_cast<size_t>(mp.model);
    const int window = pipe->window(p.models[m].pipeline_stages);
    for (const Segment& seg : mp.segments) {
      const UnitInfo& u = p.units[static_cast<size_t>(seg.unit)];
      if (u.batch <= window || u.device < 0) continue;
      s.devices[static_cast<size_t>(u.device)].units[static_cast<size_t>(u.unit)].batch_where.fail(
          "batch " + std::to_string(u.batch) + " on " + u.name + " is more than the " + std::to_string(window) +
          " request(s) of model '" + s.models[m].name + "' the pipeline policy '" + s.pipeline.name +
          "' lets in flight, so a batch could never fill; raise the pipeline's depth "
          "(policies.pipeline: {name: async, params: {depth: N}}) or lower the batch");
    }
  }
  return p;
}

double bottleneck_seconds(const Plan& p, int m) {
  std::map<int, double> busy;
  for (const Segment& seg : p.models[m].segments) busy[seg.unit] += seg.seconds;
  double worst = 0;
  for (const auto& [unit, sec] : busy) worst = std::max(worst, sec);
  return worst;
}

void resolve_stream_loads(Scenario& s, const Plan& p) {
  auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  for (StreamDecl& sd : s.streams) {
    if (!sd.rate_pending) continue;
    const ModelPlan& mp = p.models[sd.model];
    const bool overlap = pipe->window(mp.pipeline_stages) > 1;
    const double per_request = overlap ? bottleneck_seconds(p, sd.model) : mp.alone_seconds;
    if (!(per_request > 0))
      sd.where.required("load").fail("the plan gives model '" + s.models[sd.model].name +
                                     "' no time, so a load cannot become a rate; give rate_hz");
    sd.rate_hz = sd.load / per_request;
    sd.rate_pending = false;
    if (sd.jitter_frac > 0) sd.jitter_s = sd.jitter_frac / sd.rate_hz;
    if (sd.jitter_s * sd.rate_hz >= 0.5)
      sd.where.required("jitter_ms").fail("jitter must be under half the period (" +
                                          std::to_string(1e3 / sd.rate_hz) + " ms at this load)");
    if (sd.duration_s * sd.rate_hz < 1)
      sd.where.required("duration_s").fail("shorter than one period (" + std::to_string(1 / sd.rate_hz) +
                                           " s at this load): the stream would issue no request");
    if (const double tick = clock_tick_s(s.arrivals_end() + s.drain_s); 1 / sd.rate_hz < tick) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "a period of %g s at this load is below the simulator's clock tick of %g s", 1 / sd.rate_hz, tick);
      sd.where.required("load").fail(std::string(buf) + ": arrivals would fall on the same tick; lower the load");
    }
  }
}

}  // namespace vlasim
