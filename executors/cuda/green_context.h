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
  // A green context on `device` with at least `min_sms` SMs (1 <= min_sms <= the device's SMs):
  // the device's SMs are split into groups of the driver's smallest partition size, and the
  // lane takes as many groups as min_sms needs (so sms() may exceed min_sms) from the front of
  // the split, or from its end when `from_end`: two lanes, one from each end, share no SMs
  // while their sum fits the GPU. Throws std::runtime_error naming the driver's error (a
  // driver older than 12.5 among them).
  Lane(int device, int min_sms, bool from_end);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // Makes this lane's context current on the calling thread (the device's primary context,
  // or the green context): allocations, events and launches that follow belong to it.
  void bind() const;
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
