// An additive GPU kernel model in datasheet terms, fitted on measured kernel times of some GPUs
// (sim/gpu_import.h) to predict GPUs nobody measured, and its leave-one-GPU-out evaluation
// against the roofline and shaped models (`vlasim gpu-eval`, reports/gpu_cost_model.md).
//
// Per op class c (gemm, norm, elementwise) three parameters: a per-kernel latency L_c that
// ADDS (seconds), the fraction b_c of the catalog DRAM bandwidth the class reaches, and the
// fraction f_c of the catalog matrix peak (gemm) reached per SM:
//   memory  = bytes / (b_c x mem_bw)       (weights + activations read and written)
//   compute = waves x 2 tile_m tile_n K / (f_c x peak / SMs)   (gemm: output tiles of
//             tile_m (64 when M <= 64, else the catalog tile) x tile_n over the SMs in waves)
//   t = L_c + (memory^p + compute^p)^(1/p)    (p per class: 1 adds them, large p is a max)
// Norms and elementwise ops have no compute term. All parameters are shared by every GPU: the
// GPU enters only through its catalog figures (SMs, tensor peak, DRAM bandwidth, tile).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/gpu_import.h"
#include "sim/cost_model.h"
#include "sim/hardware.h"

namespace vlasim {

struct KernelClassFit {
  double latency_s = 5e-6;
  double bw_frac = 0.8;
  double compute_frac = 0.75;
  double p = 4;  // combination exponent
};

struct GpuKernelParams {
  std::map<std::string, KernelClassFit> by_class;  // "gemm", "norm", "elementwise"
};

// "gemm", "norm", "elementwise", "attention" or "other".
std::string kernel_class(const Op& op);
// Predicted seconds of `op` alone on the whole GPU `d`.
double kernel_model_seconds(const Op& op, const DeviceSpec& d, const GpuKernelParams& p);

// The parameters as a small CSV (a header comment `note`, then class,latency_s,bw_frac,
// compute_frac,p rows), and back; `where` names the text in errors (std::runtime_error).
std::string kernel_params_csv(const GpuKernelParams& p, const std::string& note);
GpuKernelParams parse_kernel_params(const std::string& text, const std::string& where);
// The parameters shipped with vlasim (sim/kernel_fit/kernel_model.csv: fitted on every
// vendored GPU by `vlasim gpu-eval --fit-out`, scripts/gpu_profiles.sh), or $VLASIM_KERNEL_FIT.
std::string default_kernel_fit_path();

// Registry entry "kernel": GEMMs, norms and elementwise ops on a whole GPU priced by the
// kernel model with the shipped (or a given) fit, plus the shaped model's launch gap and eager
// host floor; attention, other ops, SM partitions and CPU units as the shaped model.
void register_kernel_cost_model(CostModelRegistry& r);

// Measured times of one catalog GPU.
struct GpuSamples {
  std::string gpu;   // catalog name
  std::string data;  // where they came from ("vidur fp16", "apxinf bf16")
  std::vector<KernelSample> samples;
};

// Fits every class to the samples of `fit` (log-error least squares, each GPU weighted
// equally). Classes without samples keep the defaults.
GpuKernelParams fit_kernel_model(const std::vector<const GpuSamples*>& fit, const Catalog& cat);

// Held-out error figures of one (model, GPU, class, regime) cell; errors are pred / meas - 1.
struct ErrorCell {
  std::string model, gpu, cls, regime;
  int n = 0;
  double median_abs = 0, time_weighted = 0, bias = 0;  // bias: median signed error
};

struct GpuEvaluation {
  std::vector<ErrorCell> cells;
  std::map<std::string, GpuKernelParams> held_out_fits;  // by held-out GPU
  GpuKernelParams all_fit;                               // fitted on every GPU (not evaluated)
};

// Leave one GPU out: for each GPU, the kernel model fitted on the others predicts it; the
// catalog roofline and the shaped model (no fitting; CUDA Graph replay, no host time) are
// evaluated on the same samples. GEMM regimes: "M<=128", "compute" (datasheet compute time
// above datasheet memory time), "mid" (the rest); every class also has "all".
GpuEvaluation evaluate_gpus(const std::vector<GpuSamples>& data, const Catalog& cat);

std::string gpu_evaluation_markdown(const GpuEvaluation& e, const std::vector<GpuSamples>& data);
std::string gpu_evaluation_csv(const GpuEvaluation& e);

}  // namespace vlasim
