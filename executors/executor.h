// Real executors: run the operators of an OpGraph on a device and time them. An executor is
// bound to a core group (CPU) or a device (later: CUDA) and runs prepared segments (lists of
// ops) with synthetic weights. The binding of op inputs to tensors is in executors/plan.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executors/host.h"
#include "executors/plan.h"
#include "models/graph.h"
#include "scenarios/config/registry.h"

namespace vlasim {

struct ExecOptions {
  // Activations and weights (ops' own dtype is ignored); by default what this CPU runs
  // natively (executors/host.h).
  DType dtype = native_cpu_dtype();
  std::vector<int> cpus;      // core group: logical CPU ids to pin to; empty = all allowed
  uint64_t seed = 1;          // synthetic weights and inputs
};

// Seconds per op of one run of a segment, in the segment's op order.
struct SegmentTiming {
  std::vector<int> ops;
  std::vector<double> seconds;
  double total = 0;  // wall time of the whole run (>= sum of seconds)
  // CPU time the thread that ran it spent running over the run (CLOCK_THREAD_CPUTIME_ID; the
  // kernel leaves out the time it ran other tasks there, and with paravirtual steal accounting
  // the hypervisor's steal): total less it is time the run waited off its CPU. < 0: not
  // measured (the executor does not say). On a core group of several threads it counts the
  // calling thread only.
  double cpu = -1;
};

class Executor {
 public:
  virtual ~Executor() = default;

  // Prepares a segment: `ops` are op ids of `g` in increasing (execution) order. Allocates
  // every buffer and primitive, fills synthetic weights (one buffer per weight_id) and
  // synthetic inputs. `g` must outlive the segment. Returns a handle for run().
  // Throws std::invalid_argument naming the op for an op it cannot run, and
  // std::runtime_error stating the bytes needed when memory is short.
  virtual int prepare(const OpGraph& g, const std::vector<int>& ops) = 0;
  // Runs the segment once, blocking; no allocation. The result stays valid until the next
  // run of this segment.
  virtual const SegmentTiming& run(int segment) = 0;

  // The tensors a segment reads but does not produce (see plan.h), with their shapes.
  virtual std::vector<TensorInfo> inputs(int segment) const = 0;
  // Overwrites input `key` of `segment` with `data` (rows*cols values, row-major, converted
  // to the executor's dtype; int tensors are rounded). Throws if key or size is wrong.
  virtual void set_input(int segment, TensorKey key, const std::vector<float>& data) = 0;
  // The output of op `op` (in `segment`) after the last run, as float, row-major.
  virtual std::vector<float> get_output(int segment, int op) const = 0;

  virtual std::string name() const = 0;
  virtual std::string device() const = 0;  // e.g. "cpu 0,1 (AMD EPYC), onednn 2.6.3, bf16"

  // Limits the SMs the following runs use to at least `sms` (0: the executor's own limit, as
  // made) and returns the SMs granted (a GPU rounds up to its partition granularity). An
  // executor without SMs (CPU) returns 0 for sms == 0 and throws std::invalid_argument for
  // any other value.
  virtual int set_sm_limit(int sms);
};

// A real copy between this host's memory and one GPU over its link: from pinned host memory
// (page-locked, moved by DMA) or pageable memory (staged through the driver's pinned buffer),
// as a scenario's link declares. Made by make_cuda_link_copier.
class LinkCopier {
 public:
  virtual ~LinkCopier() = default;
  // Copies `bytes` (0 <= bytes <= the size it was made for) in its direction, blocking, and
  // returns the seconds the copy took on the GPU's clock (CUDA events around it).
  virtual double copy(int64_t bytes) = 0;
  virtual std::string device() const = 0;  // e.g. "cuda 0 (NVIDIA H200), h2d from pinned memory"
};

// Sums a timing per op kind ("gemm", "attention", ...) and in total ("total" = sum of ops).
std::map<std::string, double> time_by_kind(const OpGraph& g, const SegmentTiming& t);
// Sums a timing per stage ("vision", "prefix", "action", ...).
std::map<std::string, double> time_by_stage(const OpGraph& g, const SegmentTiming& t);
// Op ids of `g` whose stage is `s`, in order.
std::vector<int> ops_of_stage(const OpGraph& g, Stage s);
// All op ids of `g`, in order.
std::vector<int> all_ops(const OpGraph& g);

// Logical CPUs this process may run on (sched_getaffinity).
std::vector<int> allowed_cpus();
// Returns `cpus`, or allowed_cpus() when empty. Throws std::invalid_argument naming the ids
// that are not allowed and listing those that are.
std::vector<int> check_cpus(const std::vector<int>& cpus);
// Bytes of memory available for new allocations (MemAvailable), 0 if unknown.
uint64_t available_memory();
// Throws std::runtime_error "<what> needs X MiB but only Y MiB are available" when `bytes`
// exceeds available_memory().
void check_memory(uint64_t bytes, const std::string& what);

using ExecutorRegistry = Registry<Executor>;

}  // namespace vlasim
