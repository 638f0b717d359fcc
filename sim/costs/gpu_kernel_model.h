// An additive GPU kernel model in datasheet terms, fitted on measured kernel times of some GPUs
// (sim/measured/gpu_import.h) to predict GPUs nobody measured, and its leave-one-GPU-out evaluation
// against the roofline and shaped models (`vlasim gpu-eval`, reports/gpu_cost_model.md).
//
// Per op class c (gemm, norm, layernorm, elementwise) a per-kernel latency L_c that ADDS (seconds), and
// the fraction b_c of the datasheet DRAM bandwidth the class reaches. GEMMs also a fraction f
// of the datasheet matrix peak reached per SM and a combination exponent p, and are run as a
// GEMM library runs them (gemm_tiling): output tiles of tm x tn (64/128 x 64/128/256), split
// over K in s parts when that fills more SMs, as thread blocks over the SMs in waves; the
// library takes the fastest choice:
//   memory  = bytes / (b x bw)                      (operands and result once through DRAM)
//   block   = 2 tm tn ceil(K / s) / (rate / SMs)       (one SM's share of one block)
//   rate    = min(f x feed, peak) x clock   feed: the fp16-accumulate rate where the datasheet
//             gives one above the fp32-accumulate peak (GeForce), else the peak; clock: the
//             cited clock under load over the clock the peak is stated at, else 1
//             (gemm_compute_rate)
//   compute = waves x block,  waves = ceil(tiles x s / SMs)
//   reduce  = 8 M N s / (b x bw)                    (split-K fp32 partial sums, s > 1)
//   t = L + (memory^p + compute^p)^(1/p) + reduce
// Attention (class "attention", fitted only where measured attention kernels are given, e.g. from
// traces: sim/costs/stack_eval.h): t = L + (memory^p + compute^p)^(1/p), memory = bytes / (b x bw),
// compute = FLOPs / rate (rate as the GEMMs'), fitting L and f with b = 0.8 and p = 2 fixed; a fit
// without it leaves attention to the shaped model.
// LayerNorm and GroupNorm (class "layernorm"): t = L + bytes / (b x bw). RMSNorm ("norm") and
// elementwise ops (fitted with a per-SM rate r > 0): rows go
// one per SM in waves, each SM moving its row's bytes at r, and all bytes once through DRAM at
// the catalog's measured streaming-copy rate (kernels.memory x bw; b = 1, not fitted):
//   t = L + ceil(rows / SMs) x row_bytes / (r x clock) + bytes / (b x kernels.memory x bw)
// (clock: the GPU's cited SM clock under load over 1.5 GHz, 1 where the catalog gives none)
// (reports/gpu_cost_model_notes.md: fitted on two GPUs, one DRAM fraction cannot follow the
// third; a per-SM rate plus the copy rate can.) A class with r = 0 keeps t = L + bytes / (b x bw).
// All parameters are shared by every GPU: a GPU enters only through its datasheet figures (SMs,
// matrix peak, DRAM bandwidth, cited copy fraction), so a GPU with only a catalog entry gets a
// prediction.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/measured/gpu_import.h"
#include "sim/costs/cost_model.h"
#include "sim/hardware/hardware.h"

namespace vlasim {

struct KernelClassFit {
  double latency_s = 5e-6;
  double bw_frac = 0.8;
  double compute_frac = 0.75;
  double p = 4;  // combination exponent
  // Bytes/s one SM moves through a non-GEMM kernel's rows (see the top of this file); 0: none,
  // the class is t = L + bytes / (b x bw).
  double sm_rate = 0;
};

struct GpuKernelParams {
  std::map<std::string, KernelClassFit> by_class;  // "gemm", "norm", "layernorm", "elementwise"
  // Not a kernel's time: what timing with CUDA events around each launch (ApxInf) adds to a
  // kernel time (CUPTI, Vidur). Fitted when the fit data mixes both; the cost model ignores it.
  double event_timing_s = 0;
};

// How the kernel model runs a GEMM `op` on the whole GPU `d` (see the top of this file): the
// fastest tile and split-K choice, with its thread blocks, waves and times. Promises
// seconds = latency_s + (memory_s^p + compute_s^p)^(1/p) + reduce_s, waves = ceil(blocks /
// SMs), blocks = tiles x split_k, and seconds non-decreasing in M, N and K.
struct GemmTiling {
  int tile_m = 0, tile_n = 0, split_k = 1;
  int64_t tiles = 0;      // output tiles ceil(M / tile_m) x ceil(N / tile_n)
  int64_t blocks = 0;     // thread blocks: tiles x split_k
  int64_t waves = 0;      // ceil(blocks / SMs)
  double block_s = 0;     // one block's tensor-core time on one SM
  double compute_s = 0;   // waves x block_s
  double memory_s = 0;    // operands and result once through DRAM
  double reduce_s = 0;    // split-K partial sums written and read (0 without split-K)
  double latency_s = 0;   // the class's additive per-kernel latency
  double seconds = 0;     // the kernel's predicted time alone on the GPU
};
GemmTiling gemm_tiling(const Op& op, const DeviceSpec& d, const KernelClassFit& f);
// The tensor rate (FLOP/s, whole GPU) a GEMM of dtype `t` reaches under fit `f`: the fraction
// compute_frac of the rate the SMs' operand feed is built for, at most the datasheet peak for
// `t`. The feed's rate is the fp16-accumulate rate (PeakRates::matrix_fp16_acc16) for fp16 and
// bf16 where the datasheet gives one above the peak: a GeForce board, whose fp32 accumulation
// runs at half that rate, reaches its whole fp32-accumulate peak; elsewhere f x peak. Both
// scale by DeviceSpec::load_clock_ratio (the clock under load against the peak's).
double gemm_compute_rate(DType t, const DeviceSpec& d, const KernelClassFit& f);
// The per-SM rate of a non-GEMM class (KernelClassFit::sm_rate, sm_gbs) is stated at this SM
// clock; a GPU runs it scaled by its clock under load over this (sm_clock_scale).
inline constexpr double kReferenceSmClockMhz = 1500;
// DeviceSpec::sm_clock_mhz / kReferenceSmClockMhz; 1 for a GPU whose catalog entry gives no clock.
double sm_clock_scale(const DeviceSpec& d);
// Predicted seconds of `op` alone on the whole GPU `d` with the class fit `f`.
double kernel_class_seconds(const Op& op, const DeviceSpec& d, const KernelClassFit& f);

// "gemm", "norm", "elementwise", "attention" or "other".
std::string kernel_class(const Op& op);
// The fit class that prices `op`: its kernel_class, except a norm other than RMSNorm (LayerNorm,
// GroupNorm: "layernorm"): PyTorch's LayerNorm and vLLM's RMSNorm kernels reach different
// fractions of DRAM bandwidth, in opposite directions from any one fit
// (reports/gpu_cost_model_notes.md). A fit without the class falls back to the op's kernel_class.
std::string kernel_fit_class(const Op& op);
// The class fit `p` prices `op` with (kernel_fit_class, else kernel_class); null: none.
const KernelClassFit* find_fit(const GpuKernelParams& p, const Op& op);
// Predicted seconds of `op` alone on the whole GPU `d`.
double kernel_model_seconds(const Op& op, const DeviceSpec& d, const GpuKernelParams& p);

// The parameters as a small CSV (a header comment `note`, then class,latency_s,bw_frac,
// compute_frac,p,sm_gbs rows, sm_gbs the per-SM rate in GB/s at the reference SM clock
// (kReferenceSmClockMhz), 0 for none; a cuda_events row
// holds event_timing_s in latency_s), and back; the parser also reads the older header without
// sm_gbs (every class 0); `where` names the text in errors (std::runtime_error).
// The writer gives a row for every class of kKernelFitClasses (defaults for one not fitted).
// The parser promises a complete, plausible fit or a ConfigError naming `where`, the line,
// column and column name: one header, then exactly one row for each of kKernelFitClasses
// (at most one cuda_events row, at most one optional attention row), every field a number within the bounds the fitter produces
// (latency 1 ns to 10 ms, bw_frac and compute_frac 0.01 to 1.5, p 1 to 64, sm_gbs 0 or 0.01
// to 10000); an empty field, a repeated or unknown class, a header-only or truncated file is
// refused. A UTF-8 byte order mark and CR line ends are ignored.
std::string kernel_params_csv(const GpuKernelParams& p, const std::string& note);
GpuKernelParams parse_kernel_params(const std::string& text, const std::string& where);
// The classes a fit file gives, each once.
inline constexpr const char* kKernelFitClasses[] = {"elementwise", "gemm", "layernorm", "norm"};
// The parameters shipped with vlasim (sim/kernel_fit/kernel_model.csv: fitted on every
// vendored GPU by `vlasim gpu-eval --fit-out`, scripts/gpu_profiles.sh), or $VLASIM_KERNEL_FIT.
std::string default_kernel_fit_path();

// Registry entry "kernel": fp16/bf16 GEMMs, norms and elementwise ops on a whole GPU priced by
// the kernel model with the shipped (or a given) fit, plus the shaped model's launch gap and
// eager host floor (host_op_us); attention, other ops, other dtypes (no measured data), SM
// partitions and CPU units as the shaped model (its host_op_us, eff_scale, l2_hit_cost).
void register_kernel_cost_model(CostModelRegistry& r);

// Measured times of one catalog GPU.
struct GpuSamples {
  std::string gpu;   // catalog name
  std::string data;  // where they came from ("vidur fp16", "apxinf bf16")
  std::vector<KernelSample> samples;
  bool event_timed = false;  // timed with CUDA events around each launch (not kernel time)
};

// Fits every class to the samples of `fit` (log-error least squares, each GPU weighted
// equally; event_timing_s with the GEMMs when the samples mix timing methods). Classes
// without samples keep the defaults.
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
