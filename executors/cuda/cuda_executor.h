// The CUDA executor (issue 12): runs the operator graphs the CPU executors run on one NVIDIA
// GPU, with the same synthetic weights and inputs (executors/plan.h), so that its outputs
// compare with the float64 reference executor's. GEMMs run through cuBLASLt (bf16, fp16 or fp32
// operands, fp32 accumulation, bias / GELU / ReLU / residual in cuBLASLt's epilogue), the rest
// of the epilogue (gate/up, gate, other activations, RoPE) and every other op kind as small
// CUDA kernels of this file's .cu. Tensors are kept as fp32
// on the device, their values rounded to the executor's dtype where the CPU executors round
// them (weights and synthetic inputs); each op is timed with CUDA events on one stream (with
// `graph`, each segment replays a captured CUDA Graph, timed as a whole). SM limits run the
// kernels in green contexts (executors/cuda/green_context.h).
// Built only with VLASIM_WITH_CUDA, as the module libvlasim_cuda_executor.so that the
// registry's "cuda" entry (executors/executor.h) loads when asked for it; kept out of
// libvlasim.so and the vlasim program, which start without CUDA's libraries.
#pragma once

#include <memory>

#include "executors/executor.h"

namespace vlasim {

struct CudaOptions {
  DType dtype = DType::BF16;  // GEMM operands: bf16, fp16 or fp32
  int device = 0;             // CUDA device index
  uint64_t seed = 1;          // synthetic weights and inputs
  // Replay each segment as a CUDA Graph captured after its first (kernel-by-kernel) run; a
  // replay's per-op times are that run's, scaled to the replay's total.
  bool graph = false;
  // Run on a green context of at least this many SMs (the driver rounds up to its partition
  // granularity); 0: the whole GPU. set_sm_limit() changes it between runs.
  int sms = 0;
  // Limits take their SMs from the end of the GPU rather than the front, so that this stream
  // and one taking them from the front share none (executors/cuda/green_context.h).
  bool sms_from_end = false;
  // Bias, GELU-tanh / ReLU and a residual without activation in cuBLASLt's epilogue (else a
  // kernel of this executor after the product, as gate/up, gates and other activations are).
  bool fuse_epilogue = true;
};

// The executor on device opt.device. Throws std::runtime_error naming the CUDA error when
// there is no such device (or no driver), std::invalid_argument for a dtype it cannot run.
std::unique_ptr<Executor> make_cuda_executor(const CudaOptions& opt);

}  // namespace vlasim

// The module's entry point (what the registry's "cuda" entry looks up): a new executor the
// caller owns; throws as make_cuda_executor.
extern "C" vlasim::Executor* vlasim_make_cuda_executor(const vlasim::CudaOptions* opt);
