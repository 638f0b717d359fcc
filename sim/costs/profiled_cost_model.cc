#include "sim/costs/profiled_cost_model.h"
// The "profiled" cost model: operator times from a device profile (sim/measured/profile.h).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/measured/profile.h"

namespace vlasim {

namespace {

namespace fs = std::filesystem;

// "1 thread fp32, 2 threads fp32" (CPU) or "64 SMs bf16, 132 SMs bf16" (GPU).
std::string describe_sections(const DeviceProfile& p, bool gpu) {
  std::vector<std::string> out;
  for (const ProfileSection& s : p.sections)
    out.push_back(std::to_string(s.threads) +
                  (gpu ? (s.threads == 1 ? " SM " : " SMs ") : (s.threads == 1 ? " thread " : " threads ")) +
                  to_string(s.dtype));
  return join_names(out);
}

class Profiled : public CostModel {
 public:
  Profiled(DeviceProfile prof, std::string path, bool roofline_fallback, bool variability,
           ConfigNode where)
      : prof_(std::move(prof)),
        path_(std::move(path)),
        roofline_fallback_(roofline_fallback),
        variability_(variability),
        where_(std::move(where)),
        roofline_(make_roofline(0.3, true)) {}  // the registry's "roofline" with its defaults

  OpCost op_cost(const Op& op, const DeviceInstance& dev, const UnitDecl& unit) const override {
    if (dev.spec.name != prof_.catalog_device)
      where_.fail("profile " + path_ + " was measured for catalog device '" + prof_.catalog_device +
                  "' but device '" + dev.name + "' is catalog device '" + dev.spec.name + "'");
    if (dev.spec.type == DeviceType::Gpu && dev.graph_capture != prof_.graph)
      where_.fail("profile " + path_ + " was timed " + (prof_.graph ? "as CUDA Graph replays" : "kernel by kernel") +
                  " but device '" + dev.name + "' has graph_capture " + (dev.graph_capture ? "true" : "false") +
                  "; calibrate the GPU " + (dev.graph_capture ? "with" : "without") + " --graph");
    const ProfileSection* s = section(dev, unit, op.dtype);
    if (!s)
      where_.fail("profile " + path_ + " has no data for " + width(dev, unit) + " at dtype " + to_string(op.dtype) +
                  " (unit '" + dev.name + "." + unit.name + "', op " + op.name +
                  "); it holds: " + describe_sections(prof_, dev.spec.type == DeviceType::Gpu) + "; calibrate with those settings");
    const OpCost r = roofline_->op_cost(op, dev, unit);
    double t = 0;
    if (const Measurement* m = s->exact(op)) {
      t = m->median_s;
    } else if (roofline_fallback_) {
      return r;
    } else if (const FitModel* f = s->fit_for(op)) {
      t = f->predict(op_work(op));
    } else {
      where_.fail("profile " + path_ + " has no measurement or fit for " + to_string(op.kind) +
                  " ops (" + width(dev, unit) + ", " + to_string(op.dtype) +
                  ", op " + op.name + "); calibrate with a grid, or use fallback: roofline");
    }
    OpCost c;
    const double dispatch = s->op_overhead_s + s->op_overhead_share * t;
    c.seconds = t + dispatch;
    if (r.seconds > 0 && std::isfinite(r.seconds)) {
      c.compute_seconds = t * r.compute_seconds / r.seconds;
      c.memory_seconds = t * r.memory_seconds / r.seconds;
      c.overhead_seconds = t * r.overhead_seconds / r.seconds;
    } else {
      c.compute_seconds = t;
    }
    c.overhead_seconds += dispatch;
    c.dispatch_seconds = dispatch;
    c.outside_seconds = s->op_outside_s;
    return c;
  }

  std::vector<double> service_variability(const DeviceInstance& dev, const UnitDecl& unit,
                                          DType dtype) const override {
    const ProfileSection* s = variability_ ? section(dev, unit, dtype) : nullptr;
    return s ? s->service_quantiles : std::vector<double>();
  }

  OpCost transfer_cost(double bytes, const LinkInstance& link, bool h2d) const override {
    if (prof_.memcpy.link.empty() || link.spec.name != prof_.memcpy.link)
      return roofline_->transfer_cost(bytes, link, h2d);
    OpCost c;
    c.seconds = prof_.memcpy.seconds(bytes);
    c.overhead_seconds = std::min(prof_.memcpy.latency_s, c.seconds);
    c.memory_seconds = c.seconds - c.overhead_seconds;
    return c;
  }

 private:
  static std::string width(const DeviceInstance& dev, const UnitDecl& unit) {
    const int w = profile_width(dev, unit);
    return std::to_string(w) + (dev.spec.type == DeviceType::Gpu ? (w == 1 ? " SM" : " SMs")
                                                                 : (w == 1 ? " thread" : " threads"));
  }
  const ProfileSection* section(const DeviceInstance& dev, const UnitDecl& unit, DType dtype) const {
    return prof_.section(profile_width(dev, unit), dtype);
  }

  DeviceProfile prof_;
  std::string path_;
  bool roofline_fallback_;
  bool variability_;
  ConfigNode where_;
  std::unique_ptr<CostModel> roofline_;
};

// `p` as written, or next to the scenario file, or relative to the current directory.
std::string resolve_profile(const ConfigNode& node) {
  const fs::path p(node.as_string());
  if (p.is_absolute()) return p.string();
  const fs::path beside = fs::path(node.file()).parent_path() / p;
  if (!node.file().empty() && fs::exists(beside)) return beside.string();
  if (fs::exists(p)) return p.string();
  node.fail("profile file '" + p.string() + "' not found (looked in " +
            (beside.parent_path().empty() ? std::string(".") : beside.parent_path().string()) +
            " and the current directory); make one with vlasim calibrate");
}

}  // namespace

int profile_width(const DeviceInstance& dev, const UnitDecl& unit) {
  if (dev.spec.type == DeviceType::Cpu) return unit.cores;
  if (dev.spec.type == DeviceType::Gpu) return stream_sms(dev, unit);
  return 1;
}

ProfileRef scenario_profile(const Scenario& s) {
  if (s.cost_model.name != "profiled" || !s.cost_model.params.node().defined() ||
      !s.cost_model.params.node().has("profile"))
    return {};
  const ConfigNode node = s.cost_model.params.node().required("profile");
  return {resolve_profile(node), node};
}

std::string profile_isa_problem(const DeviceProfile& p, const std::string& path, const std::string& host_isa) {
  if (p.isa == host_isa) return "";
  const std::string how = "; calibrate on this machine (vlasim calibrate SCENARIO --in-context -o PROFILE)";
  if (p.isa.empty())
    return "profile " + path + " does not record the CPU ISA it was measured with (made by an older "
           "vlasim), so it cannot be trusted to predict this machine (oneDNN ISA " + host_isa + ")" + how;
  return "profile " + path + " was measured on a CPU running oneDNN ISA " + p.isa + " (" + p.machine +
         "), but this machine runs " + host_isa + ": its times predict that machine, not this one" + how;
}

void register_profiled_cost_model(CostModelRegistry& r) {
  r.add({"profiled",
         "times measured on this machine by vlasim calibrate (exact shapes, else a fitted model)",
         {{"profile", "device profile JSON written by vlasim calibrate", ""},
          {"fallback", "shapes not in the profile: fit (the profile's fitted model) or roofline", "fit"},
          {"variability",
           "segment run-to-run variation: measured (drawn from the profile's in-context "
           "quantiles, when it has them) or none (every run takes its predicted time)",
           "measured"}},
         [](const Params& p) -> std::unique_ptr<CostModel> {
           if (!p.node().defined())
             throw ConfigError(p.node().file(), 0, 0, "policies.cost_model.params.profile",
                               "the profiled cost model needs a profile: write cost_model: "
                               "{name: profiled, params: {profile: PATH}}");
           const ConfigNode node = p.node().required("profile");
           const std::string path = resolve_profile(node);
           const std::string fb = p.get_string("fallback", "fit");
           if (fb != "fit" && fb != "roofline")
             p.node().required("fallback").fail("unknown fallback '" + fb + "'; valid: fit, roofline");
           const std::string var = p.get_string("variability", "measured");
           if (var != "measured" && var != "none")
             p.node().required("variability").fail("unknown variability '" + var + "'; valid: measured, none");
           return std::make_unique<Profiled>(load_profile(path), path, fb == "roofline",
                                             var == "measured", p.node());
         }});
}

}  // namespace vlasim
