#include "sim/engine/lockstep.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace vlasim {

namespace fs = std::filesystem;

namespace {

// The scenario models whose own plan runs a segment on `unit`, increasing.
std::vector<int> models_on(const Scenario& s, const Plan& p, int unit) {
  std::vector<int> out;
  for (size_t m = 0; m < s.models.size(); ++m)
    for (const Segment& seg : p.models[m].segments)
      if (!seg.transfer && seg.unit == unit) {
        out.push_back(static_cast<int>(m));
        break;
      }
  return out;
}

// Seconds model m's own plan spends on `unit` at batch b with the unit limited to sms of the
// GPU's `total` SMs.
double unit_seconds(const Scenario& s, const Plan& p, const CostModel& cost, int m, int unit, int b, int sms,
                    int total) {
  const ModelPlan& mp = p.models[static_cast<size_t>(m)];
  double t = 0;
  for (size_t k = 0; k < mp.segments.size(); ++k)
    if (!mp.segments[k].transfer && mp.segments[k].unit == unit)
      t += cost_segment(s, p, cost, mp, static_cast<int>(k), b, static_cast<double>(sms) / total).seconds;
  return t;
}

std::string resolve_table(const ConfigNode& where, const std::string& path) {
  const fs::path f(path);
  if (f.is_absolute()) return f.string();
  const fs::path beside = fs::path(where.file()).parent_path() / f;
  if (!where.file().empty() && fs::exists(beside)) return beside.string();
  if (fs::exists(f)) return f.string();
  where.fail("SM table '" + path + "' not found (looked in " +
             (beside.parent_path().empty() ? std::string(".") : beside.parent_path().string()) +
             " and the current directory); make one with vlasim profile-lut, or give lut: auto");
}

}  // namespace

std::vector<int> batch_classes(const BatchPolicy& policy, int max_batch) {
  std::set<int> out;
  for (int b : max_batch > 1 ? policy.sizes(max_batch) : std::vector<int>{1}) out.insert(batch_bucket(b, max_batch));
  return {out.begin(), out.end()};
}

std::vector<int> sm_candidates(const DeviceSpec& spec) {
  const int g = std::max(1, spec.sm_granularity);
  int step = g;
  while (spec.sms / step > 16) step += g;
  std::vector<int> out;
  for (int v = step; v < spec.sms; v += step) out.push_back(v);
  if (out.empty()) out.push_back(spec.sms);
  return out;
}

std::vector<SmLutKey> sm_lut_keys(const Scenario& s, const Plan& p, const LockstepPlan& lp) {
  auto policy = scenario_batch_policy(s);
  std::vector<SmLutKey> keys;
  const std::vector<int> m0 = models_on(s, p, lp.units[0]), m1 = models_on(s, p, lp.units[1]);
  const std::vector<int> c0 = batch_classes(*policy, p.units[static_cast<size_t>(lp.units[0])].batch);
  const std::vector<int> c1 = batch_classes(*policy, p.units[static_cast<size_t>(lp.units[1])].batch);
  for (int a : m0)
    for (int ba : c0)
      for (int b : m1)
        for (int bb : c1) keys.push_back(SmLutKey{a, ba, b, bb});
  return keys;
}

void profile_sm_lut(const Scenario& s, const Plan& p, const CostModel& cost, LockstepPlan& lp) {
  const DeviceSpec& spec = s.devices[static_cast<size_t>(lp.device)].spec;
  const std::vector<int> cand = sm_candidates(spec);
  lp.lut.clear();
  // Times per (model, class, SMs) on each stream, each computed once.
  std::map<std::tuple<int, int, int, int>, double> memo;
  auto time = [&](int side, int m, int b, int sms) {
    auto [it, fresh] = memo.try_emplace({side, m, b, sms}, 0.0);
    if (fresh) it->second = unit_seconds(s, p, cost, m, lp.units[side], b, sms, lp.sms);
    return it->second;
  };
  // give_back: the second stream takes the first's SMs when the first's batch ends, so a pair
  // lasts the first's time, or that and the rest of the second's on the whole GPU.
  const size_t d = static_cast<size_t>(lp.device);
  const bool give_back = d < p.sharing.size() && p.sharing[d].kernel_level && p.sharing[d].effects.give_back;
  for (const SmLutKey& k : sm_lut_keys(s, p, lp)) {
    int best = cand.front();
    double best_t = INFINITY;
    for (int v : cand) {
      const double t0 = time(0, k.first_model, k.first_batch, v);
      const double t1 = time(1, k.second_model, k.second_batch, lp.sms - v);
      double t = std::max(t0, t1);
      if (give_back && t0 < t1 && t1 > 0)
        t = t0 + (1 - t0 / t1) * time(1, k.second_model, k.second_batch, lp.sms);
      if (t < best_t * (1 - 1e-12)) {
        best_t = t;
        best = v;
      }
    }
    lp.lut[k] = best;
  }
  lp.lut_source = "cost model " + s.cost_model.name;
}

std::string sm_lut_yaml(const Scenario& s, const Plan& p, const LockstepPlan& lp) {
  const DeviceInstance& d = s.devices[static_cast<size_t>(lp.device)];
  const std::string first = d.units[static_cast<size_t>(d.lockstep.first)].name;
  const std::string second = d.units[static_cast<size_t>(d.lockstep.second)].name;
  std::ostringstream os;
  os << "# SM lookup table for the lockstep of " << d.name << " (" << d.spec.name << ") in scenario '" << s.name
     << "', made from the " << lp.lut_source << ".\n"
     << "# first_sms: SMs of stream " << first << " while " << second
     << " runs on the rest, for each pair of batches (batch: its power-of-two class).\n"
     << "device: " << d.name << "\nstreams: [" << first << ", " << second << "]\nsms: " << lp.sms << "\nentries:\n";
  (void)p;
  for (const auto& [k, v] : lp.lut)
    os << "  - {first_model: " << s.models[static_cast<size_t>(k.first_model)].name << ", first_batch: " << k.first_batch
       << ", second_model: " << s.models[static_cast<size_t>(k.second_model)].name << ", second_batch: " << k.second_batch
       << ", first_sms: " << v << "}\n";
  return os.str();
}

void read_sm_lut(const Scenario& s, const Plan& p, const ConfigNode& lut_where, LockstepPlan& lp) {
  const DeviceInstance& d = s.devices[static_cast<size_t>(lp.device)];
  const std::string path = resolve_table(lut_where, d.lockstep.lut);
  try {
    check_input_file(path);  // a device, folder or huge file: named at the scenario's `lut:` key
  } catch (const ConfigError& e) {
    lut_where.fail(e.what());
  }
  ConfigNode root = ConfigNode::load_file(path);
  if (!root.is_map()) root.fail("an SM table is a map (device, streams, sms, entries)");
  root.check_keys({"device", "streams", "sms", "entries"});
  root.required("device");  // which device it was made for; any with these streams and SMs may read it
  std::vector<ConfigNode> st = root.required("streams").items();
  const std::string first = d.units[static_cast<size_t>(d.lockstep.first)].name;
  const std::string second = d.units[static_cast<size_t>(d.lockstep.second)].name;
  if (st.size() != 2 || st[0].as_string() != first || st[1].as_string() != second)
    root.required("streams").fail("the lockstep's streams are [" + first + ", " + second + "]");
  if (root.get_int("sms", 0) != lp.sms)
    root.required("sms").fail("the table is for a GPU with " + std::to_string(root.get_int("sms", 0)) + " SMs; " +
                              d.name + " (" + d.spec.name + ") has " + std::to_string(lp.sms));
  auto model = [&](const ConfigNode& e, const char* key) {
    const std::string name = e.required(key).as_string();
    for (size_t m = 0; m < s.models.size(); ++m)
      if (s.models[m].name == name) return static_cast<int>(m);
    std::vector<std::string> names;
    for (const auto& mi : s.models) names.push_back(mi.name);
    e.required(key).fail("unknown model '" + name + "'; the scenario's models are: " + join_names(names));
  };
  lp.lut.clear();
  for (const ConfigNode& e : root.required("entries").items()) {
    e.check_keys({"first_model", "first_batch", "second_model", "second_batch", "first_sms"});
    SmLutKey k;
    k.first_model = model(e, "first_model");
    k.first_batch = static_cast<int>(e.get_count("first_batch", 1, 1, kMaxUnitBatch));
    k.second_model = model(e, "second_model");
    k.second_batch = static_cast<int>(e.get_count("second_batch", 1, 1, kMaxUnitBatch));
    if (!e.has("first_sms")) e.required("first_sms");
    const int v = static_cast<int>(e.get_count("first_sms", 1, 1, lp.sms - 1));
    if (v % std::max(1, d.spec.sm_granularity) != 0)
      e.required("first_sms").fail("SM partitions on " + d.spec.name + " come in multiples of " +
                                   std::to_string(d.spec.sm_granularity));
    if (!lp.lut.emplace(k, v).second) e.fail("a second entry for this pair of batches");
  }
  for (const SmLutKey& k : sm_lut_keys(s, p, lp))
    if (!lp.lut.count(k))
      lut_where.fail("SM table " + path + " has no entry for " + s.models[static_cast<size_t>(k.first_model)].name +
                     " at batch " + std::to_string(k.first_batch) + " on " + first + " with " +
                     s.models[static_cast<size_t>(k.second_model)].name + " at batch " +
                     std::to_string(k.second_batch) + " on " + second + "; make a full one with vlasim profile-lut");
  lp.lut_source = "table " + path;
}

void plan_locksteps(const Scenario& s, const CostModel& cost, Plan& p) {
  auto policy = scenario_batch_policy(s);
  for (size_t d = 0; d < s.devices.size(); ++d) {
    const DeviceInstance& dev = s.devices[d];
    if (!dev.lockstep.on()) continue;
    LockstepPlan lp;
    lp.device = static_cast<int>(d);
    lp.sms = dev.spec.sms;
    lp.guard = dev.lockstep.guard;
    for (size_t u = 0; u < p.units.size(); ++u) {
      if (p.units[u].device != static_cast<int>(d)) continue;
      if (p.units[u].unit == dev.lockstep.first) lp.units[0] = static_cast<int>(u);
      if (p.units[u].unit == dev.lockstep.second) lp.units[1] = static_cast<int>(u);
    }
    lp.static_first = static_cast<int>(std::lround(dev.units[static_cast<size_t>(dev.lockstep.first)].sm_fraction * lp.sms));
    if (lp.static_first >= lp.sms) lp.static_first = 0;  // a full share is no split to start from
    if (sm_candidates(dev.spec).front() >= lp.sms)
      dev.lockstep.where.fail(dev.spec.name + " has " + std::to_string(lp.sms) + " SMs in partitions of " +
                              std::to_string(dev.spec.sm_granularity) + ": too few to split between two streams");
    // Per-step batching would make each step a lockstep of its own, waiting out the other
    // stream's whole batch; the table costs whole stages.
    if (policy->per_step())
      dev.lockstep.where.fail("locksteps run one batch per stage; per-step batching (" + s.batching.name +
                              ") schedules the action expert step by step: use dynamic or fixed batching");
    // A dynamic zone moves a model's blocks between plans the table does not cover.
    for (size_t m = 0; m < s.models.size(); ++m) {
      if (s.models[m].zone_name.empty()) continue;
      for (int v : p.models[m].variants)
        for (const Segment& seg : p.models[static_cast<size_t>(v)].segments)
          if (seg.unit == lp.units[0] || seg.unit == lp.units[1])
            s.models[m].zone_where.fail("model '" + s.models[m].name + "' has a dynamic zone and runs on the lockstep of " +
                                        dev.name + "; locksteps take models with one plan");
    }
    for (int side : {0, 1})
      if (models_on(s, p, lp.units[side]).empty())
        dev.lockstep.where.fail("stream " + p.units[static_cast<size_t>(lp.units[side])].name +
                                " runs no model's operators; place a stage on it or drop the lockstep");
    if (dev.lockstep.lut == "auto") profile_sm_lut(s, p, cost, lp);
    else read_sm_lut(s, p, dev.lockstep.lut_where, lp);

    // The SM counts each stream may run with: the table's splits, the declared one (before the
    // first lockstep with both), and the whole GPU for a batch that runs alone.
    std::set<int> firsts;
    if (lp.static_first > 0) firsts.insert(lp.static_first);
    for (const auto& [k, v] : lp.lut) firsts.insert(v);
    std::set<int> sms[2];
    for (int v : firsts) {
      sms[0].insert(v);
      sms[1].insert(lp.sms - v);
    }
    sms[0].insert(lp.sms);
    sms[1].insert(lp.sms);
    for (ModelPlan& mp : p.models)
      for (size_t k = 0; k < mp.segments.size(); ++k) {
        const Segment& seg = mp.segments[k];
        if (seg.transfer) continue;
        for (int side : {0, 1}) {
          if (seg.unit != lp.units[side]) continue;
          const int max_batch = p.units[static_cast<size_t>(seg.unit)].batch;
          for (int b : max_batch > 1 ? policy->sizes(max_batch) : std::vector<int>{1})
            for (int v : sms[side])
              if (v > 0)
                mp.split[{static_cast<int>(k), b, v}] =
                    cost_segment(s, p, cost, mp, static_cast<int>(k), b, static_cast<double>(v) / lp.sms);
        }
      }
    p.locksteps.push_back(std::move(lp));
  }
}

}  // namespace vlasim
