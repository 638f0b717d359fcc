#include "executors/cuda/cuda_executor.h"
#include "executors/cuda/green_context.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace vlasim {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda executor: ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuda executor: ") + what + ": cuBLASLt status " + std::to_string(int(s)));
}

// A device buffer of floats (or bf16), freed with the executor.
template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  int64_t n = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(int64_t count) : n(count) {
    check(cudaMalloc(&p, sizeof(T) * std::max<int64_t>(1, count)), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

// A [rows, cols] view into a device tensor: base + r * ld + c.
struct DView {
  const float* base = nullptr;
  int64_t ld = 0;
};

constexpr int kThreads = 256;
// At least one block: the kernels' grid-stride loops do nothing for n = 0.
int blocks_for(int64_t n) { return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535 * 16)); }

__device__ float act_fn(int act, float x) {
  switch (act) {
    case 1: return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));  // gelu tanh
    case 2: return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));                          // gelu erf
    case 3: return x / (1.f + expf(-x));                                                       // silu
    case 4: return x > 0.f ? x : 0.f;                                                           // relu
    default: return x;
  }
}

int act_code(Activation a) {
  switch (a) {
    case Activation::GeluTanh: return 1;
    case Activation::GeluErf: return 2;
    case Activation::Silu: return 3;
    case Activation::Relu: return 4;
    default: return 0;
  }
}

// dst[r, c] = src view (r, c) as a 16-bit float (fp16 when `half`, else bf16), contiguous
// [rows, cols], stored as its bits.
__global__ void to_16bit(uint16_t* dst, DView src, int64_t rows, int64_t cols, bool half) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    const float v = src.base[r * src.ld + c];
    dst[i] = half ? __half_as_ushort(__float2half_rn(v)) : __bfloat16_as_ushort(__float2bfloat16(v));
  }
}

// A contiguous copy of a view (fp32).
__global__ void gather_view(float* dst, DView src, int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    dst[i] = src.base[r * src.ld + c];
  }
}

// GEMM epilogue: acc [R, N] (N = 2C with gate_up) -> out [R, C].
__global__ void gemm_epilogue(float* out, const float* acc, int64_t R, int64_t C, int64_t N, const float* bias,
                              int act, bool gate_up, const float* gate, int64_t gate_ld, const float* res,
                              int64_t res_ld) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < R * C; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    float a = acc[r * N + c] + (bias ? bias[c] : 0.f);
    float v = act_fn(act, a);
    if (gate_up) v *= acc[r * N + C + c] + (bias ? bias[C + c] : 0.f);
    if (gate) v *= gate[r * gate_ld + c];
    if (res) v += res[r * res_ld + c];
    out[i] = v;
  }
}

// RoPE in place on the first `span` columns of out [R, C], per head of hd, position r % per.
__global__ void rope_kernel(float* out, int64_t R, int64_t C, int64_t span, int64_t hd, int64_t per) {
  const int64_t half = hd / 2, pairs = span / hd * half;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < R * pairs; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / pairs, k = i % pairs, h0 = (k / half) * hd, j = k % half;
    const double th = double(r % per) * pow(10000.0, -2.0 * double(j) / double(hd));
    const float cs = float(cos(th)), sn = float(sin(th));
    float* row = out + r * C + h0;
    const float x0 = row[j], x1 = row[half + j];
    row[j] = x0 * cs - x1 * sn;
    row[half + j] = x1 * cs + x0 * sn;
  }
}

// The block's max / sum of every thread's `v` (blockDim.x a power of two; `red` holds
// blockDim.x floats of shared memory). Every thread gets the result; `red` may be reused after.
template <bool kMax>
__device__ float block_reduce(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k)
      red[threadIdx.x] = kMax ? fmaxf(red[threadIdx.x], red[threadIdx.x + k]) : red[threadIdx.x] + red[threadIdx.x + k];
    __syncthreads();
  }
  const float out = red[0];
  __syncthreads();
  return out;
}
__device__ float block_max(float v, float* red) { return block_reduce<true>(v, red); }
__device__ float block_sum(float v, float* red) { return block_reduce<false>(v, red); }

// One block per (batch, head, query): scores in shared memory, softmax, weighted sum of V.
struct AttnArgs {
  DView q, k, v, ck, cv;
  float* out;
  int64_t B, H, KV, hd, q_len, kv_len, kv_cached, window, out_ld;
  bool causal;
};

__global__ void attention_kernel(AttnArgs a) {
  extern __shared__ float sc[];  // kv_len scores, then reduction scratch
  float* red = sc + a.kv_len;
  const int64_t idx = blockIdx.x;
  const int64_t i = idx % a.q_len, h = (idx / a.q_len) % a.H, b = idx / (a.q_len * a.H);
  const int64_t kvh = h / (a.H / a.KV), L = a.kv_len - a.kv_cached, pos = a.kv_len - a.q_len + i;
  const float scale = rsqrtf(float(a.hd));
  const float* qrow = a.q.base + (b * a.q_len + i) * a.q.ld + h * a.hd;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < a.kv_len; j += blockDim.x) {
    const bool ok = (!a.causal || j <= pos) && (a.window <= 0 || j / a.window == pos / a.window);
    float s = -INFINITY;
    if (ok) {
      const bool cached = j < a.kv_cached;
      const DView& K = cached ? a.ck : a.k;
      const int64_t row = cached ? b * a.kv_cached + j : b * L + (j - a.kv_cached);
      const float* krow = K.base + row * K.ld + kvh * a.hd;
      float d = 0.f;
      for (int64_t c = 0; c < a.hd; ++c) d += qrow[c] * krow[c];
      s = d * scale;
    }
    sc[j] = s;
    mx = fmaxf(mx, s);
  }
  mx = block_max(mx, red);
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < a.kv_len; j += blockDim.x) {
    const float e = isinf(sc[j]) ? 0.f : expf(sc[j] - mx);
    sc[j] = e;
    sum += e;
  }
  sum = block_sum(sum, red);
  for (int64_t c = threadIdx.x; c < a.hd; c += blockDim.x) {
    float acc = 0.f;
    for (int64_t j = 0; j < a.kv_len; ++j) {
      if (sc[j] == 0.f) continue;
      const bool cached = j < a.kv_cached;
      const DView& V = cached ? a.cv : a.v;
      const int64_t row = cached ? b * a.kv_cached + j : b * L + (j - a.kv_cached);
      acc += sc[j] * V.base[row * V.ld + kvh * a.hd + c];
    }
    a.out[(b * a.q_len + i) * a.out_ld + h * a.hd + c] = acc / sum;
  }
}

// One block per row: RMSNorm (shift null) or LayerNorm.
__global__ void norm_kernel(float* out, DView x, int64_t C, const float* scale, const float* shift) {
  __shared__ float red[kThreads];
  const int64_t r = blockIdx.x;
  const float* row = x.base + r * x.ld;
  float mean = 0.f;
  if (shift) {
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += row[c];
    mean = block_sum(s, red) / float(C);
  }
  float v = 0.f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) v += (row[c] - mean) * (row[c] - mean);
  const float inv = rsqrtf(block_sum(v, red) / float(C) + 1e-6f);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    out[r * C + c] = (row[c] - mean) * inv * scale[c] + (shift ? shift[c] : 0.f);
}

// Elementwise ops: 0 add, 1 mul, 2 sub (b - a), 3 euler (a + dt b), 4 bias add, 5 activation
// `act` of a (copy: none).
__global__ void eltwise_kernel(float* out, DView a, DView b, const float* bias, int64_t R, int64_t C, int op,
                               int act, float dt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < R * C; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    const float x = a.base[r * a.ld + c];
    float y;
    switch (op) {
      case 0: y = x + b.base[r * b.ld + c]; break;
      case 1: y = x * b.base[r * b.ld + c]; break;
      case 2: y = b.base[r * b.ld + c] - x; break;
      case 3: y = x + dt * b.base[r * b.ld + c]; break;
      case 4: y = x + bias[c]; break;
      default: y = act_fn(act, x); break;
    }
    out[i] = y;
  }
}

// Softmax per row: one block per row.
__global__ void softmax_kernel(float* out, DView a, int64_t C) {
  __shared__ float red[kThreads];
  const int64_t r = blockIdx.x;
  const float* row = a.base + r * a.ld;
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) mx = fmaxf(mx, row[c]);
  mx = block_max(mx, red);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += expf(row[c] - mx);
  s = block_sum(s, red);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) out[r * C + c] = expf(row[c] - mx) / s;
}

// Rows of a table gathered by (float-held) indices.
__global__ void embedding_kernel(float* out, DView idx, const float* table, int64_t R, int64_t C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < R * C; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / C, c = i % C;
    out[i] = table[int64_t(idx.base[r * idx.ld]) * C + c];
  }
}

// Block copy of a concatenation: rows of a view to out rows/cols.
__global__ void block_copy(float* out, int64_t out_ld, int64_t dst_row, int64_t dst_col, DView src, int64_t src_row,
                           int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    out[(dst_row + r) * out_ld + dst_col + c] = src.base[(src_row + r) * src.ld + c];
  }
}

// What cuBLASLt adds to a product in its epilogue: a bias per output column, an activation
// it has (act_code 1 GELU-tanh, 4 ReLU; 0 none) applied after the bias, and `c` (an fp32
// [R, N] view with row stride ldc, added with beta 1 before the activation: a residual when
// there is none).
struct LtEpilogue {
  const float* bias = nullptr;
  int act = 0;
  const float* c = nullptr;
  int64_t ldc = 0;
};

class CudaExecutor : public Executor {
 public:
  explicit CudaExecutor(CudaOptions opt) : opt_(opt) {
    if (opt_.dtype != DType::BF16 && opt_.dtype != DType::F16 && opt_.dtype != DType::F32)
      throw std::invalid_argument(std::string("cuda executor: dtype ") + to_string(opt_.dtype) +
                                  " is not supported (bf16, fp16, fp32)");
    int n = 0;
    check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    if (opt_.device < 0 || opt_.device >= n)
      throw std::runtime_error("cuda executor: no CUDA device " + std::to_string(opt_.device) + " (" +
                               std::to_string(n) + " present)");
    check(cudaSetDevice(opt_.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, opt_.device), "cudaGetDeviceProperties");
    device_ = std::string("cuda ") + std::to_string(opt_.device) + " (" + prop.name + ", " +
              std::to_string(prop.multiProcessorCount) + " SMs), cuBLASLt, " + to_string(opt_.dtype);
    device_sms_ = prop.multiProcessorCount;
    check_sm_limit(opt_.sms);
    lane_ = own_ = &lane(opt_.sms);
    if (own_->sms() > 0) device_ += ", green context of " + std::to_string(own_->sms()) + " SMs";
    check(cublasLtCreate(&lt_), "cublasLtCreate");
    workspace_ = DeviceBuffer<char>(kWorkspace);
  }
  ~CudaExecutor() override {
    for (auto& s : segments_)
      for (auto& [l, ls] : s.lanes) {
        const Bound bound(l);
        for (auto& e : ls.events) cudaEventDestroy(e);
        if (ls.graph) cudaGraphExecDestroy(ls.graph);
      }
    if (lt_) cublasLtDestroy(lt_);
  }

  int set_sm_limit(int sms) override {
    check_sm_limit(sms);
    lane_ = sms == 0 ? own_ : &lane(sms);
    return lane_->sms() > 0 ? lane_->sms() : device_sms_;
  }

  int prepare(const OpGraph& g, const std::vector<int>& ops) override {
    const Bound bound(lane_);
    Segment s;
    s.g = &g;
    s.plan = plan_segment(g, ops);
    int64_t bytes = 0;
    for (const TensorInfo& t : segment_inputs(s.plan)) bytes += 4 * t.elems();
    for (const OpPlan& p : s.plan) bytes += 4 * p.out.elems();
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (static_cast<uint64_t>(bytes) > free_b)
      throw std::runtime_error("cuda executor: the segment needs " + std::to_string(bytes >> 20) + " MiB but only " +
                               std::to_string(free_b >> 20) + " MiB are free on the device");
    for (const TensorInfo& t : segment_inputs(s.plan)) {
      std::vector<float> f(static_cast<size_t>(t.elems()));
      fill_input(t, opt_.seed, f.data());
      if (!t.is_int)
        for (float& x : f) x = round_to(opt_.dtype, x);
      s.tensors.emplace(t.key, upload(f));
    }
    for (const OpPlan& p : s.plan) {
      s.tensors.emplace(p.out.key, DeviceBuffer<float>(p.out.elems()));
      s.timing.ops.push_back(p.op);
      const Op& o = g.op(p.op);  // parameters now, so that run() allocates nothing
      if (o.kind == OpKind::Gemm) {
        gemm_weight(o);
        if (o.epi.bias) weight(o, "b", o.n);
        scratch(p.out.rows * o.n, p.out.rows * o.k);
      } else if (o.kind == OpKind::Norm) {
        weight(o, "scale", p.out.cols);
        if (o.fn == OpFn::LayerNorm) weight(o, "shift", p.out.cols);
      } else if (o.kind == OpKind::Elementwise && o.fn == OpFn::BiasAdd) {
        weight(o, "b", p.out.cols);
      } else if (o.kind == OpKind::Embedding) {
        weight(o, "table", o.vocab * p.out.cols);
      } else if (o.kind == OpKind::Attention && o.kv_len > kMaxKeys) {
        throw std::invalid_argument("cuda executor: op '" + o.name + "' attends to " + std::to_string(o.kv_len) +
                                    " keys; this kernel holds at most " + std::to_string(kMaxKeys));
      }
    }
    s.timing.seconds.assign(s.plan.size(), 0.0);
    segments_.push_back(std::move(s));
    state(segments_.back());  // the events of the lane it runs on now
    return static_cast<int>(segments_.size()) - 1;
  }

  const SegmentTiming& run(int segment) override {
    Segment& s = seg(segment);
    const Bound bound(lane_);
    LaneState& ls = state(s);
    if (!opt_.graph) return run_eager(s, ls);
    if (!ls.graph) {
      // The first run on a lane goes kernel by kernel (its per-op times are kept), then the
      // segment is captured once for the lane: its buffers, weights and scratch exist since
      // prepare(), so the captured kernels allocate and copy nothing.
      run_eager(s, ls);
      ls.eager_seconds = s.timing.seconds;
      ls.eager_total = s.timing.total;
      cudaGraph_t g = nullptr;
      check(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      try {
        for (const OpPlan& p : s.plan) run_op(s, p);
      } catch (...) {
        cudaStreamEndCapture(stream(), &g);
        if (g) cudaGraphDestroy(g);
        throw;
      }
      check(cudaStreamEndCapture(stream(), &g), "cudaStreamEndCapture");
      const cudaError_t e = cudaGraphInstantiate(&ls.graph, g, 0);
      cudaGraphDestroy(g);
      check(e, "cudaGraphInstantiate");
    }
    check(cudaEventRecord(ls.events.front(), stream()), "cudaEventRecord");
    check(cudaGraphLaunch(ls.graph, stream()), "cudaGraphLaunch");
    check(cudaEventRecord(ls.events.back(), stream()), "cudaEventRecord");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ls.events.front(), ls.events.back()), "cudaEventElapsedTime");
    s.timing.total = ms * 1e-3;
    // A replayed graph has no per-op times: each op gets its share of the kernel-by-kernel
    // run on the lane, scaled to the replay's total.
    const double scale = ls.eager_total > 0 ? s.timing.total / ls.eager_total : 0;
    for (size_t i = 0; i < s.plan.size(); ++i) s.timing.seconds[i] = ls.eager_seconds[i] * scale;
    return s.timing;
  }

  std::vector<TensorInfo> inputs(int segment) const override { return segment_inputs(seg(segment).plan); }

  void set_input(int segment, TensorKey key, const std::vector<float>& data) override {
    const Bound bound(lane_);
    Segment& s = seg(segment);
    for (const TensorInfo& t : segment_inputs(s.plan))
      if (t.key == key) {
        if (static_cast<int64_t>(data.size()) != t.elems())
          throw std::invalid_argument("set_input: " + input_key(key) + " holds " + std::to_string(t.elems()) +
                                      " values, got " + std::to_string(data.size()));
        std::vector<float> f(data);
        for (float& x : f) x = t.is_int ? std::round(x) : round_to(opt_.dtype, x);
        copy_in(s.tensors.at(key).p, f);
        return;
      }
    throw std::invalid_argument("set_input: " + input_key(key) + " is not an input of segment " +
                                std::to_string(segment));
  }

  std::vector<float> get_output(int segment, int op) const override {
    const Bound bound(lane_);
    const Segment& s = seg(segment);
    auto it = s.tensors.find(TensorKey{op, -1});
    if (it == s.tensors.end())
      throw std::invalid_argument("get_output: op " + std::to_string(op) + " is not in segment " +
                                  std::to_string(segment));
    std::vector<float> out(static_cast<size_t>(it->second.n));
    check(cudaMemcpyAsync(out.data(), it->second.p, 4 * out.size(), cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    return out;
  }

  std::string name() const override { return "cuda"; }
  std::string device() const override { return device_; }

 private:
  static constexpr int64_t kWorkspace = 32 << 20;
  static constexpr int64_t kMaxKeys = 8192;  // scores of one query in shared memory (32 KB)

  // What a segment keeps per lane it has run on (events and graphs belong to a context).
  struct LaneState {
    std::vector<cudaEvent_t> events;  // before and after each op
    cudaGraphExec_t graph = nullptr;  // with opt_.graph: the segment captured after its first run here
    std::vector<double> eager_seconds;  // that first run's per-op times
    double eager_total = 0;
  };

  struct Segment {
    const OpGraph* g = nullptr;
    std::vector<OpPlan> plan;
    std::map<TensorKey, DeviceBuffer<float>> tensors;
    SegmentTiming timing;
    std::map<const Lane*, LaneState> lanes;
  };

  // The lane (the whole device for 0 SMs, else a green context) for an SM limit, made on first
  // use and kept: a lockstep's splits come back to the same few limits.
  Lane& lane(int sms) {
    std::unique_ptr<Lane>& l = lanes_[sms];
    if (!l)
      l = sms == 0 || sms == device_sms_ ? std::make_unique<Lane>(opt_.device)
                                         : std::make_unique<Lane>(opt_.device, sms, opt_.sms_from_end);
    return *l;
  }

  // s's state on the current lane; its events are created the first time (a segment's first
  // run under a new SM limit creates them; prepare() creates those of the lane it runs on).
  LaneState& state(Segment& s) {
    LaneState& ls = s.lanes[lane_];
    while (ls.events.size() < 2 * s.plan.size() || ls.events.size() < 2) {
      cudaEvent_t e;
      check(cudaEventCreate(&e), "cudaEventCreate");
      ls.events.push_back(e);
    }
    return ls;
  }

  cudaStream_t stream() const { return lane_->stream(); }

  // Throws std::invalid_argument unless 0 <= sms <= the GPU's SMs.
  void check_sm_limit(int sms) const {
    if (sms < 0 || sms > device_sms_)
      throw std::invalid_argument("cuda executor: an SM limit of " + std::to_string(sms) + " on a GPU of " +
                                  std::to_string(device_sms_) + " SMs");
  }

  // The lane's context current on this thread for a call's duration.
  struct Bound {
    const Lane* lane;
    explicit Bound(const Lane* l) : lane(l) { lane->bind(); }
    ~Bound() { lane->unbind(); }
  };
  bool half() const { return opt_.dtype == DType::F16; }

  // One run kernel by kernel, each op between two events.
  const SegmentTiming& run_eager(Segment& s, LaneState& ls) {
    for (size_t i = 0; i < s.plan.size(); ++i) {
      check(cudaEventRecord(ls.events[2 * i], stream()), "cudaEventRecord");
      run_op(s, s.plan[i]);
      check(cudaGetLastError(), "kernel launch");
      check(cudaEventRecord(ls.events[2 * i + 1], stream()), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    for (size_t i = 0; i < s.plan.size(); ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, ls.events[2 * i], ls.events[2 * i + 1]), "cudaEventElapsedTime");
      s.timing.seconds[i] = ms * 1e-3;
    }
    s.timing.total = 0;
    if (!s.plan.empty()) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, ls.events.front(), ls.events.back()), "cudaEventElapsedTime");
      s.timing.total = ms * 1e-3;
    }
    return s.timing;
  }

  Segment& seg(int id) {
    if (id < 0 || static_cast<size_t>(id) >= segments_.size())
      throw std::out_of_range("cuda executor: no segment " + std::to_string(id));
    return segments_[static_cast<size_t>(id)];
  }
  const Segment& seg(int id) const { return const_cast<CudaExecutor*>(this)->seg(id); }

  // Host to device on the executor's stream, complete when it returns.
  void copy_in(float* dst, const std::vector<float>& f) {
    check(cudaMemcpyAsync(dst, f.data(), 4 * f.size(), cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }

  DeviceBuffer<float> upload(const std::vector<float>& f) {
    DeviceBuffer<float> d(static_cast<int64_t>(f.size()));
    copy_in(d.p, f);
    return d;
  }

  // Parameter `part` of `o` (n values, rounded to the dtype), uploaded once per param_key.
  const float* weight(const Op& o, const char* part, int64_t n) {
    const std::string key = param_key(o, part);
    auto it = weights_.find(key);
    if (it != weights_.end() && it->second.n == n) return it->second.p;
    std::vector<float> f(static_cast<size_t>(n));
    fill_weight(o, part, opt_.seed, f.data(), n);
    for (float& x : f) x = round_to(opt_.dtype, x);
    if (it != weights_.end()) drop_graphs();  // captured graphs read the buffer it replaces
    return (weights_[key] = upload(f)).p;
  }

  // The GEMM's W [k, n] as the cuBLASLt operand: bf16, fp16 or fp32.
  const void* gemm_weight(const Op& o) {
    const float* w = weight(o, "w", o.k * o.n);
    if (opt_.dtype == DType::F32) return w;
    const std::string key = param_key(o, "w");
    auto it = weights16_.find(key);
    if (it != weights16_.end() && it->second.n == o.k * o.n) return it->second.p;
    if (it != weights16_.end()) drop_graphs();
    DeviceBuffer<uint16_t> d(o.k * o.n);
    to_16bit<<<blocks_for(o.k * o.n), kThreads, 0, stream()>>>(d.p, DView{w, o.n}, o.k, o.n, half());
    check(cudaStreamSynchronize(stream()), "weight to 16 bits");
    return (weights16_[key] = std::move(d)).p;
  }

  // GEMM accumulator [rows, n] and 16-bit X [rows, k] scratch, grown to the largest.
  void scratch(int64_t acc, int64_t x) {
    if (acc_.n < acc || x16_.n < x || x32_.n < x) drop_graphs();  // captured graphs read the old ones
    if (acc_.n < acc) acc_ = DeviceBuffer<float>(acc);
    if (x16_.n < x) x16_ = DeviceBuffer<uint16_t>(x);
    if (x32_.n < x) x32_ = DeviceBuffer<float>(x);
  }

  // Forgets every captured graph (each segment is captured again at its next run on a lane):
  // a graph holds the addresses of the buffers it read when captured.
  void drop_graphs() {
    for (Segment& s : segments_)
      for (auto& [l, ls] : s.lanes)
        if (ls.graph) {
          cudaGraphExecDestroy(ls.graph);
          ls.graph = nullptr;
        }
  }

  DView view(Segment& s, const OpPlan& p, int role) {
    const Slot& sl = p.in[role];
    return DView{s.tensors.at(sl.t.key).p + sl.offset(), sl.t.cols};
  }

  // d[R, N] (row stride ldd) = epilogue(X[R, K] W[K, N]) (row-major), fp32 accumulate: in
  // cuBLASLt's column-major terms d^T [N, R] = W^T [N, K] X^T [K, R] with no transposes.
  // Returns cuBLASLt's status (NOT_SUPPORTED when it has no kernel for the epilogue); nothing
  // is enqueued unless it is SUCCESS.
  cublasStatus_t try_matmul(float* d, int64_t ldd, const void* w, const void* x, int64_t ldx, int64_t R, int64_t N,
                            int64_t K, const LtEpilogue& e = {}) {
    const cudaDataType_t ab = opt_.dtype == DType::BF16 ? CUDA_R_16BF : opt_.dtype == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
    auto destroy = [&] {
      if (ld) cublasLtMatrixLayoutDestroy(ld);
      if (lc) cublasLtMatrixLayoutDestroy(lc);
      if (lb) cublasLtMatrixLayoutDestroy(lb);
      if (la) cublasLtMatrixLayoutDestroy(la);
      if (op) cublasLtMatmulDescDestroy(op);
    };
    cublasStatus_t st = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS) {
      const cublasLtEpilogue_t epi = e.act == 1 ? (e.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                     : e.act == 4 ? (e.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                                                  : (e.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
      st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
      // On a green context, kernels sized for the SMs it has.
      const int32_t sms = lane_->sms();
      if (st == CUBLAS_STATUS_SUCCESS && sms > 0)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sms, sizeof(sms));
      if (st == CUBLAS_STATUS_SUCCESS && e.bias)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &e.bias, sizeof(e.bias));
    }
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&la, ab, N, K, N);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&lb, ab, K, R, ldx);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, N, R, ldd);
    if (st == CUBLAS_STATUS_SUCCESS && e.c) st = cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, R, e.ldc);
    if (st == CUBLAS_STATUS_SUCCESS) {
      const float one = 1.f, zero = 0.f;
      st = cublasLtMatmul(lt_, op, &one, w, la, x, lb, e.c ? &one : &zero, e.c ? e.c : d, e.c ? lc : ld, d, ld,
                          nullptr, workspace_.p, kWorkspace, stream());
    }
    destroy();
    return st;
  }

  void run_op(Segment& s, const OpPlan& p) {
    const Op& o = s.g->op(p.op);
    float* out = s.tensors.at(p.out.key).p;
    const int64_t R = p.out.rows, C = p.out.cols, n = R * C;
    const int grid = blocks_for(n);
    switch (o.kind) {
      case OpKind::Gemm: {
        const int64_t K = o.k, N = o.n;
        const DView x = view(s, p, kX);
        const void* xa = x.base;
        int64_t ldx = x.ld;
        if (opt_.dtype != DType::F32) {
          to_16bit<<<blocks_for(R * K), kThreads, 0, stream()>>>(x16_.p, x, R, K, half());
          xa = x16_.p;
          ldx = K;
        } else if (reinterpret_cast<uintptr_t>(x.base) % 16 != 0) {  // cuBLASLt wants aligned operands
          gather_view<<<blocks_for(R * K), kThreads, 0, stream()>>>(x32_.p, x, R, K);
          xa = x32_.p;
          ldx = K;
        }
        const float* bias = o.epi.bias ? weight(o, "b", N) : nullptr;
        const DView gate = o.epi.gate ? view(s, p, kGate) : DView{};
        const DView res = o.epi.residual ? view(s, p, kResidual) : DView{};
        const int act = act_code(o.epi.act);
        // cuBLASLt's epilogue takes the bias, GELU-tanh or ReLU, and a residual without an
        // activation (its C is added before the activation); an aligned residual only.
        const bool fuse = opt_.fuse_epilogue && !o.epi.gate_up && !o.epi.gate && C == N &&
                          (act == 0 || act == 1 || act == 4) && (!o.epi.residual || act == 0) &&
                          (!res.base || (reinterpret_cast<uintptr_t>(res.base) % 16 == 0 && res.ld % 4 == 0));
        // A GEMM cuBLASLt once had no fused kernel for is not asked again on every run.
        if (!fuse || unfusable_.count(&o) ||
            try_matmul(out, C, gemm_weight(o), xa, ldx, R, N, K, LtEpilogue{bias, act, res.base, res.ld}) !=
                CUBLAS_STATUS_SUCCESS) {
          if (fuse) unfusable_.insert(&o);
          check(try_matmul(acc_.p, N, gemm_weight(o), xa, ldx, R, N, K), "cublasLtMatmul");
          gemm_epilogue<<<grid, kThreads, 0, stream()>>>(out, acc_.p, R, C, N, bias, act, o.epi.gate_up, gate.base,
                                                        gate.ld, res.base, res.ld);
        }
        if (o.epi.rope())
          rope_kernel<<<blocks_for(R * o.epi.rope_cols / 2), kThreads, 0, stream()>>>(
              out, R, C, o.epi.rope_cols, o.epi.rope_head_dim, R / o.epi.rope_batch);
        break;
      }
      case OpKind::Attention: {
        AttnArgs a;
        a.q = view(s, p, kQ);
        a.k = p.in[kK].used ? view(s, p, kK) : DView{};
        a.v = p.in[kV].used ? view(s, p, kV) : DView{};
        a.ck = p.in[kCacheK].used ? view(s, p, kCacheK) : DView{};
        a.cv = p.in[kCacheV].used ? view(s, p, kCacheV) : DView{};
        a.out = out;
        a.B = o.batch, a.H = o.heads, a.KV = o.kv_heads, a.hd = o.head_dim, a.q_len = o.q_len;
        a.kv_len = o.kv_len, a.kv_cached = o.kv_cached, a.window = o.window, a.out_ld = C, a.causal = o.causal;
        const size_t shared = sizeof(float) * (o.kv_len + kThreads);
        if (o.batch * o.heads * o.q_len > 0)
          attention_kernel<<<static_cast<unsigned>(o.batch * o.heads * o.q_len), kThreads, shared, stream()>>>(a);
        break;
      }
      case OpKind::Norm: {
        const float* sc = weight(o, "scale", C);
        const float* sh = o.fn == OpFn::LayerNorm ? weight(o, "shift", C) : nullptr;
        if (R > 0) norm_kernel<<<static_cast<unsigned>(R), kThreads, 0, stream()>>>(out, view(s, p, kA), C, sc, sh);
        break;
      }
      case OpKind::Elementwise: {
        if (!p.parts.empty()) {
          for (const ConcatBlock& b : concat_blocks(p)) {
            const Slot& sl = p.parts[static_cast<size_t>(b.part)];
            const DView v{s.tensors.at(sl.t.key).p + sl.offset(), sl.t.cols};
            block_copy<<<blocks_for(b.rows * sl.width), kThreads, 0, stream()>>>(out, C, b.dst_row, b.dst_col, v,
                                                                                 b.src_row, b.rows, sl.width);
          }
          break;
        }
        const DView a = view(s, p, kA);
        const DView b = p.in[kB].used ? view(s, p, kB) : DView{};
        switch (o.fn) {
          case OpFn::Add: eltwise_kernel<<<grid, kThreads, 0, stream()>>>(out, a, b, nullptr, R, C, 0, 0, 0.f); break;
          case OpFn::Mul: eltwise_kernel<<<grid, kThreads, 0, stream()>>>(out, a, b, nullptr, R, C, 1, 0, 0.f); break;
          case OpFn::Sub: eltwise_kernel<<<grid, kThreads, 0, stream()>>>(out, a, b, nullptr, R, C, 2, 0, 0.f); break;
          case OpFn::EulerUpdate:
            eltwise_kernel<<<grid, kThreads, 0, stream()>>>(out, a, b, nullptr, R, C, 3, 0, float(p.dt));
            break;
          case OpFn::BiasAdd:
            eltwise_kernel<<<grid, kThreads, 0, stream()>>>(out, a, b, weight(o, "b", C), R, C, 4, 0, 0.f);
            break;
          case OpFn::Gelu: case OpFn::Silu: case OpFn::Copy:
            eltwise_kernel<<<grid, kThreads, 0, stream()>>>(
                out, a, b, nullptr, R, C, 5,
                o.fn == OpFn::Gelu ? 1 : o.fn == OpFn::Silu ? 3 : 0, 0.f);
            break;
          case OpFn::Softmax:
            if (R > 0) softmax_kernel<<<static_cast<unsigned>(R), kThreads, 0, stream()>>>(out, a, C);
            break;
          case OpFn::RoPE: {
            const int64_t hd = o.head_dim > 0 ? o.head_dim : C;
            eltwise_kernel<<<grid, kThreads, 0, stream()>>>(out, a, b, nullptr, R, C, 5, 0, 0.f);
            const int64_t span = o.heads > 0 ? (o.heads + o.kv_heads) * hd : C;
            rope_kernel<<<blocks_for(R * span / 2), kThreads, 0, stream()>>>(out, R, C, span, hd, R / o.batch);
            break;
          }
          default:
            throw std::logic_error("cuda executor: unplanned elementwise fn in op '" + o.name + "'");
        }
        break;
      }
      case OpKind::Embedding:
        embedding_kernel<<<grid, kThreads, 0, stream()>>>(out, view(s, p, kIndices), weight(o, "table", o.vocab * C), R, C);
        break;
      case OpKind::Transfer:
        if (n > 0)
          check(cudaMemcpyAsync(out, s.tensors.at(p.in[kA].t.key).p, 4 * n, cudaMemcpyDeviceToDevice, stream()),
                "transfer copy");
        break;
    }
  }

  CudaOptions opt_;
  std::string device_;
  int device_sms_ = 0;
  // Declared before every device buffer, so that lanes (streams, green contexts) outlive them.
  std::map<int, std::unique_ptr<Lane>> lanes_;  // by SM limit (0: the whole device)
  Lane* own_ = nullptr;   // the lane of opt_.sms
  Lane* lane_ = nullptr;  // the lane kernels run on now (set_sm_limit)
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer<char> workspace_;
  DeviceBuffer<float> acc_, x32_;
  DeviceBuffer<uint16_t> x16_;
  std::map<std::string, DeviceBuffer<float>> weights_;
  std::map<std::string, DeviceBuffer<uint16_t>> weights16_;
  std::vector<Segment> segments_;
  std::set<const Op*> unfusable_;  // GEMMs whose fused epilogue cuBLASLt has no kernel for
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const CudaOptions& opt) { return std::make_unique<CudaExecutor>(opt); }

}  // namespace vlasim

extern "C" vlasim::Executor* vlasim_make_cuda_executor(const vlasim::CudaOptions* opt) {
  return vlasim::make_cuda_executor(*opt).release();
}
