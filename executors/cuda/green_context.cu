#include "executors/cuda/green_context.h"

#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace vlasim {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda executor: ") + what + ": " + cudaGetErrorString(e));
}

// The driver's entry points green contexts need, looked up once.
struct Driver {
  PFN_cuGetErrorString_v6000 error_string = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuCtxSetCurrent_v4000 set_current = nullptr;
  PFN_cuDeviceGetDevResource_v12040 get_resource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 split = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 describe = nullptr;
  PFN_cuGreenCtxCreate_v12040 create = nullptr;
  PFN_cuGreenCtxDestroy_v12040 destroy = nullptr;
  PFN_cuCtxFromGreenCtx_v12040 as_context = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 stream_create = nullptr;
  std::string missing;  // the first entry point the driver lacks, if any

  Driver() {
    lookup("cuGetErrorString", 6000, &error_string);
    lookup("cuDeviceGet", 2000, &device_get);
    lookup("cuCtxSetCurrent", 4000, &set_current);
    lookup("cuDeviceGetDevResource", 12040, &get_resource);
    lookup("cuDevSmResourceSplitByCount", 12040, &split);
    lookup("cuDevResourceGenerateDesc", 12040, &describe);
    lookup("cuGreenCtxCreate", 12040, &create);
    lookup("cuGreenCtxDestroy", 12040, &destroy);
    lookup("cuCtxFromGreenCtx", 12040, &as_context);
    lookup("cuGreenCtxStreamCreate", 12050, &stream_create);
  }
  template <class F>
  void lookup(const char* name, unsigned version, F* f) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p) {
      cudaGetLastError();
      if (missing.empty()) missing = name;
      return;
    }
    *f = reinterpret_cast<F>(p);
  }
  void check(CUresult r, const char* what) const {
    if (r == CUDA_SUCCESS) return;
    const char* s = nullptr;
    if (error_string) error_string(r, &s);
    throw std::runtime_error(std::string("cuda executor: ") + what + ": " + (s ? s : "CUDA driver error") + " (" +
                             std::to_string(int(r)) + ")");
  }
};

const Driver& driver() {
  static const Driver d;
  return d;
}

// A device's SMs split once into groups of the driver's smallest partition size, plus what is
// left over: every lane's descriptor is built from this one split, so groups taken from its
// front and from its end are disjoint (the driver promises that within one split only).
struct SmSplit {
  CUdevice dev = 0;
  unsigned total = 0, grain = 1;
  std::vector<CUdevResource> groups;
  CUdevResource rest{};
};

const SmSplit& sm_split(int device) {
  static std::mutex mu;
  static std::map<int, SmSplit> splits;
  std::lock_guard<std::mutex> lock(mu);
  auto it = splits.find(device);
  if (it != splits.end()) return it->second;
  const Driver& d = driver();
  SmSplit sp;
  d.check(d.device_get(&sp.dev, device), "cuDeviceGet");
  CUdevResource all{};
  d.check(d.get_resource(sp.dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  sp.total = all.sm.smCount;
  sp.grain = std::max(1u, all.sm.minSmPartitionSize);
  unsigned count = 0;
  d.check(d.split(nullptr, &count, &all, nullptr, 0, sp.grain), "cuDevSmResourceSplitByCount (query)");
  sp.groups.resize(std::max(1u, count));
  d.check(d.split(sp.groups.data(), &count, &all, &sp.rest, 0, sp.grain), "cuDevSmResourceSplitByCount");
  sp.groups.resize(count);
  return splits.emplace(device, std::move(sp)).first->second;
}

}  // namespace

Lane::Lane(int device) : device_(device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  // Non-blocking: nothing on the legacy default stream can join (and break) a capture on it.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

Lane::Lane(int device, int min_sms, bool from_end) : device_(device) {
  const Driver& d = driver();
  if (!d.missing.empty())
    throw std::runtime_error("cuda executor: SM limits need green contexts (a CUDA 12.5 driver or later); this "
                             "driver lacks " + d.missing);
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaFree(nullptr), "initialising the primary context");  // the green context retains it
  const SmSplit& sp = sm_split(device);
  if (min_sms < 1 || static_cast<unsigned>(min_sms) > sp.total)
    throw std::runtime_error("cuda executor: an SM limit of " + std::to_string(min_sms) + " on a GPU of " +
                             std::to_string(sp.total) + " SMs");
  // From the front: whole groups, rounded up. From the end: what is left over first, then
  // groups rounded up, so that a front lane of k SMs (a multiple of the group size) and an
  // end lane of total - k SMs tile the GPU exactly.
  std::vector<CUdevResource> take;
  unsigned have = 0;
  if (from_end && sp.rest.sm.smCount > 0) {
    take.push_back(sp.rest);
    have = sp.rest.sm.smCount;
  }
  const unsigned count = static_cast<unsigned>(sp.groups.size());
  for (unsigned i = 0; i < count && have < static_cast<unsigned>(min_sms); ++i) {
    take.push_back(sp.groups[from_end ? count - 1 - i : i]);
    have += take.back().sm.smCount;
  }
  if (have < static_cast<unsigned>(min_sms) && !from_end && sp.rest.sm.smCount > 0) {
    take.push_back(sp.rest);
    have += sp.rest.sm.smCount;
  }
  if (have < static_cast<unsigned>(min_sms))
    throw std::runtime_error("cuda executor: the driver's split of " + std::to_string(sp.total) +
                             " SMs cannot hold " + std::to_string(min_sms));
  const CUdevice dev = sp.dev;
  CUdevResourceDesc desc{};
  d.check(d.describe(&desc, take.data(), static_cast<unsigned>(take.size())), "cuDevResourceGenerateDesc");
  d.check(d.create(&green_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  try {
    d.check(d.as_context(&ctx_, green_), "cuCtxFromGreenCtx");
    CUstream s = nullptr;
    d.check(d.stream_create(&s, green_, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate");
    stream_ = reinterpret_cast<cudaStream_t>(s);
  } catch (...) {
    d.destroy(green_);
    throw;
  }
  sms_ = static_cast<int>(have);
}

Lane::~Lane() {
  if (green_) driver().set_current(ctx_);
  if (stream_) cudaStreamDestroy(stream_);
  if (green_) {
    driver().destroy(green_);
    driver().set_current(nullptr);  // no destroyed context stays current on this thread
  }
  cudaSetDevice(device_);
}

void Lane::bind() const {
  if (green_) {
    driver().check(driver().set_current(ctx_), "cuCtxSetCurrent");
  } else {
    check(cudaSetDevice(device_), "cudaSetDevice");
  }
}

void Lane::unbind() const {
  if (!green_) return;
  driver().set_current(nullptr);  // a green context may be current on one thread at a time
  cudaSetDevice(device_);
}

namespace {

// Each block records the SM it ran on; blocks spin a little so that they spread.
__global__ void record_smid(int* out) {
  if (threadIdx.x == 0) {
    unsigned id = 0;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    out[blockIdx.x] = static_cast<int>(id);
  }
  const long long t0 = clock64();
  while (clock64() - t0 < 20000) {
  }
}

// The distinct SMs blocks launched on `lane` ran on, sorted.
std::vector<int> sm_ids(const Lane& lane) {
  constexpr int kBlocks = 4096;
  lane.bind();
  int* d = nullptr;
  cudaError_t e = cudaMalloc(&d, kBlocks * sizeof(int));
  std::vector<int> h(kBlocks, -1);
  if (e == cudaSuccess) {
    record_smid<<<kBlocks, 32, 0, lane.stream()>>>(d);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(h.data(), d, kBlocks * sizeof(int), cudaMemcpyDeviceToHost, lane.stream());
    if (e == cudaSuccess) e = cudaStreamSynchronize(lane.stream());
    cudaFree(d);
  }
  lane.unbind();
  check(e, "recording SM ids");
  std::set<int> ids(h.begin(), h.end());
  return {ids.begin(), ids.end()};
}

}  // namespace

}  // namespace vlasim

// Which SMs a lane of at least `sms` SMs (0: the whole device; from the GPU's end when
// from_end) runs its blocks on: the distinct %smid values of 4096 blocks launched on it,
// sorted, the first `max` written to `out`; returns how many there are, or -1 with the reason
// in `error` (error_len bytes). For the device check that two lanes share no SM.
extern "C" int vlasim_cuda_lane_sm_ids(int device, int sms, int from_end, int* out, int max, char* error,
                                       int error_len) {
  try {
    const auto lane = sms == 0 ? std::make_unique<vlasim::Lane>(device)
                               : std::make_unique<vlasim::Lane>(device, sms, from_end != 0);
    const std::vector<int> ids = vlasim::sm_ids(*lane);
    for (size_t i = 0; i < ids.size() && static_cast<int>(i) < max; ++i) out[i] = ids[i];
    return static_cast<int>(ids.size());
  } catch (const std::exception& e) {
    std::snprintf(error, static_cast<size_t>(error_len), "%s", e.what());
    return -1;
  }
}

