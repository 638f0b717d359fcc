#include "scenarios/scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "scenarios/workload.h"
#include "scheduler/partition.h"
#include "scheduler/policy.h"
#include "scheduler/zone.h"
#include "sim/measured/gpu_network.h"

namespace vlasim {
namespace fs = std::filesystem;

int stream_sms(const DeviceInstance& dev, const UnitDecl& unit) {
  return std::clamp(static_cast<int>(std::lround(unit.sm_fraction * dev.spec.sms)), 1, std::max(1, dev.spec.sms));
}

int Scenario::device_index(const std::string& name) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == name) return static_cast<int>(i);
  return -1;
}

const LinkInstance* Scenario::link_between(const std::string& a, const std::string& b) const {
  for (const auto& l : links)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return &l;
  return nullptr;
}

double Scenario::arrivals_end() const {
  double t = 0;
  for (const auto& s : streams) t = std::max(t, s.start_s + s.duration_s);
  return t;
}

namespace {

// A number as a user would write it (%g: 5, 0.25, 1e+08).
std::string fmt_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
std::string fmt_seconds(double v) { return fmt_number(v) + " s"; }

std::vector<std::string> device_names(const Scenario& s) {
  std::vector<std::string> out;
  for (const auto& d : s.devices) out.push_back(d.name);
  return out;
}

void check_name(const ConfigNode& n, const std::string& name) {
  if (name.empty()) n.fail("name must not be empty");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
      n.fail("name '" + name + "' may hold only letters, digits, '_' and '-'");
}

void parse_unit_batch(const ConfigNode& n, UnitDecl& u) {
  u.batch_where = n;
  if (!n.has("batch")) return;
  u.batch = static_cast<int>(n.get_count("batch", 1, 1, kMaxUnitBatch));
  u.batch_given = true;
  u.batch_where = n.required("batch");
}

std::vector<UnitDecl> parse_units(const ConfigNode& dn, DeviceInstance& d) {
  std::vector<UnitDecl> units;
  std::set<std::string> seen;
  if (d.spec.type == DeviceType::Gpu) {
    ConfigNode sn = dn.optional("streams");
    if (!sn.defined()) return {UnitDecl{"s0", 1.0, 0, 0, 0, 1, false, {}}};
    for (auto& s : sn.items()) {
      s.check_keys({"name", "sm_fraction", "sms", "batch", "process", "priority"});
      UnitDecl u;
      parse_unit_batch(s, u);
      if (s.has("process")) {
        u.process = s.required("process").as_string();
        check_name(s.required("process"), u.process);
      }
      if (s.has("priority")) {
        const long long pr = s.get_int("priority", 0);
        if (pr < -100 || pr > 100) s.required("priority").fail("must be from -100 to 100 (lower runs first, as CUDA's)");
        u.priority = static_cast<int>(pr);
      }
      u.name = s.required("name").as_string();
      check_name(s.required("name"), u.name);
      if (!seen.insert(u.name).second) s.required("name").fail("duplicate stream '" + u.name + "'");
      if (s.has("sms") && s.has("sm_fraction")) s.fail("give either sms or sm_fraction, not both");
      if (s.has("sms")) {
        long long sms = s.get_count("sms", 0, 1, d.spec.sms);
        if (sms % d.spec.sm_granularity != 0)
          s.required("sms").fail("SM partitions on " + d.spec.name + " come in multiples of " +
                                 std::to_string(d.spec.sm_granularity));
        u.sm_fraction = static_cast<double>(sms) / d.spec.sms;
      } else {
        u.sm_fraction = s.get_positive("sm_fraction", 1.0);
        if (u.sm_fraction > 1) s.required("sm_fraction").fail("must be at most 1");
        if (u.sm_fraction * d.spec.sms < 1)
          s.required("sm_fraction").fail("gives less than one of " + d.spec.name + "'s " +
                                         std::to_string(d.spec.sms) + " SMs; the least is " +
                                         fmt_number(1.0 / d.spec.sms));
      }
      units.push_back(u);
    }
    if (units.empty()) sn.fail("a GPU needs at least one stream");
    if (static_cast<int>(units.size()) > d.spec.max_streams)
      sn.fail("more streams than the device supports (" + std::to_string(d.spec.max_streams) + ")");
    return units;
  }
  // CPU core groups.
  int cores_per_node = d.spec.cores() / d.spec.numa_nodes;
  ConfigNode gn = dn.optional("core_groups");
  if (!gn.defined()) {
    // One group per NUMA node, all its cores.
    for (int n = 0; n < d.spec.numa_nodes; ++n)
      units.push_back(UnitDecl{"g" + std::to_string(n), 1.0, cores_per_node, n * cores_per_node, n, 1, false, {}});
    return units;
  }
  std::vector<int> next_core(d.spec.numa_nodes, 0);
  for (auto& g : gn.items()) {
    g.check_keys({"name", "cores", "node", "batch"});
    UnitDecl u;
    parse_unit_batch(g, u);
    u.name = g.required("name").as_string();
    check_name(g.required("name"), u.name);
    if (!seen.insert(u.name).second) g.required("name").fail("duplicate core group '" + u.name + "'");
    u.node = static_cast<int>(g.get_count("node", 0, 0, d.spec.numa_nodes - 1));
    u.cores = static_cast<int>(g.get_count("cores", 0, 1, cores_per_node));
    if (!g.has("cores")) g.required("cores");
    if (next_core[u.node] + u.cores > cores_per_node)
      g.required("cores").fail("core groups on node " + std::to_string(u.node) + " need " +
                               std::to_string(next_core[u.node] + u.cores) + " cores; the node has " +
                               std::to_string(cores_per_node));
    u.first_core = u.node * cores_per_node + next_core[u.node];
    next_core[u.node] += u.cores;
    units.push_back(u);
  }
  if (units.empty()) gn.fail("a CPU needs at least one core group");
  return units;
}

LockstepDecl parse_lockstep(const ConfigNode& n, const DeviceInstance& d) {
  n.check_keys({"streams", "lut", "guard"});
  LockstepDecl l;
  l.where = n;
  ConfigNode sn = n.required("streams");
  std::vector<ConfigNode> items = sn.items();
  if (items.size() != 2) sn.fail("a lockstep runs two streams: [the SM-limited one, the other]");
  int* slot[2] = {&l.first, &l.second};
  for (size_t i = 0; i < 2; ++i) {
    const std::string name = items[i].as_string();
    for (size_t u = 0; u < d.units.size(); ++u)
      if (d.units[u].name == name) *slot[i] = static_cast<int>(u);
    if (*slot[i] < 0) {
      std::vector<std::string> names;
      for (const UnitDecl& u : d.units) names.push_back(u.name);
      items[i].fail("device '" + d.name + "' has no stream '" + name + "'; valid names are: " + join_names(names));
    }
  }
  if (l.first == l.second) sn.fail("the two streams of a lockstep must differ");
  l.lut = n.get_string("lut", "auto");
  l.lut_where = n.has("lut") ? n.required("lut") : n;
  if (l.lut.empty()) l.lut_where.fail("give auto or the path of a table file (vlasim profile-lut writes one)");
  l.guard = n.get_bool("guard", true);
  return l;
}

PolicyDecl parse_policy(const ConfigNode& pol, const std::string& key, const std::string& fallback) {
  PolicyDecl d;
  ConfigNode n = pol.defined() ? pol.optional(key) : ConfigNode();
  d.where = n.defined() ? n : pol;
  if (!n.defined()) {
    d.name = fallback;
    return d;
  }
  if (n.is_scalar()) {
    d.name = n.as_string();
    return d;
  }
  n.check_keys({"name", "params"});
  d.name = n.required("name").as_string();
  d.where = n.required("name");
  d.params = Params(n.optional("params"));
  return d;
}

// A link's `profile: FILE` and `entry: NAME` (a network profile, sim/measured/gpu_network.h, as `vlasim
// import vidur-network` writes it): the entry's measured latency and bandwidth replace the
// catalog's (both directions; pageable copies at most as fast). FILE as written, or next to the
// scenario file, or relative to the current directory. Every entry is measured between two GPUs
// (Vidur's send_recv): a link with an end that is not a GPU is refused. A profile that cannot
// be read or is malformed is refused at the scenario's `profile:` key, its own error quoted.
void apply_network_profile(const ConfigNode& l, LinkInstance& li, const Scenario& s) {
  const ConfigNode pn = l.required("profile"), en = l.required("entry");
  fs::path p(pn.as_string());
  if (!p.is_absolute()) {
    const fs::path beside = fs::path(pn.file()).parent_path() / p;
    if (!pn.file().empty() && fs::exists(beside)) p = beside;
    else if (!fs::exists(p))
      pn.fail("network profile '" + p.string() + "' not found (looked next to the scenario and in the current "
              "directory); make one with vlasim import vidur-network");
  }
  const std::string name = en.as_string();
  std::vector<NetworkFit> fits;
  try {
    fits = load_network_profile(p.string());
  } catch (const ConfigError& e) {
    pn.fail(e.what());
  }
  std::vector<std::string> names;
  for (const NetworkFit& f : fits) {
    names.push_back(f.name);
    if (f.name != name) continue;
    if (f.collective != "send_recv")
      en.fail("'" + name + "' is a " + f.collective + " over " + std::to_string(f.gpus) +
              " GPUs; a link takes a send_recv entry (no scenario runs collectives)");
    for (const std::string& end : {li.a, li.b}) {
      const int d = s.device_index(end);
      if (d >= 0 && s.devices[size_t(d)].spec.type != DeviceType::Gpu)
        en.fail("'" + name + "' was measured between two GPUs, but this link's end '" + end + "' is a " +
                to_string(s.devices[size_t(d)].spec.type) + "; a measured entry replaces a GPU-to-GPU link only");
    }
    li.spec.latency_s = f.latency_s;
    li.spec.h2d_bw = li.spec.d2h_bw = f.bytes_per_s;
    li.spec.h2d_bw_pageable = std::min(li.spec.h2d_bw_pageable, f.bytes_per_s);
    li.spec.d2h_bw_pageable = std::min(li.spec.d2h_bw_pageable, f.bytes_per_s);
    li.spec.source = "measured: " + name + " of " + p.string() + " (" + f.source + ")";
    return;
  }
  en.fail("no entry '" + name + "' in " + p.string() + "; valid names are: " + join_names(names));
}

void parse_hardware(const ConfigNode& hw, const Catalog& catalog, Scenario& s) {
  hw.check_keys({"devices", "links"});
  for (auto& dn : hw.required("devices").items()) {
    dn.check_keys({"name", "catalog", "count", "isa", "graph_capture", "streams", "core_groups",
                   "reserved_gb", "lockstep", "gpu_sharing", "mps"});
    std::string base = dn.required("name").as_string();
    check_name(dn.required("name"), base);
    const DeviceSpec& spec = catalog.get(dn.required("catalog").as_string(), dn.required("catalog"));
    if (spec.type == DeviceType::Link)
      dn.required("catalog").fail("'" + spec.name + "' is a link; declare it under hardware.links");
    long long count = dn.get_count("count", 1, 1, 4096);
    for (long long i = 0; i < count; ++i) {
      DeviceInstance d;
      d.name = dn.has("count") ? base + std::to_string(i) : base;
      if (s.device_index(d.name) >= 0) dn.required("name").fail("duplicate device '" + d.name + "'");
      d.spec = spec;
      d.line = dn.line();
      d.reserved_bytes = dn.get_nonneg("reserved_gb", 0) * 1e9;
      if (d.reserved_bytes >= spec.mem_bytes)
        dn.required("reserved_gb").fail("reserves all of the device's memory");
      if (spec.type == DeviceType::Cpu) {
        if (dn.has("graph_capture")) dn.required("graph_capture").fail("only GPUs capture graphs");
        d.isa = dn.get_string("isa", spec.default_isa);
        if (!spec.isa.count(d.isa)) {
          std::vector<std::string> names;
          for (auto& [k, v] : spec.isa) names.push_back(k);
          dn.required("isa").fail("unknown isa '" + d.isa + "' for " + spec.name +
                                  "; valid names are: " + join_names(names));
        }
        d.spec.peak = spec.isa.at(d.isa);
        d.spec.eff = spec.isa_efficiency.at(d.isa);
        if (dn.has("streams")) dn.required("streams").fail("a CPU has core_groups, not streams");
        if (dn.has("gpu_sharing")) dn.required("gpu_sharing").fail("only GPUs take gpu_sharing (a CPU's core groups are disjoint)");
        if (dn.has("mps")) dn.required("mps").fail("only GPUs run MPS");
      } else {
        if (dn.has("isa")) dn.required("isa").fail("only CPUs take an isa");
        if (dn.has("core_groups")) dn.required("core_groups").fail("a GPU has streams, not core_groups");
        d.graph_capture = dn.get_bool("graph_capture", false);
        const PolicyDecl sharing = parse_policy(dn, "gpu_sharing", "blocks");
        d.sharing = sharing.name;
        d.sharing_params = sharing.params;
        d.sharing_where = sharing.where;
        d.mps = dn.get_bool("mps", false);
      }
      d.units = parse_units(dn, d);
      if (dn.has("lockstep")) {
        if (spec.type == DeviceType::Cpu)
          dn.required("lockstep").fail("locksteps split a GPU's SMs between two streams; a CPU's core groups "
                                       "are not re-split at run time");
        d.lockstep = parse_lockstep(dn.required("lockstep"), d);
      }
      s.devices.push_back(std::move(d));
    }
  }
  if (s.devices.empty()) hw.required("devices").fail("at least one device is needed");
  ConfigNode ln = hw.optional("links");
  if (!ln.defined()) return;
  for (auto& l : ln.items()) {
    l.check_keys({"name", "catalog", "between", "memory", "profile", "entry"});
    LinkInstance li;
    li.name = l.get_string("name", "");
    const DeviceSpec& spec = catalog.get(l.required("catalog").as_string(), l.required("catalog"));
    if (spec.type != DeviceType::Link)
      l.required("catalog").fail("'" + spec.name + "' is not a link");
    li.spec = spec;
    auto ends = l.required("between").as_strings();
    if (ends.size() != 2 || ends[0] == ends[1])
      l.required("between").fail("a link joins exactly two different devices");
    for (auto& e : ends)
      if (s.device_index(e) < 0)
        l.required("between").fail("unknown device '" + e + "'; valid names are: " +
                                   join_names(device_names(s)));
    li.a = ends[0];
    li.b = ends[1];
    if (li.name.empty()) li.name = li.a + "-" + li.b;
    if (s.link_between(li.a, li.b)) l.fail("devices " + li.a + " and " + li.b + " already have a link");
    std::string mem = l.get_string("memory", "pinned");
    if (mem != "pinned" && mem != "pageable")
      l.required("memory").fail("unknown memory kind '" + mem + "'; valid names are: pinned, pageable");
    li.pinned = mem == "pinned";
    if (l.has("profile") || l.has("entry")) apply_network_profile(l, li, s);
    li.line = l.line();
    s.links.push_back(li);
  }
}

// `dp_cache: {start, end, interval, keep}` of a model entry (models/builder.h DpCache); start
// and end default to 20% and 80% of the steps, the stable middle SYSTEMS.md names.
DpCache parse_dp_cache(const ConfigNode& d, int steps, const ModelCard& card) {
  if (!d.is_map()) d.fail("expected a map: {start, end, interval, keep}");
  d.check_keys({"start", "end", "interval", "keep"});
  DpCache dc;
  dc.start = static_cast<int>(d.get_count("start", steps / 5, 0, kMaxSteps));
  dc.end = static_cast<int>(d.get_count("end", (4 * steps + 4) / 5, 1, kMaxSteps));
  dc.interval = static_cast<int>(d.get_count("interval", 2, 2, kMaxSteps));
  dc.keep = static_cast<int>(d.get_count("keep", 1, 0, 10000));
  if (const DpCacheProblem p = dp_cache_problem(card, dc, steps); !p.why.empty())
    (!p.field.empty() && d.has(p.field) ? d.required(p.field) : d).fail(p.why);
  return dc;
}

// `passes: [name, ...]` of a model entry (models/passes/passes.h): every name a pass that applies
// to the card; `[]` is the unrewritten graph.
std::vector<std::string> parse_passes(const ConfigNode& p, const ModelCard& card, const RunShape& shape) {
  if (!p.is_sequence()) p.fail("expected a list of pass names, e.g. [qkv_fuse, rope_fold]");
  std::vector<std::string> names;
  for (const ConfigNode& i : p.items()) names.push_back(i.as_string());
  try {
    if (const PassesProblem e = passes_problem(card, names, shape); e.index >= 0) p.items()[size_t(e.index)].fail(e.why);
  } catch (const GraphTooLarge& e) {
    p.fail(std::string("cannot check the passes: ") + e.what());
  }
  return names;
}

RunShape parse_shape(const ConfigNode& m, const ModelCard& card) {
  RunShape r = card.defaults;
  r.views = static_cast<int>(m.get_count("views", r.views, 1, kMaxViews));
  r.prompt = static_cast<int>(m.get_count("prompt", r.prompt, 0, kMaxPrompt));
  r.chunk = static_cast<int>(m.get_count("chunk", r.chunk, 1, kMaxChunk));
  r.steps = static_cast<int>(m.get_count("steps", r.steps, 1, kMaxSteps));
  r.batch = static_cast<int>(m.get_count("batch", r.batch, 1, kMaxBatch));
  if (m.has("dtype")) {
    ConfigNode d = m.required("dtype");
    if (d.as_string() != "auto" && !parse_dtype(d.as_string(), &r.dtype))
      d.fail("unknown dtype '" + d.as_string() + "'; valid names are: auto, fp32, bf16, fp16, int8");
  }
  return r;
}

}  // namespace

void resolve_device_ref(const Scenario& s, const std::string& ref, const ConfigNode& where,
                        std::string* device, std::string* unit) {
  std::string dev = ref, u;
  if (auto dot = dev.find('.'); dot != std::string::npos) {
    u = dev.substr(dot + 1);
    dev = dev.substr(0, dot);
  }
  int di = s.device_index(dev);
  if (di < 0) where.fail("unknown device '" + dev + "'; valid names are: " + join_names(device_names(s)));
  if (!u.empty()) {
    std::vector<std::string> units;
    for (auto& x : s.devices[di].units) units.push_back(x.name);
    if (std::find(units.begin(), units.end(), u) == units.end())
      where.fail("device '" + dev + "' has no unit '" + u + "'; valid names are: " + join_names(units));
  }
  *device = dev;
  *unit = u;
}

std::vector<PlacementRule> placement_rules(const Scenario& s, int m, const OpGraph& g, int cut) {
  const ModelInstance& mi = s.models[m];
  if (!mi.partition) return mi.placement;
  std::vector<PlacementSpec> specs;
  try {
    int blocks = g.blocks(mi.partition->stage());
    specs = mi.partition->rules_at(blocks, cut >= 0 ? cut : mi.partition->cut());
  } catch (const std::invalid_argument& e) {
    mi.partition_where.fail(std::string("model '") + mi.name + "': " + e.what());
  }
  std::vector<PlacementRule> out;
  for (const auto& sp : specs) {
    PlacementRule r;
    r.stage = sp.stage;
    r.first_block = sp.first_block;
    r.last_block = sp.last_block;
    resolve_device_ref(s, sp.device, mi.partition_where, &r.device, &r.unit);
    r.where = mi.partition_where;
    out.push_back(r);
  }
  return out;
}

namespace {

void parse_placement(const ConfigNode& pn, const Scenario& s, ModelInstance& mi) {
  if (!pn.defined()) {
    PlacementRule r;
    r.device = s.devices.front().name;
    r.where = mi.where;
    for (Stage st : {Stage::Vision, Stage::Prefix, Stage::Action, Stage::Decode, Stage::Head}) {
      r.stage = st;
      mi.placement.push_back(r);
    }
    return;
  }
  for (auto& p : pn.items()) {
    p.check_keys({"stage", "stages", "blocks", "device"});
    std::vector<std::string> stages;
    if (p.has("stage") == p.has("stages")) p.fail("give exactly one of stage or stages");
    stages = p.has("stage") ? p.required("stage").as_strings() : p.required("stages").as_strings();
    std::string dev, unit;
    resolve_device_ref(s, p.required("device").as_string(), p.required("device"), &dev, &unit);
    for (auto& st : stages) {
      PlacementRule r;
      if (!parse_stage(st, &r.stage))
        p.fail("unknown stage '" + st + "'; valid names are: vision, prefix, action, decode, head");
      r.device = dev;
      r.unit = unit;
      r.where = p;
      if (p.has("blocks")) {
        if (stages.size() != 1) p.required("blocks").fail("blocks go with a single stage");
        auto b = p.required("blocks").as_ints();
        if (b.size() != 2 || b[0] < 0 || b[1] < b[0])
          p.required("blocks").fail("expected [first, last] with 0 <= first <= last");
        r.first_block = static_cast<int>(b[0]);
        r.last_block = static_cast<int>(b[1]);
      }
      mi.placement.push_back(r);
    }
  }
}

// One entry of models: its card, shape and options; a name already in `model_names` is refused.
ModelInstance parse_model_instance(const ConfigNode& m, const std::string& cards_dir, const Scenario& s,
                                   std::set<std::string>& model_names) {
  m.check_keys({"name", "card", "views", "prompt", "chunk", "steps", "batch", "dtype",
                "placement", "partition", "dynamic_zone", "dp_cache", "passes", "v_aefusion", "handoff"});
  ModelInstance mi;
  mi.where = m;
  mi.card = find_card(cards_dir, m.required("card").as_string(), m.required("card"));
  mi.name = m.get_string("name", mi.card.name);
  check_name(m, mi.name);
  if (!model_names.insert(mi.name).second)
    m.fail("duplicate model instance '" + mi.name + "'; give each a distinct name");
  mi.shape = parse_shape(m, mi.card);
  if (m.has("dp_cache")) mi.shape.dp_cache = parse_dp_cache(m.required("dp_cache"), mi.shape.steps, mi.card);
  if (m.has("passes")) mi.shape.passes = parse_passes(m.required("passes"), mi.card, mi.shape);
  if (m.has("v_aefusion")) {
    const ConfigNode v = m.required("v_aefusion");
    if (!v.is_map()) v.fail("expected {stale_steps: K}: the first K denoising steps run on the previous frame's features");
    v.check_keys({"stale_steps"});
    mi.v_aefusion_where = v;
    mi.v_aefusion = static_cast<int>(v.get_count("stale_steps", 0, 1, 1000000));
    if (!v.has("stale_steps")) v.required("stale_steps");
    if (mi.v_aefusion >= mi.shape.steps)
      v.required("stale_steps").fail("stale_steps " + std::to_string(mi.v_aefusion) + " leaves no fresh step of the " +
                                     std::to_string(mi.shape.steps) + " the model runs; give fewer");
  }
  if (m.has("handoff")) {
    mi.handoff_where = m.required("handoff");
    const std::string h = mi.handoff_where.as_string();
    if (h != "host" && h != "device")
      mi.handoff_where.fail("unknown handoff '" + h + "'; valid values are: device (stages share the GPU's memory), "
                            "host (separate processes: data between stages goes through host memory)");
    mi.handoff_host = h == "host";
  }
  mi.dtype_where = m.has("dtype") ? m.required("dtype") : m;
  mi.dtype_auto = mi.dtype_pending = m.has("dtype") && m.required("dtype").as_string() == "auto";
  if (m.has("placement") && m.has("partition"))
    m.fail("give either placement or partition, not both");
  parse_placement(m.optional("placement"), s, mi);
  if (m.has("partition")) {
    PolicyDecl d = parse_policy(m, "partition", "");
    mi.partition = partition_policies().make(d.name, d.params, d.where);
    mi.partition_where = m.required("partition");
    // Check the devices it names now, where the error can point at them (block_split's
    // `first` and `second`; a policy written in Python may name its devices otherwise).
    for (const char* key : {"first", "second"}) {
      ConfigNode dn = d.params.node().is_map() ? d.params.node().optional(key) : ConfigNode();
      if (!dn.defined()) continue;
      std::string dev, unit;
      resolve_device_ref(s, dn.as_string(), dn, &dev, &unit);
    }
  }
  if (m.has("dynamic_zone")) {
    if (!mi.partition) m.required("dynamic_zone").fail("a dynamic zone moves blocks around a partition's cut; give partition too");
    PolicyDecl z = parse_policy(m, "dynamic_zone", "");
    zone_policies().make(z.name, z.params, z.where);  // validates name and parameters
    mi.zone_name = z.name;
    mi.zone_params = z.params;
    mi.zone_where = z.where;
    mi.zone_width = static_cast<int>(z.params.get_int("width", 2));
    if (mi.zone_width < 1 || mi.zone_width > 64)
      z.params.node().required("width").fail("must be between 1 and 64");
  }
  return mi;
}

// The controller: a placement problem file (relative to the scenario's), its interval and strategy.
void parse_controller(const ConfigNode& c, Scenario& s) {
  if (!c.is_map()) c.fail("expected {problem: FILE, interval_s: 1, strategy: ilp}");
  c.check_keys({"problem", "interval_s", "strategy"});
  s.controller.where = c;
  const ConfigNode pn = c.required("problem");
  fs::path problem(pn.as_string());
  if (problem.is_relative() && !s.file.empty()) problem = fs::path(s.file).parent_path() / problem;
  std::error_code ec;  // a name too long or unreadable is "not found" too, not an exception
  if (!fs::is_regular_file(problem, ec))
    pn.fail("placement problem '" + pn.as_string() + "' not found (looked at " + problem.string() + ")");
  s.controller.problem = problem.string();
  s.controller.interval_s = c.get_positive("interval_s", 1);
  // The floor keeps the interval's index (now / interval_s) exact in a long long up to the
  // simulator's time limit, and a placement solve per interval within reason (issue 28).
  if (s.controller.interval_s < 1e-3)
    c.required("interval_s").fail("interval_s must be at least 0.001 s (1 ms)");
  if (s.controller.interval_s > 3600) c.required("interval_s").fail("interval_s must be at most 3600 s");
  s.controller.strategy = c.get_string("strategy", "ilp");
  if (s.controller.strategy != "ilp" && s.controller.strategy != "even" && s.controller.strategy != "dedicated")
    c.required("strategy").fail("unknown strategy '" + s.controller.strategy + "'; valid are: ilp, even, dedicated");
}

// Sets sd.model to the instance a workload entry names, or to a controller group's (sd.group), or fails.
void resolve_stream_model(const ConfigNode& w, const std::string& mname, const Scenario& s,
                          const std::vector<std::string>& mnames, StreamDecl& sd) {
  sd.model = -1;
  for (size_t i = 0; i < s.models.size(); ++i)
    if (s.models[i].name == mname) sd.model = static_cast<int>(i);
  if (sd.model < 0 && s.controller.on()) {  // a group: its instances are MODEL-DEVICE
    for (size_t i = 0; i < s.models.size() && sd.model < 0; ++i)
      for (const DeviceInstance& d : s.devices)
        if (s.models[i].name == instance_name(mname, d.name)) sd.model = static_cast<int>(i);
    if (sd.model >= 0) sd.group = mname;
    if (sd.model >= 0 && w.has("stages"))
      w.required("stages").fail("a workload the controller routes runs whole requests; stage streams of a group "
                                "would be routed apart from their VLM's");
  }
  if (sd.model < 0)
    w.required("model").fail("unknown model '" + mname + "'; valid names are: " + join_names(mnames) +
                             (s.controller.on() ? " (or a group: the instances MODEL-GPU the controller routes to)" : ""));
}

// One workload entry, appended to s.streams `count` times (named NAME0, NAME1, ... when count > 1).
void parse_workload_stream(const ConfigNode& w, const std::vector<std::string>& mnames, Scenario& s) {
  w.check_keys({"name", "model", "rate_hz", "load", "jitter_ms", "jitter_pct", "deadline_ms", "start_s",
                "duration_s", "count", "arrival", "control", "stages"});
  StreamDecl sd;
  sd.where = w;
  std::string mname = w.required("model").as_string();
  resolve_stream_model(w, mname, s, mnames, sd);
  if (w.has("control")) {
    const ModelInstance& mi = s.models[static_cast<size_t>(sd.model)];
    sd.control = parse_control(w.required("control"), mi.name, mi.shape.chunk, s.robot);
    if (w.has("rate_hz") || w.has("load"))
      w.required(w.has("rate_hz") ? "rate_hz" : "load")
          .fail("a control stream asks for a chunk every control.execute actions: its rate is control.hz / "
                "control.execute; drop this key");
    sd.rate_hz = sd.control.hz / sd.control.execute;
  } else if (w.has("rate_hz") == w.has("load")) {
    w.fail("give exactly one of rate_hz (requests per second) or load (a fraction of the model's "
           "alone throughput on its planned units), or control");
  }
  if (w.has("load") && !w.has("control")) {
    sd.load = w.get_positive("load");
    if (sd.load > 100) w.required("load").fail("a load of at most 100 times the alone throughput");
    sd.rate_pending = true;
  } else if (!w.has("control")) {
    sd.rate_hz = w.get_positive("rate_hz");
  }
  if (w.has("jitter_ms") && w.has("jitter_pct"))
    w.required("jitter_pct").fail("give one of jitter_ms (milliseconds) or jitter_pct (percent of the period)");
  sd.jitter_s = w.get_nonneg("jitter_ms", 0) * 1e-3;
  if (sd.jitter_s * sd.rate_hz >= 0.5)
    w.required("jitter_ms").fail("jitter must be under half the period");
  if (w.has("jitter_pct")) {
    sd.jitter_frac = w.get_nonneg("jitter_pct", 0) / 100;
    if (sd.jitter_frac >= 0.5) w.required("jitter_pct").fail("jitter must be under half the period (under 50)");
    if (!sd.rate_pending) sd.jitter_s = sd.jitter_frac / sd.rate_hz;
  }
  sd.deadline_s = w.get_nonneg("deadline_ms", 0) * 1e-3;
  sd.start_s = w.get_nonneg("start_s", 0);
  sd.duration_s = w.get_positive("duration_s");
  if (sd.start_s + sd.duration_s > kMaxSimulatedSeconds)
    w.required("duration_s").fail("start_s + duration_s is " + fmt_seconds(sd.start_s + sd.duration_s) +
                                  "; a scenario may span at most " + fmt_seconds(kMaxSimulatedSeconds));
  if (!sd.rate_pending && sd.duration_s * sd.rate_hz < 1)
    w.required("duration_s").fail(fmt_seconds(sd.duration_s) + " is shorter than one period of rate_hz " +
                                  fmt_number(sd.rate_hz) + ": the stream would issue no request");
  if (w.has("stages")) {
    const ConfigNode st = w.required("stages");
    if (!st.is_sequence()) st.fail("expected a list of stages, e.g. [vision, prefix]");
    for (const ConfigNode& i : st.items()) {
      Stage stage;
      if (!parse_stage(i.as_string(), &stage))
        i.fail("unknown stage '" + i.as_string() + "'; valid are: vision, prefix, action, decode, head");
      sd.stages |= static_cast<uint8_t>(1u << static_cast<int>(stage));
    }
    if (sd.stages == 0) st.fail("an empty list runs nothing; leave the key out to run every stage");
  }
  sd.arrival = w.get_string("arrival", "periodic");
  if (!workloads().find(sd.arrival))
    w.required("arrival").fail("unknown workload '" + sd.arrival + "'; valid names are: " +
                               join_names(workloads().names()));
  long long count = w.get_count("count", 1, 1, kMaxStreams);
  if (static_cast<long long>(s.streams.size()) + count > kMaxStreams)
    w.required("count").fail("the workload would have " +
                             std::to_string(static_cast<long long>(s.streams.size()) + count) +
                             " streams; a scenario has at most " + std::to_string(kMaxStreams));
  std::string base = w.get_string("name", mname);
  for (long long i = 0; i < count; ++i) {
    StreamDecl c = sd;
    c.name = count > 1 ? base + std::to_string(i) : base;
    s.streams.push_back(c);
  }
}

// The background section: loads that take a share (at most 0.95) of a device's compute and/or memory.
void parse_background(const ConfigNode& root, Scenario& s) {
  ConfigNode bg = root.optional("background");
  if (!bg.defined()) return;
  for (auto& b : bg.items()) {
    b.check_keys({"device", "compute", "memory", "start_s", "end_s"});
    BackgroundLoad l;
    l.where = b;
    resolve_device_ref(s, b.required("device").as_string(), b.required("device"), &l.device, &l.unit);
    auto share = [&](const char* key) {
      double v = b.get_nonneg(key, 0);
      if (v > 0.95) b.required(key).fail("a background load takes at most 0.95 of a resource");
      return v;
    };
    l.compute = share("compute");
    l.memory = share("memory");
    if (l.compute == 0 && l.memory == 0) b.fail("give compute and/or memory (fractions of the resource)");
    l.start_s = b.get_nonneg("start_s", 0);
    l.end_s = b.get_positive("end_s", 1e300);
    if (l.end_s <= l.start_s) b.required("end_s").fail("must be after start_s");
    s.background.push_back(l);
  }
}

// The policies section, each validated now; a unit given no batch takes the batching policy's default.
void parse_policies(const ConfigNode& root, Scenario& s) {
  ConfigNode pol = root.optional("policies");
  if (pol.defined()) pol.check_keys({"queue", "pipeline", "cost_model", "batching", "stack"});
  s.queue = parse_policy(pol, "queue", "fifo");
  s.pipeline = parse_policy(pol, "pipeline", "serial");
  s.cost_model = parse_policy(pol, "cost_model", "roofline");
  s.stack = parse_policy(pol, "stack", "none");
  s.batching = parse_policy(pol, "batching", "dynamic");
  // Validate the policy names and parameters now, where the error can point at the file.
  queue_policies().make(s.queue.name, s.queue.params, s.queue.where);
  pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  const int batch = batch_policies().make(s.batching.name, s.batching.params, s.batching.where)->default_size();
  for (DeviceInstance& d : s.devices)
    for (UnitDecl& u : d.units)
      if (!u.batch_given) {
        u.batch = batch;
        if (batch > 1) u.batch_where = s.batching.where;
      }
}

}  // namespace

static Scenario parse_scenario(const ConfigNode& root, const std::string& catalog_dir,
                               const std::string& cards_dir) {
  Scenario s;
  s.file = root.file();
  if (!root.is_map()) root.fail("a scenario is a map");
  root.check_keys({"name", "description", "seed", "hardware", "models", "workload", "policies",
                   "drain_s", "background", "controller", "queue_limit", "robot"});
  s.name = root.required("name").as_string();
  s.description = root.get_string("description", "");
  long long seed = root.get_int("seed", 1);
  if (seed < 0) root.required("seed").fail("seed must not be negative");
  s.seed = static_cast<uint64_t>(seed);
  s.drain_s = root.get_positive("drain_s", 60);
  if (root.has("queue_limit")) {
    s.queue_limit_where = root.required("queue_limit");
    s.queue_limit = root.get_count("queue_limit", 0, 1, 1000000000000LL);
  }

  Catalog catalog = Catalog::load_dir(catalog_dir);
  parse_hardware(root.required("hardware"), catalog, s);

  std::set<std::string> model_names;
  for (auto& m : root.required("models").items())
    s.models.push_back(parse_model_instance(m, cards_dir, s, model_names));
  if (s.models.empty()) root.required("models").fail("at least one model is needed");
  std::vector<std::string> mnames(model_names.begin(), model_names.end());
  if (root.has("controller")) parse_controller(root.required("controller"), s);
  if (root.has("robot")) s.robot = parse_robot(root.required("robot"), s.file);
  for (auto& w : root.required("workload").items()) parse_workload_stream(w, mnames, s);
  if (s.streams.empty()) root.required("workload").fail("at least one stream is needed");
  if (s.arrivals_end() + s.drain_s > kMaxSimulatedSeconds)
    (root.has("drain_s") ? root.required("drain_s") : root.required("workload"))
        .fail("arrivals end at " + fmt_seconds(s.arrivals_end()) + " and drain_s is " +
              fmt_seconds(s.drain_s) + "; a scenario may span at most " +
              fmt_seconds(kMaxSimulatedSeconds) + " of simulated time");
  // A period below the clock's tick would put arrivals on the same tick.
  const double tick = clock_tick_s(s.arrivals_end() + s.drain_s);
  for (const StreamDecl& sd : s.streams)
    if (!sd.rate_pending && 1 / sd.rate_hz < tick) {
      const char* key = sd.control.on() ? "control" : "rate_hz";
      sd.where.required(key).fail(
          "a period of " + fmt_seconds(1 / sd.rate_hz) + " (rate " + fmt_number(sd.rate_hz) +
          " Hz) is below the simulator's clock tick of " + fmt_seconds(tick) +
          (tick > 1e-12 ? " (a nanosecond: the scenario spans past 9e6 s)" : "") +
          ": arrivals would fall on the same tick; lower the rate");
    }

  parse_background(root, s);
  parse_policies(root, s);
  return s;
}

Scenario load_scenario(const std::string& path, const std::string& catalog_dir,
                       const std::string& cards_dir) {
  return parse_scenario(ConfigNode::load_file(path), catalog_dir, cards_dir);
}

bool model_uses_cpu(const Scenario& s, const ModelInstance& mi) {
  auto is_cpu = [&](const std::string& device) {
    int d = s.device_index(device);
    return d >= 0 && s.devices[static_cast<size_t>(d)].spec.type == DeviceType::Cpu;
  };
  if (!mi.partition) {
    for (const PlacementRule& r : mi.placement)
      if (is_cpu(r.device)) return true;
    return false;
  }
  // A partition places the model itself (its placement list is only the loader's default).
  if (mi.partition_where.is_map() && mi.partition_where.optional("params").is_map())
    for (const char* key : {"first", "second"}) {
      ConfigNode n = mi.partition_where.optional("params").optional(key);
      if (!n.defined()) continue;
      const std::string ref = n.as_string();
      if (is_cpu(ref.substr(0, ref.find('.')))) return true;
    }
  return false;
}

void resolve_auto_dtypes(Scenario& s, DType cpu_native) {
  for (ModelInstance& mi : s.models) {
    if (!mi.dtype_pending) continue;
    mi.shape.dtype = model_uses_cpu(s, mi) ? cpu_native : DType::BF16;
    mi.dtype_pending = false;
  }
}

void use_profiled_cost_model(Scenario& s, const std::string& profile_path) {
  std::string abs = std::filesystem::absolute(profile_path).string();
  ConfigNode n = ConfigNode::load_string("profile: '" + abs + "'", "--profile");
  s.cost_model = PolicyDecl{"profiled", Params(n), n};
}

Scenario load_scenario_node(const ConfigNode& root, const std::string& catalog_dir,
                            const std::string& cards_dir) {
  return parse_scenario(root, catalog_dir, cards_dir);
}

Scenario load_scenario_text(const std::string& text, const std::string& name,
                            const std::string& catalog_dir, const std::string& cards_dir) {
  ConfigNode root = ConfigNode::load_string(text, name);
  if (!root.defined()) throw ConfigError(name, 0, 0, "", "scenario is empty");
  return parse_scenario(root, catalog_dir, cards_dir);
}

}  // namespace vlasim
