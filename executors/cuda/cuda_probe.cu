#include "executors/cuda/cuda_probe.h"

#include <cuda_runtime.h>

#include <cstdio>

namespace vlasim {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
}

std::string cuda_device_description(int index) {
  cudaDeviceProp p{};
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %d SMs, %.1f GiB, cc %d.%d", p.name, p.multiProcessorCount,
                static_cast<double>(p.totalGlobalMem) / (1 << 30), p.major, p.minor);
  return buf;
}

}  // namespace vlasim
