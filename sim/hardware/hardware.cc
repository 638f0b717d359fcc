#include "sim/hardware/hardware.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "scenarios/config/data_dir.h"

namespace vlasim {

const char* to_string(DeviceType t) {
  switch (t) {
    case DeviceType::Gpu: return "gpu";
    case DeviceType::Cpu: return "cpu";
    case DeviceType::Link: return "link";
  }
  return "?";
}

double PeakRates::matrix(DType t) const {
  double v = 0;
  switch (t) {
    case DType::BF16: v = matrix_bf16; break;
    case DType::F16: v = matrix_fp16 > 0 ? matrix_fp16 : matrix_bf16; break;
    case DType::I8: v = matrix_int8 > 0 ? matrix_int8 : matrix_bf16; break;
    case DType::F32: v = matrix_fp32; break;
  }
  return v > 0 ? v : matrix_fp32;
}

namespace {
constexpr double kGB = 1e9, kMB = 1e6, kT = 1e12;

Efficiency parse_efficiency(const ConfigNode& n, Efficiency e) {
  if (!n.defined()) return e;
  n.check_keys({"gemm_compute", "attention_compute", "vector_compute", "memory"});
  auto frac = [&](const char* key, double fallback) {
    ConfigNode c = n.optional(key);
    if (!c.defined()) return fallback;
    double v = c.as_double();
    if (!(v >= 1e-3 && v <= 1)) c.fail("efficiency must be from 0.001 to 1, got " + c.as_string());
    return v;
  };
  e.gemm_compute = frac("gemm_compute", e.gemm_compute);
  e.attention_compute = frac("attention_compute", e.attention_compute);
  e.vector_compute = frac("vector_compute", e.vector_compute);
  e.memory = frac("memory", e.memory);
  return e;
}

// The `kernels:` block of a GPU entry (defaults: KernelModel's).
KernelModel parse_kernels(const ConfigNode& n, int sms);

// n's `key` (a number > 0, or `fallback` when absent; no fallback: required) checked to lie in
// [lo, hi] of its own unit: a figure outside makes no real device (and would make one operator
// take ~1e300 s, or no time at all).
double figure(const ConfigNode& n, const std::string& key, double lo, double hi,
              std::optional<double> fallback = std::nullopt) {
  const double v = fallback ? (n.has(key) ? n.get_nonneg(key, 0) : *fallback)
                            : n.get_positive(key);
  if (n.has(key) && !(v >= lo && v <= hi)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "must be from %g to %g, got %g", lo, hi, v);
    n.required(key).fail(buf);
  }
  return v;
}

KernelModel parse_kernels(const ConfigNode& n, int sms) {
  KernelModel k;
  if (!n.defined()) return k;
  if (!n.is_map()) n.fail("expected a map of kernel figures");
  n.check_keys({"tile", "gemm", "gemm_fp32", "attention", "vector", "memory", "saturating_sms",
                "kernel_us"});
  if (n.has("tile")) {
    const ConfigNode t = n.required("tile");
    if (!t.is_sequence() || t.items().size() != 2) t.fail("expected [rows, columns] of the largest GEMM tile");
    const std::vector<ConfigNode> sides = t.items();
    for (const ConfigNode& side : sides)
      if (side.as_int() < 16 || side.as_int() > 512) side.fail("a GEMM tile side must be from 16 to 512");
    k.tile_m = static_cast<int>(sides[0].as_int());
    k.tile_n = static_cast<int>(sides[1].as_int());
  }
  k.gemm = figure(n, "gemm", 0.01, 1, k.gemm);
  k.gemm_fp32 = figure(n, "gemm_fp32", 0.01, 1, k.gemm);
  k.attention = figure(n, "attention", 0.01, 1, k.attention);
  k.vector = figure(n, "vector", 0.01, 1, k.vector);
  k.memory = figure(n, "memory", 0.01, 1, k.memory);
  k.saturating_sms = figure(n, "saturating_sms", 1.0 / std::max(1, sms), 1, k.saturating_sms);
  k.kernel_s = figure(n, "kernel_us", 0, 1000, k.kernel_s * 1e6) * 1e-6;
  return k;
}

DeviceType parse_type(const ConfigNode& n) {
  std::string t = n.as_string();
  if (t == "gpu") return DeviceType::Gpu;
  if (t == "cpu") return DeviceType::Cpu;
  if (t == "link") return DeviceType::Link;
  n.fail("unknown device type '" + t + "'; valid names are: gpu, cpu, link");
}
}  // namespace

DeviceSpec parse_device_spec(const std::string& name, const ConfigNode& n) {
  DeviceSpec d;
  d.name = name;
  if (!n.is_map()) n.fail("expected a map describing the device");
  d.type = parse_type(n.required("type"));
  d.description = n.get_string("description", name);
  d.source = n.required("source").as_string();
  d.tdp_w = n.get_nonneg("tdp_w", 0);
  d.price_usd = n.get_nonneg("price_usd", 0);
  d.idle_w = n.has("idle_w") ? n.get_nonneg("idle_w", 0) : -1;
  if (d.idle_w > 0 && d.tdp_w > 0 && d.idle_w > d.tdp_w)
    n.required("idle_w").fail("idle power cannot exceed tdp_w (" + std::to_string(d.tdp_w) + " W)");
  const std::vector<std::string> common = {"type", "description", "source", "tdp_w", "idle_w",
                                           "price_usd", "efficiency"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  switch (d.type) {
    case DeviceType::Gpu: {
      n.check_keys(with({"sms", "tflops_bf16", "tflops_fp16", "tflops_fp16_acc16", "tflops_fp32", "tops_int8",
                         "mem_gb", "bw_gbs", "l2_mb", "max_streams", "launch_us",
                         "graph_launch_us", "context_gb", "sm_granularity", "kernels", "boost_mhz", "load_mhz",
                         "time_slice_us", "context_switch_us"}));
      d.sms = static_cast<int>(n.get_count("sms", 0, 1, 100000));
      if (!n.has("sms")) n.required("sms");
      d.peak.matrix_bf16 = figure(n, "tflops_bf16", 1e-3, 1e5) * kT;
      d.peak.matrix_fp16 = figure(n, "tflops_fp16", 1e-3, 1e5, d.peak.matrix_bf16 / kT) * kT;
      if (n.has("tflops_fp16_acc16")) {
        d.peak.matrix_fp16_acc16 = figure(n, "tflops_fp16_acc16", 1e-3, 1e5) * kT;
        if (d.peak.matrix_fp16_acc16 < std::max(d.peak.matrix_fp16, d.peak.matrix_bf16))
          n.required("tflops_fp16_acc16")
              .fail("the fp16-accumulate rate cannot be below the fp32-accumulate rate "
                    "(tflops_fp16 / tflops_bf16); leave it out where the datasheet gives one rate");
      }
      d.peak.vector_fp32 = figure(n, "tflops_fp32", 1e-3, 1e5) * kT;
      d.peak.matrix_fp32 = d.peak.vector_fp32;
      d.peak.matrix_int8 = figure(n, "tops_int8", 1e-3, 1e5, 2 * d.peak.matrix_bf16 / kT) * kT;
      d.mem_bytes = n.get_positive("mem_gb") * kGB;
      d.mem_bw = figure(n, "bw_gbs", 1e-3, 1e6) * kGB;
      d.l2_bytes = n.get_nonneg("l2_mb", 0) * kMB;
      d.max_streams = static_cast<int>(n.get_count("max_streams", 32, 1, 1024));
      d.launch_s = figure(n, "launch_us", 0, 1e6, 5) * 1e-6;
      d.graph_launch_s = figure(n, "graph_launch_us", 0, 1e6, 1) * 1e-6;
      d.context_bytes = n.get_nonneg("context_gb", 0.5) * kGB;
      d.sm_granularity = static_cast<int>(n.get_count("sm_granularity", 1, 1, d.sms));
      d.time_slice_s = figure(n, "time_slice_us", 1, 1e7, d.time_slice_s * 1e6) * 1e-6;
      d.context_switch_s = figure(n, "context_switch_us", 0, 1e6, d.context_switch_s * 1e6) * 1e-6;
      d.eff = parse_efficiency(n.optional("efficiency"), Efficiency{});
      d.kernels = parse_kernels(n.optional("kernels"), d.sms);
      if (n.has("load_mhz") && !n.has("boost_mhz"))
        n.required("load_mhz").fail("load_mhz needs boost_mhz (the clock the peaks are stated at)");
      if (n.has("boost_mhz")) d.boost_mhz = figure(n, "boost_mhz", 100, 10000);
      if (n.has("load_mhz")) d.load_mhz = figure(n, "load_mhz", 0.5 * d.boost_mhz, 1.5 * d.boost_mhz);
      break;
    }
    case DeviceType::Cpu: {
      n.check_keys(with({"sockets", "cores_per_socket", "numa_nodes", "ghz", "isa",
                         "default_isa", "bw_gbs_per_node", "core_bw_gbs", "core_bw_loaded_gbs", "mem_gb",
                         "llc_mb", "op_overhead_us", "interconnect_gbs"}));
      d.sockets = static_cast<int>(n.get_count("sockets", 1, 1, 64));
      d.cores_per_socket = static_cast<int>(n.get_count("cores_per_socket", 0, 1, 4096));
      if (!n.has("cores_per_socket")) n.required("cores_per_socket");
      d.numa_nodes = static_cast<int>(n.get_count("numa_nodes", d.sockets, 1, 1024));
      if (d.cores() % d.numa_nodes != 0)
        n.required("numa_nodes").fail("cores (" + std::to_string(d.cores()) +
                                      ") must divide evenly into NUMA nodes");
      double ghz = figure(n, "ghz", 0.1, 20);
      d.mem_bw = figure(n, "bw_gbs_per_node", 1e-3, 1e6) * kGB;
      d.core_bw = figure(n, "core_bw_gbs", 1e-3, 1e6, d.mem_bw / kGB) * kGB;
      if (n.has("core_bw_loaded_gbs"))
        d.core_bw_loaded = figure(n, "core_bw_loaded_gbs", 1e-3, d.core_bw / kGB) * kGB;
      d.mem_bytes = n.get_positive("mem_gb") * kGB;
      d.l2_bytes = n.get_nonneg("llc_mb", 0) * kMB;
      d.op_overhead_s = figure(n, "op_overhead_us", 0, 1e6, 2) * 1e-6;
      d.interconnect_bw = figure(n, "interconnect_gbs", 1e-3, 1e6, d.mem_bw / kGB) * kGB;
      d.eff = parse_efficiency(n.optional("efficiency"), Efficiency{});
      ConfigNode isa = n.required("isa");
      for (auto& [isa_name, in] : isa.entries()) {
        in.check_keys({"matrix_bf16", "matrix_fp32", "matrix_int8", "vector_fp32", "efficiency"});
        PeakRates p;
        // Figures are FLOP per cycle per core.
        p.vector_fp32 = figure(in, "vector_fp32", 0.1, 1e5) * ghz * 1e9;
        p.matrix_fp32 = figure(in, "matrix_fp32", 0.1, 1e5, p.vector_fp32 / (ghz * 1e9)) * ghz * 1e9;
        p.matrix_bf16 = figure(in, "matrix_bf16", 0.1, 1e5, p.matrix_fp32 / (ghz * 1e9)) * ghz * 1e9;
        p.matrix_fp16 = p.matrix_bf16;
        p.matrix_int8 = figure(in, "matrix_int8", 0.1, 1e5, 2 * p.matrix_bf16 / (ghz * 1e9)) * ghz * 1e9;
        d.isa[isa_name] = p;
        d.isa_efficiency[isa_name] = parse_efficiency(in.optional("efficiency"), d.eff);
      }
      if (d.isa.empty()) isa.fail("a CPU needs at least one instruction-set entry");
      d.default_isa = n.get_string("default_isa", d.isa.begin()->first);
      if (!d.isa.count(d.default_isa)) {
        std::vector<std::string> names;
        for (auto& [k, v] : d.isa) names.push_back(k);
        n.required("default_isa").fail("unknown isa '" + d.default_isa +
                                       "'; valid names are: " + join_names(names));
      }
      d.peak = d.isa.at(d.default_isa);
      break;
    }
    case DeviceType::Link: {
      n.check_keys(with({"h2d_gbs", "d2h_gbs", "h2d_pageable_gbs", "d2h_pageable_gbs",
                         "latency_us"}));
      d.h2d_bw = figure(n, "h2d_gbs", 1e-3, 1e6) * kGB;
      d.d2h_bw = figure(n, "d2h_gbs", 1e-3, 1e6) * kGB;
      d.h2d_bw_pageable = figure(n, "h2d_pageable_gbs", 1e-3, 1e6, d.h2d_bw / kGB) * kGB;
      d.d2h_bw_pageable = figure(n, "d2h_pageable_gbs", 1e-3, 1e6, d.d2h_bw / kGB) * kGB;
      d.latency_s = figure(n, "latency_us", 0, 1e6, 5) * 1e-6;
      break;
    }
  }
  return d;
}

void Catalog::load_file(const std::string& path) { add_entries(ConfigNode::load_file(path)); }

void Catalog::load_text(const std::string& text, const std::string& name) {
  ConfigNode root = ConfigNode::load_string(text, name);
  if (!root.defined()) throw ConfigError(name, 0, 0, "", "file is empty");
  add_entries(root);
}

void Catalog::add_entries(const ConfigNode& root) {
  for (auto& [name, node] : root.entries()) {
    if (entries_.count(name)) node.fail("duplicate catalog entry '" + name + "'");
    entries_[name] = parse_device_spec(name, node);
  }
}

Catalog Catalog::load_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw ConfigError(dir, 0, 0, "", "catalog directory not found");
  std::vector<std::string> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  Catalog c;
  for (auto& f : files) c.load_file(f);
  return c;
}

const DeviceSpec* Catalog::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

const DeviceSpec& Catalog::get(const std::string& name, const ConfigNode& where) const {
  const DeviceSpec* d = find(name);
  if (!d) where.fail("unknown catalog entry '" + name + "'; valid names are: " + join_names(names()));
  return *d;
}

std::vector<std::string> Catalog::names() const {
  std::vector<std::string> out;
  for (auto& [k, v] : entries_) out.push_back(k);
  return out;
}

std::string default_catalog_dir() {
  return find_data_dir("VLASIM_CATALOG", "catalog", VLASIM_CATALOG_DIR);
}

}  // namespace vlasim
