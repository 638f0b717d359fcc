#include "executors/onednn_executor.h"

#include <oneapi/dnnl/dnnl.h>
#include <sys/mman.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <new>
#include <set>
#include <stdexcept>

#include "executors/core_worker.h"
#include "executors/onednn_kernels.h"

namespace vlasim {

using onednn::Buffer;
using onednn::Context;
using onednn::Exec;
using onednn::Kernel;

namespace onednn {

namespace {
constexpr size_t kArenaChunk = size_t{32} << 20;  // a mapping's size, unless one request is larger
constexpr size_t kPage = 4096;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
}  // namespace

char* Arena::take(size_t bytes) {
  const size_t n = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  if (kSanitized) {
    char* p = static_cast<char*>(::operator new(n, std::align_val_t(64)));
    std::memset(p, 0, n);
    chunks_.push_back({p, n, n});
    mapped_ += n;
    return p;
  }
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < n) {
    const size_t size = std::max(kArenaChunk, (n + kPage - 1) / kPage * kPage);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    chunks_.push_back({static_cast<char*>(p), size, 0});
    mapped_ += size;
  }
  Chunk& c = chunks_.back();
  char* p = c.base + c.used;
  c.used += n;
  std::memset(p, 0, n);  // fresh pages are zero; touching them now keeps page faults out of the timed runs
  return p;
}

Arena::~Arena() {
  for (const Chunk& c : chunks_) {
    if (kSanitized) ::operator delete(c.base, std::align_val_t(64));
    else munmap(c.base, c.size);
  }
}

void Exec::arg(int id, const dnnl::memory& m) {
  mems.push_back(m);
  args.push_back(dnnl_exec_arg_t{id, m.get()});
}

void Exec::bind_scratch(const dnnl::engine& eng, void* ptr) {
  if (scratch_bytes() > 0) arg(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md, eng, ptr));
}

void Exec::run(const dnnl::stream& s) const {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(prim.get(), s.get(), static_cast<int>(args.size()), args.data()),
      "could not execute a primitive");
}

dnnl::memory::data_type Context::dt() const {
  return dtype == DType::BF16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

char* Context::ptr(const TensorInfo& t) const { return tensors->at(t.key).data(); }

char* Context::ptr(const Slot& s) const {
  return tensors->at(s.t.key).data() + s.offset() * (s.t.is_int ? 4 : elem_bytes());
}

dnnl::memory Context::matrix(const Op& o, const char* part, int64_t rows, int64_t full_cols,
                             int64_t col0, int64_t cols, const dnnl::memory::desc& target) const {
  std::string key = param_key(o, part) + "@" + std::to_string(col0) + "+" + std::to_string(cols);
  auto& list = weights->mats[key];
  for (auto& [md, mem] : list)
    if (md == target) return mem;
  std::vector<float> plain(static_cast<size_t>(rows * full_cols));
  fill_weight(o, part, seed, plain.data(), rows * full_cols);
  dnnl::memory::desc smd({rows, cols}, dnnl::memory::data_type::f32, dnnl::memory::dims{full_cols, 1});
  dnnl::memory src(smd, eng, plain.data() + col0);
  dnnl::memory dst(target, eng, arena->take(target.get_size()));
  dnnl::stream s(eng);
  dnnl::reorder(src, dst).execute(s, src, dst);
  s.wait();
  list.push_back({target, dst});
  return dst;
}

const std::vector<float>& Context::vec(const Op& o, const char* part, int64_t n) const {
  std::string key = param_key(o, part);
  auto it = weights->vecs.find(key);
  if (it != weights->vecs.end() && static_cast<int64_t>(it->second.size()) == n) return it->second;
  std::vector<float> v(static_cast<size_t>(n));
  fill_weight(o, part, seed, v.data(), n);
  for (float& x : v) x = round_to(dtype, x);
  return weights->vecs[key] = std::move(v);
}

uint64_t kernel_temp_bytes(const Op& o, const OpPlan& p, DType dtype, GateUpMode mode) {
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(dtype));
  switch (o.kind) {
    case OpKind::Gemm:
      if (!o.epi.gate_up) return 0;
      return static_cast<uint64_t>(p.out.rows) *
             static_cast<uint64_t>(mode == GateUpMode::TwoMatmuls ? p.out.cols : o.n) * eb;
    case OpKind::Attention:
      return static_cast<uint64_t>(o.batch * o.heads * o.q_len * o.kv_len) * (4 + eb);
    default:
      return 0;
  }
}

}  // namespace onednn

struct OneDnnExecutor::Impl {
  struct Segment {
    const OpGraph* g = nullptr;
    std::vector<OpPlan> plan;
    std::vector<TensorInfo> inputs;
    std::map<TensorKey, Buffer> tensors;
    std::vector<std::unique_ptr<Kernel>> kernels;
    Buffer scratch;
    SegmentTiming timing;
  };

  ExecOptions opt;
  GateUpMode mode = GateUpMode::TwoMatmuls;
  std::unique_ptr<CoreWorker> worker;
  dnnl::engine eng;
  dnnl::stream strm;
  onednn::Arena arena;  // before the weights and segments: released after them
  onednn::WeightCache weights;
  std::vector<std::unique_ptr<Segment>> segs;

  Segment& seg(int id) const {
    if (id < 0 || static_cast<size_t>(id) >= segs.size())
      throw std::out_of_range("onednn executor: no segment " + std::to_string(id));
    return *segs[static_cast<size_t>(id)];
  }

  void fill(Buffer& b, const TensorInfo& t, const float* v) const {
    if (t.is_int) {
      int32_t* d = reinterpret_cast<int32_t*>(b.data());
      for (int64_t i = 0; i < t.elems(); ++i) {
        long long x = std::llround(v[i]);
        if (x < 0 || x >= t.int_limit)
          throw std::invalid_argument("set_input: index " + std::to_string(x) + " of " +
                                      input_key(t.key) + " outside [0, " +
                                      std::to_string(t.int_limit) + ")");
        d[i] = static_cast<int32_t>(x);
      }
    } else if (opt.dtype == DType::BF16) {
      uint16_t* d = reinterpret_cast<uint16_t*>(b.data());
      for (int64_t i = 0; i < t.elems(); ++i) d[i] = onednn::f32_to_bf16(v[i]);
    } else {
      std::memcpy(b.data(), v, static_cast<size_t>(t.elems()) * 4);
    }
  }

  int prepare(const OpGraph& g, const std::vector<int>& ops) {
    auto s = std::make_unique<Segment>();
    s->g = &g;
    s->plan = plan_segment(g, ops);
    s->inputs = segment_inputs(s->plan);
    check_memory(estimate_bytes(g, ops, opt.dtype),
                 "onednn executor: segment of " + std::to_string(ops.size()) + " ops (first '" +
                     g.op(ops.front()).name + "')");
    const int64_t eb = dtype_bytes(opt.dtype);
    for (const OpPlan& p : s->plan)
      s->tensors.emplace(p.out.key, Buffer(arena, static_cast<size_t>(p.out.elems() * eb)));
    for (const TensorInfo& t : s->inputs) {
      Buffer& b = s->tensors.emplace(t.key, Buffer(arena, static_cast<size_t>(t.elems() * (t.is_int ? 4 : eb))))
                      .first->second;
      std::vector<float> v(static_cast<size_t>(t.elems()));
      fill_input(t, opt.seed, v.data());
      fill(b, t, v.data());
    }
    Context c;
    c.eng = eng;
    c.dtype = opt.dtype;
    c.seed = opt.seed;
    c.gate_up = mode;
    c.g = &g;
    c.tensors = &s->tensors;
    c.weights = &weights;
    c.arena = &arena;
    size_t scratch = 0;
    for (const OpPlan& p : s->plan) {
      const Op& o = g.op(p.op);
      std::unique_ptr<Kernel> k;
      try {
        if (o.kind == OpKind::Gemm) k = onednn::make_gemm(c, p);
        else if (o.kind == OpKind::Attention) k = onednn::make_attention(c, p);
        else k = onednn::make_loop_kernel(c, p);
      } catch (const dnnl::error& e) {
        throw std::invalid_argument("onednn executor: cannot create primitives for op " +
                                    std::to_string(o.id) + " '" + o.name + "': " + e.what());
      }
      for (Exec* e : k->execs()) scratch = std::max(scratch, e->scratch_bytes());
      s->kernels.push_back(std::move(k));
      s->timing.ops.push_back(p.op);
    }
    s->scratch = Buffer(arena, scratch);
    for (auto& k : s->kernels)
      for (Exec* e : k->execs()) e->bind_scratch(eng, s->scratch.data());
    s->timing.seconds.assign(s->plan.size(), 0.0);
    segs.push_back(std::move(s));
    return static_cast<int>(segs.size()) - 1;
  }

  void run(Segment& s) {
    using clock = std::chrono::steady_clock;
    const double cpu0 = thread_cpu_seconds();
    const auto t0 = clock::now();
    auto prev = t0;
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      s.kernels[i]->run(strm);
      const auto now = clock::now();
      s.timing.seconds[i] = std::chrono::duration<double>(now - prev).count();
      prev = now;
    }
    s.timing.total = std::chrono::duration<double>(prev - t0).count();
    const double cpu1 = thread_cpu_seconds();
    s.timing.cpu = cpu0 >= 0 && cpu1 >= cpu0 ? cpu1 - cpu0 : -1;
  }
  // The calling thread's CPU time in seconds; -1 when the clock cannot be read.
  static double thread_cpu_seconds() {
    timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
};

OneDnnExecutor::OneDnnExecutor(ExecOptions opt, GateUpMode gate_up) : impl_(std::make_unique<Impl>()) {
  if (opt.dtype != DType::F32 && opt.dtype != DType::BF16)
    throw std::invalid_argument(std::string("onednn executor: dtype ") + to_string(opt.dtype) +
                                " is not supported (bf16, fp32)");
  if (std::string why = cpu_dtype_problem(opt.dtype); !why.empty())
    throw std::invalid_argument("onednn executor: " + why);
  opt.cpus = check_cpus(opt.cpus);
  impl_->opt = opt;
  impl_->mode = gate_up;
  impl_->worker = std::make_unique<CoreWorker>(opt.cpus);
  Impl* im = impl_.get();
  auto init = [im] {
    im->eng = dnnl::engine(dnnl::engine::kind::cpu, 0);
    im->strm = dnnl::stream(im->eng);
  };
  impl_->worker->call(init);
}

OneDnnExecutor::~OneDnnExecutor() {
  // Primitives and memory are released on the worker thread that made them.
  Impl* im = impl_.get();
  auto release = [im] {
    im->segs.clear();
    im->weights = onednn::WeightCache();
  };
  try {
    im->worker->call(release);
  } catch (...) {
  }
}

int OneDnnExecutor::prepare(const OpGraph& g, const std::vector<int>& ops) {
  int id = -1;
  Impl* im = impl_.get();
  auto f = [&] { id = im->prepare(g, ops); };
  im->worker->call(f);
  return id;
}

const SegmentTiming& OneDnnExecutor::run(int segment) {
  Impl::Segment& s = impl_->seg(segment);
  Impl* im = impl_.get();
  auto f = [im, &s] { im->run(s); };
  im->worker->call(f);
  return s.timing;
}

std::vector<TensorInfo> OneDnnExecutor::inputs(int segment) const { return impl_->seg(segment).inputs; }

void OneDnnExecutor::set_input(int segment, TensorKey key, const std::vector<float>& data) {
  Impl::Segment& s = impl_->seg(segment);
  for (const TensorInfo& t : s.inputs)
    if (t.key == key) {
      if (static_cast<int64_t>(data.size()) != t.elems())
        throw std::invalid_argument("set_input: " + input_key(key) + " holds " +
                                    std::to_string(t.elems()) + " values, got " +
                                    std::to_string(data.size()));
      impl_->fill(s.tensors.at(key), t, data.data());
      return;
    }
  throw std::invalid_argument("set_input: " + input_key(key) + " is not an input of segment " +
                              std::to_string(segment));
}

std::vector<float> OneDnnExecutor::get_output(int segment, int op) const {
  Impl::Segment& s = impl_->seg(segment);
  auto it = s.tensors.find(TensorKey{op, -1});
  if (it == s.tensors.end())
    throw std::invalid_argument("get_output: op " + std::to_string(op) + " is not in segment " +
                                std::to_string(segment));
  TensorInfo t = output_info(*s.g, op);
  std::vector<float> out(static_cast<size_t>(t.elems()));
  if (impl_->opt.dtype == DType::BF16) {
    const uint16_t* d = reinterpret_cast<const uint16_t*>(it->second.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = onednn::bf16_to_f32(d[i]);
  } else {
    std::memcpy(out.data(), it->second.data(), out.size() * 4);
  }
  return out;
}

std::string OneDnnExecutor::device() const {
  std::string model = "cpu";
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  std::string cpus;
  for (size_t i = 0; i < impl_->opt.cpus.size(); ++i)
    cpus += (i ? "," : "") + std::to_string(impl_->opt.cpus[i]);
  const dnnl_version_t* v = dnnl_version();
  return "cpu " + cpus + " (" + model + "), onednn " + std::to_string(v->major) + "." +
         std::to_string(v->minor) + "." + std::to_string(v->patch) + ", " +
         to_string(impl_->opt.dtype);
}

uint64_t OneDnnExecutor::estimate_bytes(const OpGraph& g, const std::vector<int>& ops, DType dtype) {
  std::vector<OpPlan> plan = plan_segment(g, ops);
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(dtype));
  uint64_t total = 0, plain_max = 0, temp = 0;
  for (const OpPlan& p : plan) total += static_cast<uint64_t>(p.out.elems()) * eb;
  for (const TensorInfo& t : segment_inputs(plan))
    total += static_cast<uint64_t>(t.elems()) * (t.is_int ? 4 : eb) + static_cast<uint64_t>(t.elems()) * 4;
  std::set<std::string> seen;
  for (const OpPlan& p : plan) {
    const Op& o = g.op(p.op);
    uint64_t w = 0;
    if (o.kind == OpKind::Gemm) w = static_cast<uint64_t>(o.k * o.n + o.n);
    else if (o.kind == OpKind::Embedding) w = static_cast<uint64_t>(o.vocab * o.width);
    else if (o.kind == OpKind::Norm) w = static_cast<uint64_t>(2 * o.width);
    if (seen.insert(weight_key(o, "w")).second) total += w * eb * 21 / 20;  // blocking padding
    plain_max = std::max(plain_max, w * 4);
    temp += onednn::kernel_temp_bytes(o, p, dtype, GateUpMode::OneMatmul);
  }
  return total + plain_max + temp;
}

}  // namespace vlasim
