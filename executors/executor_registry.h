// The registration list of executors, above every executor: onednn, reference and cuda by name,
// and the loader of the CUDA executor's module (libvlasim_cuda_executor.so), through which the
// CUDA link copier and the SM ids of a green context are reached too.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "executors/executor.h"

namespace vlasim {

// Adds "onednn" (params dtype (auto by default; a dtype this CPU cannot run is a ConfigError
// naming its ISA), threads, cpus, seed), "reference" (float64, slow; params dtype, seed) and
// "cuda" (params dtype, device, seed; executors/cuda/cuda_executor.h) to `r`. The CUDA
// executor lives in a module of its own (libvlasim_cuda_executor.so, built when nvcc is
// found), loaded when a cuda executor is made, so that vlasim starts without CUDA's libraries.
void register_executors(ExecutorRegistry& r);
// A registry filled by register_executors.
const ExecutorRegistry& executor_registry();

// The copier for CUDA device `device` (host to device when `h2d`, else device to host) with
// buffers of max_bytes, from the CUDA executor's module. Throws std::runtime_error naming why
// it cannot be made (the module is not built or not found, no GPU, memory short).
std::unique_ptr<LinkCopier> make_cuda_link_copier(int device, bool h2d, bool pinned, int64_t max_bytes);

// The SMs of CUDA device `device` that a green context of at least `sms` SMs (0: the whole
// device; taken from the GPU's end when from_end) runs blocks on, sorted, as the CUDA
// executor makes them (executors/cuda/green_context.h): the check that a split's two streams
// share no SM. Throws std::runtime_error naming why it cannot run (no module, no GPU).
std::vector<int> cuda_lane_sm_ids(int device, int sms, bool from_end);

}  // namespace vlasim
