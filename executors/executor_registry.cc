#include "executors/executor_registry.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

#include "executors/cuda/cuda_executor.h"
#include "executors/host.h"
#include "executors/onednn_executor.h"
#include "executors/reference.h"
#include "scenarios/config/data_dir.h"

namespace vlasim {

// The dtype param: "auto" (this CPU's native dtype), bf16 or fp32, and fp16 where not
// `check_host` (the reference executor; oneDNN's CPU matmuls here run no fp16). With
// `check_host`, a dtype this CPU cannot run is refused at the param, naming the host's ISA.
static DType dtype_param(const Params& p, bool check_host) {
  std::string s = p.get_string("dtype", "auto");
  if (s == "auto") return native_cpu_dtype();
  DType d;
  if (!parse_dtype(s, &d) || (d != DType::BF16 && d != DType::F32 && (check_host || d != DType::F16)))
    p.node().fail("dtype '" + s + "' is not supported by this executor; valid: auto, bf16, fp32" +
                  (check_host ? "" : ", fp16"));
  if (check_host)
    if (std::string why = cpu_dtype_problem(d); !why.empty()) p.node().required("dtype").fail(why);
  return d;
}

namespace {

// The CUDA executor's module: VLASIM_CUDA_MODULE, else libvlasim_cuda_executor.so next to the
// vlasim binary (a build tree, or an install's lib/ beside libvlasim.so), else in ../lib, else
// the build tree this library was built in.
std::string cuda_module_path() {
  if (const char* e = std::getenv("VLASIM_CUDA_MODULE"); e && *e) return e;
  const std::string dir = module_dir();
  for (const std::string& p : {dir + "/libvlasim_cuda_executor.so", dir + "/../lib/libvlasim_cuda_executor.so",
                               std::string(VLASIM_CUDA_MODULE_BUILD_PATH)})
    if (std::ifstream(p).good()) return p;
  return "";
}

// The CUDA module, loaded once and kept for the process. Throws std::runtime_error naming why
// it cannot be loaded (every time it is asked for).
void* cuda_module() {
  static void* handle = nullptr;
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = cuda_module_path();
    if (path.empty())
      why = "the cuda executor is not built here: vlasim was built without nvcc (VLASIM_WITH_CUDA off), or "
            "libvlasim_cuda_executor.so is not beside it (VLASIM_CUDA_MODULE names it)";
    else if (!(handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)))
      why = "cannot load the cuda executor (" + path + "): " + dlerror();
  });
  if (!handle) throw std::runtime_error(why);
  return handle;
}

// Symbol `name` of the CUDA module, as F. Throws std::runtime_error when it is missing.
template <class F>
F cuda_symbol(const char* name) {
  auto f = reinterpret_cast<F>(dlsym(cuda_module(), name));
  if (!f) throw std::runtime_error(cuda_module_path() + " is not the cuda executor module (no " + name + ")");
  return f;
}

std::unique_ptr<Executor> load_cuda_executor(const CudaOptions& o, const Params& p) {
  using Make = Executor* (*)(const CudaOptions*);
  Make make = nullptr;
  try {
    make = cuda_symbol<Make>("vlasim_make_cuda_executor");
  } catch (const std::runtime_error& e) {
    p.node().fail(e.what());
  }
  return std::unique_ptr<Executor>(make(&o));
}

}  // namespace

void register_executors(ExecutorRegistry& r) {
  r.add({"onednn",
         "oneDNN 2.x on a pinned CPU core group (matmul/softmax primitives, fused epilogues)",
         {{"dtype", "activations and weights: auto (bf16 where this CPU runs it natively, else fp32), bf16 or fp32", "auto"},
          {"threads", "use the first N allowed CPUs when cpus is not given (0 = all)", "0"},
          {"cpus", "core group: list of logical CPU ids", ""},
          {"seed", "seed of the synthetic weights and inputs", "1"}},
         [](const Params& p) -> std::unique_ptr<Executor> {
           ExecOptions o;
           o.dtype = dtype_param(p, true);
           o.seed = static_cast<uint64_t>(p.get_int("seed", 1));
           ConfigNode c = p.node().defined() ? p.node().optional("cpus") : ConfigNode();
           if (c.defined()) {
             for (long long v : c.as_ints()) o.cpus.push_back(static_cast<int>(v));
           } else {
             long long n = p.get_int("threads", 0);
             std::vector<int> all = allowed_cpus();
             if (n < 0 || n > static_cast<long long>(all.size()))
               p.node().fail("threads " + std::to_string(n) + " outside [0, " +
                             std::to_string(all.size()) + "] (allowed CPUs: " + list(all) + ")");
             if (n > 0) all.resize(static_cast<size_t>(n));
             o.cpus = all;
           }
           return std::make_unique<OneDnnExecutor>(o);
         }});
  r.add({"reference", "float64 reference loops on the calling thread (slow; for tests)",
         {{"dtype", "value rounding of weights and inputs: auto (as onednn's), bf16, fp16 or fp32", "auto"},
          {"seed", "seed of the synthetic weights and inputs", "1"}},
         [](const Params& p) -> std::unique_ptr<Executor> {
           ExecOptions o;
           o.dtype = dtype_param(p, false);
           o.seed = static_cast<uint64_t>(p.get_int("seed", 1));
           return std::make_unique<ReferenceExecutor>(o);
         }});
  r.add({"cuda",
         "CUDA on one NVIDIA GPU (cuBLASLt GEMMs with fp32 accumulation, small kernels for the rest; "
         "built when nvcc is found)",
         {{"dtype", "GEMM operands: bf16, fp16 or fp32", "bf16"},
          {"device", "CUDA device index", "0"},
          {"seed", "seed of the synthetic weights and inputs", "1"},
          {"graph", "replay each segment as a captured CUDA Graph (per-op times then scaled from the first run)",
           "false"},
          {"sms", "run on a green context of at least this many SMs (0 = the whole GPU)", "0"},
          {"sms_from_end", "take limited SMs from the end of the GPU (the other stream of a split takes the front)",
           "false"},
          {"fuse_epilogue", "bias, GELU-tanh / ReLU and residual in cuBLASLt's GEMM epilogue (false: a kernel after)",
           "true"}},
         [](const Params& p) -> std::unique_ptr<Executor> {
           CudaOptions o;
           o.graph = p.get_bool("graph", false);
           const std::string d = p.get_string("dtype", "bf16");
           if (d == "bf16") o.dtype = DType::BF16;
           else if (d == "fp16") o.dtype = DType::F16;
           else if (d == "fp32") o.dtype = DType::F32;
           else p.node().required("dtype").fail("dtype '" + d + "' is not supported by the cuda executor; valid: bf16, fp16, fp32");
           o.device = static_cast<int>(p.get_int("device", 0));
           if (o.device < 0) p.node().required("device").fail("a CUDA device index is 0 or more");
           o.seed = static_cast<uint64_t>(p.get_int("seed", 1));
           o.sms = static_cast<int>(p.get_int("sms", 0));
           if (o.sms < 0) p.node().required("sms").fail("an SM limit is 0 (the whole GPU) or more");
           o.sms_from_end = p.get_bool("sms_from_end", false);
           o.fuse_epilogue = p.get_bool("fuse_epilogue", true);
           return load_cuda_executor(o, p);
         }});
}

std::unique_ptr<LinkCopier> make_cuda_link_copier(int device, bool h2d, bool pinned, int64_t max_bytes) {
  using Make = LinkCopier* (*)(int, int, int, int64_t);
  return std::unique_ptr<LinkCopier>(
      cuda_symbol<Make>("vlasim_make_cuda_link_copier")(device, h2d ? 1 : 0, pinned ? 1 : 0, max_bytes));
}

std::vector<int> cuda_lane_sm_ids(int device, int sms, bool from_end) {
  using Ids = int (*)(int, int, int, int*, int, char*, int);
  std::vector<int> ids(4096);
  char error[512] = "";
  const int n = cuda_symbol<Ids>("vlasim_cuda_lane_sm_ids")(device, sms, from_end ? 1 : 0, ids.data(),
                                                           static_cast<int>(ids.size()), error, sizeof error);
  if (n < 0) throw std::runtime_error(error);
  ids.resize(static_cast<size_t>(std::min<int>(n, static_cast<int>(ids.size()))));
  return ids;
}

const ExecutorRegistry& executor_registry() {
  static const ExecutorRegistry r = [] {
    ExecutorRegistry reg("executor");
    register_executors(reg);
    return reg;
  }();
  return r;
}

}  // namespace vlasim
