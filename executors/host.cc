#include "executors/host.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>

namespace vlasim {

namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
  }
}

std::string read_cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c == std::string::npos) return line;
      size_t b = line.find_first_not_of(" \t", c + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  return "unknown";
}

// "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; malformed parts are skipped.
std::vector<int> parse_cpulist(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      size_t dash = part.find('-');
      int a = std::stoi(part.substr(0, dash));
      int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      for (int c = a; c <= b && c - a < 65536; ++c) out.push_back(c);
    } catch (const std::exception&) {
    }
  }
  return out;
}

// The allowed CPUs of each online NUMA node (node ids from sysfs may be sparse; a node with
// no allowed CPU, such as a memory-only one, is left out); one node holding every allowed
// CPU when sysfs says nothing.
std::vector<std::vector<int>> read_numa_nodes(const std::vector<int>& allowed) {
  std::vector<std::vector<int>> nodes;
  std::ifstream online("/sys/devices/system/node/online");
  std::string ids;
  std::getline(online, ids);
  for (int n : parse_cpulist(ids)) {
    std::ifstream f("/sys/devices/system/node/node" + std::to_string(n) + "/cpulist");
    std::string text;
    std::getline(f, text);
    std::vector<int> cpus;
    for (int c : parse_cpulist(text))
      if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) cpus.push_back(c);
    if (!cpus.empty()) nodes.push_back(std::move(cpus));
  }
  if (nodes.empty()) nodes.push_back(allowed);
  return nodes;
}

// Whether oneDNN makes the bf16 primitives the executor needs (matmul with a post-op,
// softmax) on this CPU.
bool bf16_primitives_exist() {
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc a({16, 64}, dt::bf16, tag::ab), w({64, 64}, dt::bf16, tag::any),
        c({16, 64}, dt::bf16, tag::ab);
    dnnl::post_ops po;
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    dnnl::matmul::primitive_desc mm(dnnl::matmul::desc(a, w, c), attr, eng);
    dnnl::softmax_v2_forward::primitive_desc sm(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::softmax_accurate, c, c, 1),
        eng);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

HostInfo detect() {
  HostInfo h;
  h.cpu_model = read_cpu_model();
  h.isa = isa_name(dnnl::get_effective_cpu_isa());
  const dnnl_version_t* v = dnnl_version();
  h.onednn_version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  for (const char* var : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* e = std::getenv(var); e && *e && h.isa_cap.empty()) h.isa_cap = e;
  h.bf16 = bf16_primitives_exist();
  h.amx = h.isa == "avx512_core_amx";
  h.bf16_native = h.bf16 && (h.isa == "avx512_core_bf16" || h.amx);
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(getpid(), sizeof set, &set) == 0)  // the process's, not this thread's
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) allowed.push_back(c);
  h.logical_cpus = static_cast<int>(allowed.size());
  h.numa_nodes = read_numa_nodes(allowed);
  return h;
}

std::string ids(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

const HostInfo& host_info() {
  static const HostInfo h = detect();
  return h;
}

DType native_cpu_dtype() { return host_info().bf16_native ? DType::BF16 : DType::F32; }

std::string host_text(const HostInfo& h) {
  std::ostringstream o;
  o << "host:\n"
    << "  cpu: " << h.cpu_model << "\n"
    << "  logical cpus: " << h.logical_cpus << "\n";
  for (size_t n = 0; n < h.numa_nodes.size(); ++n)
    o << "  numa node " << n << ": " << h.numa_nodes[n].size() << " cpus (" << ids(h.numa_nodes[n]) << ")\n";
  o << "  onednn: " << h.onednn_version << ", effective isa " << h.isa
    << (h.isa_cap.empty() ? "" : " (capped by ONEDNN_MAX_CPU_ISA=" + h.isa_cap + ")") << "\n"
    << "  bf16: " << (h.bf16_native ? "native" : h.bf16 ? "emulated (runs, slower than fp32 may be)" : "no (needs AVX-512)")
    << "\n"
    << "  amx: " << (h.amx ? "yes" : "no") << "\n"
    << "  dtype auto: " << to_string(native_cpu_dtype()) << "\n";
  return o.str();
}

std::string cpu_dtype_problem(DType dtype) {
  const HostInfo& h = host_info();
  switch (dtype) {
    case DType::F32:
      return "";
    case DType::BF16:
      if (h.bf16) return "";
      return "this machine's CPU cannot run bf16: oneDNN " + h.onednn_version + " runs ISA " + h.isa +
             (h.isa_cap.empty() ? "" : " (capped by ONEDNN_MAX_CPU_ISA=" + h.isa_cap + ")") +
             " here, and its bf16 kernels need AVX-512 (avx512_core or newer); use dtype: fp32, "
             "or dtype: auto (fp32 on this machine)";
    default:
      return std::string("the CPU executor runs fp32 and bf16 only, not ") + to_string(dtype) +
             "; use dtype: fp32 or dtype: auto (" + to_string(native_cpu_dtype()) + " on this machine)";
  }
}

}  // namespace vlasim
