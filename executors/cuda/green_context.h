// SM limits for real (issue 12): a green context (CUDA driver API, 12.4+) holds a subset of a
// GPU's SMs, and kernels launched into its streams run on those SMs only, so a stream's
// `sms:` / `sm_fraction:` and a lockstep's SM split run as the simulator models them. The
// driver's entry points are looked up through the runtime (cudaGetDriverEntryPointByVersion),
// so the module links no libcuda of its own and loads where the runtime does.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

namespace vlasim {

// Where an executor's kernels run: the whole device (sms == 0: its primary context and a
// stream of its own) or a green context of `sms` SMs with a stream in it.
class Lane {
 public:
  // The whole of device `device`. Throws std::runtime_error naming CUDA's error.
  explicit Lane(int device);
  // A green context on `device` with at least `min_sms` SMs (1 <= min_sms <= the device's SMs).
  // The device's SMs are split once (per process) into groups of the driver's smallest
  // partition size (8 on Hopper) and a leftover; a lane takes whole groups from the front of
  // that split, or, `from_end`, the leftover and then groups from its end, as many as min_sms
  // needs (so sms() may exceed min_sms). A front lane of k SMs (k a multiple of the group
  // size) and an end lane of the rest tile the GPU, sharing none, as do any two whose
  // rounded sizes fit it. Throws std::runtime_error naming the driver's error (a driver older
  // than 12.5 among them).
  Lane(int device, int min_sms, bool from_end);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // Makes this lane's context current on the calling thread (the device's primary context,
  // or the green context): allocations, events and launches that follow belong to it.
  void bind() const;
  // Leaves the calling thread on the device's primary context again (a green context may be
  // current on one thread at a time).
  void unbind() const;
  cudaStream_t stream() const { return stream_; }
  int sms() const { return sms_; }  // 0: the whole device

 private:
  int device_ = 0;
  int sms_ = 0;
  CUgreenCtx green_ = nullptr;
  CUcontext ctx_ = nullptr;  // the green context as a CUcontext
  cudaStream_t stream_ = nullptr;
};

}  // namespace vlasim
