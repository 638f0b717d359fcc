#include "sim/costs/cost_model.h"


#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace vlasim {

double unit_peak_flops(const DeviceInstance& dev, const UnitDecl& unit, const Op& op) {
  bool matrix = op.kind == OpKind::Gemm || op.kind == OpKind::Attention;
  double per = matrix ? dev.spec.peak.matrix(op.dtype) : dev.spec.peak.vector_fp32;
  if (dev.spec.type == DeviceType::Cpu) return per * unit.cores;
  return per * unit.sm_fraction;
}

double unit_bandwidth(const DeviceInstance& dev, const UnitDecl& unit) {
  if (dev.spec.type == DeviceType::Cpu) return std::min(dev.spec.mem_bw, dev.spec.core_bw * unit.cores);
  return dev.spec.mem_bw;
}

namespace {

// Roofline: max(compute time, memory time) + a fixed per-operator overhead. Compute runs at
// peak x an efficiency factor per operator kind; memory moves weights, KV cache and the
// activations that do not stay in L2/LLC at bandwidth x an efficiency factor.
class Roofline : public CostModel {
 public:
  Roofline(double l2_hit_cost, bool overheads) : l2_hit_cost_(l2_hit_cost), overheads_(overheads) {}

  OpCost op_cost(const Op& op, const DeviceInstance& dev, const UnitDecl& unit) const override {
    const Efficiency& e = dev.spec.eff;
    double eff = op.kind == OpKind::Gemm        ? e.gemm_compute
                 : op.kind == OpKind::Attention ? e.attention_compute
                                                : e.vector_compute;
    OpCost c;
    c.compute_seconds = op.flops / (unit_peak_flops(dev, unit, op) * eff);
    // An embedding lookup reads the rows it gathers (its bytes_read), not the whole table.
    double fixed = op.kind == OpKind::Embedding ? 0.0 : op.weight_bytes + op.kv_bytes;
    double act = std::max(0.0, op.bytes_read + op.bytes_written - fixed);
    // Activations small enough to stay in the last-level cache cost a fraction of DRAM time.
    double act_traffic = act <= dev.spec.l2_bytes / 2 ? act * l2_hit_cost_ : act;
    c.memory_seconds = (fixed + act_traffic) / (unit_bandwidth(dev, unit) * e.memory);
    if (overheads_) {
      if (dev.spec.type == DeviceType::Gpu)
        c.overhead_seconds = dev.graph_capture ? dev.spec.graph_launch_s : dev.spec.launch_s;
      else
        c.overhead_seconds = dev.spec.op_overhead_s;
    }
    c.seconds = std::max(c.compute_seconds, c.memory_seconds) + c.overhead_seconds;
    return c;
  }

  OpCost transfer_cost(double bytes, const LinkInstance& link, bool h2d) const override {
    const DeviceSpec& s = link.spec;
    double bw = h2d ? (link.pinned ? s.h2d_bw : s.h2d_bw_pageable)
                    : (link.pinned ? s.d2h_bw : s.d2h_bw_pageable);
    OpCost c;
    c.memory_seconds = bytes / bw;
    c.overhead_seconds = s.latency_s;
    c.seconds = c.memory_seconds + c.overhead_seconds;
    return c;
  }

 private:
  double l2_hit_cost_;
  bool overheads_;
};

}  // namespace

std::unique_ptr<CostModel> make_roofline(double l2_hit_cost, bool overheads) {
  return std::make_unique<Roofline>(l2_hit_cost, overheads);
}

void register_roofline_cost_model(CostModelRegistry& r) {
  r.add({"roofline",
         "max(compute, memory) time at catalog peaks x efficiency factors, plus launch overhead",
         {{"l2_hit_cost", "DRAM-time fraction charged for activations that fit in L2/LLC", "0.3"},
          {"overheads", "charge per-operator launch/dispatch overhead", "true"}},
         [](const Params& p) {
           double l2 = p.get_double("l2_hit_cost", 0.3);
           if (l2 < 0 || l2 > 1) p.node().required("l2_hit_cost").fail("must be in [0, 1]");
           return std::make_unique<Roofline>(l2, p.get_bool("overheads", true));
         }});
}

void read_fit_param(const Params& prm, const std::string& shipped, const std::string& what,
                    const std::function<void(const std::string& text, const std::string& file)>& parse) {
  const std::string path = prm.get_string("fit", "");
  std::string file = path.empty() ? shipped : path;
  if (!path.empty() && !std::filesystem::path(path).is_absolute()) {
    const std::filesystem::path beside = std::filesystem::path(prm.node().required("fit").file()).parent_path() / path;
    if (std::filesystem::exists(beside)) file = beside.string();
  }
  const char* env = std::getenv("VLASIM_KERNEL_FIT");
  const bool from_env = path.empty() && env && *env;
  try {
    std::string text;
    try {
      text = read_input_file(file);
    } catch (const ConfigError& e) {
      throw ConfigError(file, 0, 0, "", "cannot read '" + file + "': " + e.message());
    }
    parse(text, file);
  } catch (const ConfigError& e) {
    if (!path.empty()) prm.node().required("fit").fail(e.what());
    if (from_env) throw ConfigError("<environment>", 0, 0, "VLASIM_KERNEL_FIT", "the " + what + " it names: " + e.what());
    throw std::runtime_error("the shipped " + what + " is damaged: " + e.what());
  }
}

}  // namespace vlasim
