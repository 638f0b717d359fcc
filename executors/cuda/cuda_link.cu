// The link copier of the CUDA module (executors/executor.h LinkCopier): host <-> device copies
// from pinned or pageable host memory, timed with CUDA events on a stream of its own.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "executors/executor.h"

namespace vlasim {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda link: ") + what + ": " + cudaGetErrorString(e));
}

class CudaLinkCopier : public LinkCopier {
 public:
  CudaLinkCopier(int device, bool h2d, bool pinned, int64_t max_bytes)
      : device_(device), h2d_(h2d), pinned_(pinned), max_(std::max<int64_t>(1, max_bytes)) {
    int n = 0;
    check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    if (device < 0 || device >= n)
      throw std::runtime_error("cuda link: no CUDA device " + std::to_string(device) + " (" + std::to_string(n) +
                               " present)");
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    name_ = "cuda " + std::to_string(device) + " (" + prop.name + "), " + (h2d ? "h2d from " : "d2h to ") +
            (pinned ? "pinned" : "pageable") + " memory";
    try {
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaEventCreate(&start_), "cudaEventCreate");
      check(cudaEventCreate(&end_), "cudaEventCreate");
      check(cudaMalloc(&dev_, static_cast<size_t>(max_)), "cudaMalloc");
      if (pinned) {
        check(cudaMallocHost(&pinned_host_, static_cast<size_t>(max_)), "cudaMallocHost");
        std::memset(pinned_host_, 1, static_cast<size_t>(max_));
      } else {
        pageable_.assign(static_cast<size_t>(max_), 1);
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaLinkCopier() override { release(); }

  double copy(int64_t bytes) override {
    if (bytes < 0 || bytes > max_)
      throw std::invalid_argument("cuda link: a copy of " + std::to_string(bytes) + " bytes on a link made for " +
                                  std::to_string(max_));
    check(cudaSetDevice(device_), "cudaSetDevice");
    void* host = pinned_ ? pinned_host_ : static_cast<void*>(pageable_.data());
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    if (bytes > 0) {
      if (h2d_) check(cudaMemcpyAsync(dev_, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_), "h2d copy");
      else check(cudaMemcpyAsync(host, dev_, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_), "d2h copy");
    }
    check(cudaEventRecord(end_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(end_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, end_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  std::string device() const override { return name_; }

 private:
  void release() {
    cudaSetDevice(device_);
    if (dev_) cudaFree(dev_);
    if (pinned_host_) cudaFreeHost(pinned_host_);
    if (start_) cudaEventDestroy(start_);
    if (end_) cudaEventDestroy(end_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int device_;
  bool h2d_, pinned_;
  int64_t max_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  void* dev_ = nullptr;
  void* pinned_host_ = nullptr;
  std::vector<char> pageable_;
};

}  // namespace

}  // namespace vlasim

// The module's entry point for link copies (what make_cuda_link_copier looks up): a new copier
// the caller owns; throws std::runtime_error naming CUDA's error.
extern "C" vlasim::LinkCopier* vlasim_make_cuda_link_copier(int device, int h2d, int pinned, int64_t max_bytes) {
  return new vlasim::CudaLinkCopier(device, h2d != 0, pinned != 0, max_bytes);
}
