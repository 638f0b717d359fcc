// This machine's CPU as the real executors see it, found once per process: the instruction
// set oneDNN uses here (its effective ISA, which ONEDNN_MAX_CPU_ISA caps), whether bf16
// primitives can be made and whether they run natively, AMX, and the CPUs of each NUMA node.
// Everything that depends on the host's ISA (dtype: auto, bf16 checks, profiles, test skips)
// asks here.
#pragma once

#include <string>
#include <vector>

#include "models/graph.h"

namespace vlasim {

struct HostInfo {
  std::string cpu_model;       // /proc/cpuinfo "model name"
  std::string isa;             // oneDNN's effective ISA: "avx2", "avx512_core_bf16", ...
  std::string onednn_version;  // "2.6.3"
  std::string isa_cap;         // ONEDNN_MAX_CPU_ISA (or DNNL_) as set in the environment, else ""
  bool bf16 = false;           // oneDNN can make bf16 matmul and softmax primitives here
  bool bf16_native = false;    // ... and runs them in hardware (avx512_core_bf16 or AMX)
  bool amx = false;            // AMX tiles (avx512_core_amx)
  int logical_cpus = 0;        // CPUs this process may run on
  std::vector<std::vector<int>> numa_nodes;  // allowed logical CPUs of each online node with any
};

// The host, detected on first call (thread-safe) and cached.
const HostInfo& host_info();

// The dtype `dtype: auto` stands for on this CPU: bf16 where it runs natively, else fp32.
DType native_cpu_dtype();

// A multi-line description for `vlasim list host`.
std::string host_text(const HostInfo& h);

// Why `dtype` cannot run on this host's CPU executor, or "" when it can. The text names the
// host's ISA and the alternatives.
std::string cpu_dtype_problem(DType dtype);

}  // namespace vlasim
