// Hardware descriptions: catalog entries (sim/catalog/*.yaml) for GPUs, CPUs and links, with
// the figures the cost model and the device models need. No SystemC here: the executors and
// the scheduler read these too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/config.h"

namespace vlasim {

enum class DeviceType { Gpu, Cpu, Link };
const char* to_string(DeviceType t);

// Peak rates of one processing resource (a whole GPU, or one CPU core) in FLOP/s.
struct PeakRates {
  double matrix_bf16 = 0;  // tensor cores / AMX / AVX512-BF16 dot products
  double matrix_fp16 = 0;
  // GPUs: the fp16 tensor rate with fp16 accumulation where the datasheet gives it above the
  // fp32-accumulate rate (GeForce boards run fp32 accumulation, which bf16 and PyTorch's fp16
  // GEMMs use, at half the rate their tensor cores' operand feed is built for); 0: not above.
  double matrix_fp16_acc16 = 0;
  double matrix_fp32 = 0;  // TF32 off: fp32 GEMMs on vector units
  double matrix_int8 = 0;
  double vector_fp32 = 0;  // elementwise, norms, softmax
  // Matrix rate for `t` (falls back to fp32 when a dtype has no figure).
  double matrix(DType t) const;
};

// Fractions of peak that real kernels reach, by operator kind (roofline efficiency).
struct Efficiency {
  double gemm_compute = 0.75, attention_compute = 0.5, vector_compute = 0.5;
  double memory = 0.8;
};

// How a GPU's kernels behave, for the shape-aware cost model (sim/costs/shaped_cost_model.cc):
// figures from public microbenchmarks of the device or its architecture (cited in the
// entry's source), never fitted to a paper's figure.
struct KernelModel {
  int tile_m = 128, tile_n = 128;  // the largest GEMM tile the vendor library runs at full rate
  double gemm = 0.75;       // fraction of the matrix peak a large, well-shaped GEMM reaches
  double gemm_fp32 = 0.75;  // the same for fp32 GEMMs on the vector units (no TF32); a block
                            // without it takes its gemm
  double attention = 0.55;  // fraction of the matrix peak fused attention reaches, long sequences
  double vector = 0.5;      // fraction of the vector peak elementwise/norm kernels reach
  double memory = 0.85;     // achievable fraction of DRAM bandwidth (a streaming copy)
  double saturating_sms = 0.5;  // fraction of the SMs whose loads saturate DRAM bandwidth
  double kernel_s = 2e-6;       // shortest kernel: an empty kernel's duration on the GPU
};

// A catalog entry. Fields not meaningful for a type stay 0.
struct DeviceSpec {
  std::string name;         // catalog key, e.g. "rtx4090"
  std::string description;  // human-readable model name
  std::string source;       // where the figures come from
  DeviceType type = DeviceType::Gpu;

  // GPU
  int sms = 0;
  PeakRates peak;              // whole GPU (GPU) or one core (CPU)
  double mem_bytes = 0;        // capacity (GPU memory, or host DRAM)
  double mem_bw = 0;           // bytes/s (GPU HBM/GDDR; CPU: per NUMA node)
  double l2_bytes = 0;         // L2 (GPU) or LLC (CPU)
  int max_streams = 32;        // concurrent streams that may share the GPU
  double launch_s = 5e-6;      // per-kernel launch overhead without graph capture
  double graph_launch_s = 1e-6;  // per-kernel overhead under CUDA Graph replay
  double context_bytes = 0;    // runtime/context memory reserved on the device
  int sm_granularity = 1;      // SM partitions come in multiples of this
  // Time slicing between processes (contexts) that share a GPU without MPS (the `blocks` GPU
  // sharing model, sim/costs/gpu_sharing.h); catalog keys time_slice_us, context_switch_us.
  // Defaults: a 2 ms slice: NVIDIA DRIVE OS 6.0 Linux SDK, "Setting the Timeslice" (timeslices
  // are set in microseconds, at least 1 ms; 2 ms is its bound for medium-priority contexts;
  // NVIDIA publishes no figure for data-centre GPUs). A 50 us switch: an assumption of the
  // order of a compute-preemption context save and restore discussed by Park et al.
  // (Chimera, ASPLOS 2015); NVIDIA publishes none. Neither is a measurement.
  double time_slice_s = 2e-3;
  double context_switch_s = 50e-6;
  KernelModel kernels;         // GPU: the shape-aware cost model's figures
  // GPU clock (MHz) the datasheet peaks are stated at (boost_mhz) and the clock boards hold
  // under sustained tensor load (load_mhz, only with boost_mhz), both cited; 0: not given (the
  // peaks hold as stated).
  double boost_mhz = 0, load_mhz = 0;
  // The SMs' clock under load (MHz): load_mhz, else boost_mhz, else 0 (unknown).
  double sm_clock_mhz() const { return load_mhz > 0 ? load_mhz : boost_mhz; }
  // load_mhz / boost_mhz where both are given, else 1: the factor the datasheet peaks are off by
  // under load.
  double load_clock_ratio() const { return boost_mhz > 0 && load_mhz > 0 ? load_mhz / boost_mhz : 1.0; }

  // CPU
  int sockets = 0, cores_per_socket = 0, numa_nodes = 0;
  double core_bw = 0;          // bytes/s one core can pull from memory
  // bytes/s one core pulls while every other core of its NUMA node streams too (a measured
  // host's figure, sim/measured/profile.h HostEntry, or catalog core_bw_loaded_gbs); 0: not given, and
  // core groups running at once slow each other only when their memory demands together
  // exceed mem_bw (sim/engine/engine.cc).
  double core_bw_loaded = 0;
  // Measured slowdowns of CPU segments while the node's other cores run (a measured host's,
  // sim/measured/profile.h CorunSlowdown), by sim/engine/engine.h corun_key; the engine uses one in place of
  // the bandwidth model above for the segment it names. Empty: none measured.
  std::map<std::string, double> corun_slowdown;
  double op_overhead_s = 0;    // per-operator dispatch overhead on CPU
  double interconnect_bw = 0;  // bytes/s between NUMA nodes (UPI / Infinity Fabric)
  // Per-core peak by instruction-set stack, e.g. "amx", "avx512", "avx2", "naive".
  std::map<std::string, PeakRates> isa;
  std::map<std::string, Efficiency> isa_efficiency;
  std::string default_isa;

  // Link (per direction)
  double h2d_bw = 0, d2h_bw = 0;                  // pinned, bytes/s
  double h2d_bw_pageable = 0, d2h_bw_pageable = 0;
  double latency_s = 0;                           // per copy fixed cost

  Efficiency eff;
  // Board (GPU) or per-socket (CPU) power and price. 0: not given.
  double tdp_w = 0, price_usd = 0;
  double idle_w = -1;               // power when idle (W); < 0: not given

  int cores() const { return sockets * cores_per_socket; }
};

// All catalog entries, by name.
class Catalog {
 public:
  // Loads every *.yaml under `dir` (each a map name -> entry). Throws ConfigError on a bad
  // entry (file, line, key) or a duplicate name.
  static Catalog load_dir(const std::string& dir);
  // Loads one catalog file into this catalog.
  void load_file(const std::string& path);
  // The same for a file's contents; `name` stands in for the file in errors.
  void load_text(const std::string& text, const std::string& name);
  // Throws ConfigError at `where`, listing the valid names, if there is no entry `name`.
  const DeviceSpec& get(const std::string& name, const ConfigNode& where) const;
  const DeviceSpec* find(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::map<std::string, DeviceSpec>& entries() const { return entries_; }

 private:
  void add_entries(const ConfigNode& root);  // each key of `root` -> an entry
  std::map<std::string, DeviceSpec> entries_;
};

// Parses one catalog entry. Throws ConfigError on a missing or impossible value.
DeviceSpec parse_device_spec(const std::string& name, const ConfigNode& node);

// Directory of the shipped catalog: VLASIM_CATALOG, else an installed vlasim's share/vlasim/catalog, else the source tree's (scenarios/config/data_dir.h).
std::string default_catalog_dir();

}  // namespace vlasim
