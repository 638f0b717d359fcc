// The oneDNN executor: runs segments on a core group (a pinned worker thread whose OpenMP
// team has one thread per CPU of the group). GEMMs, attention matmuls and softmax are oneDNN
// primitives; norms, RoPE, elementwise ops, lookups and transfers are plain loops.
#pragma once

#include <memory>

#include "executors/executor.h"

namespace vlasim {

class OneDnnExecutor : public Executor {
 public:
  // Throws std::invalid_argument for a dtype other than bf16/fp32, a dtype this CPU cannot
  // run (cpu_dtype_problem, naming its ISA), or a core group naming CPUs this process cannot
  // use (see check_cpus).
  explicit OneDnnExecutor(ExecOptions opt, GateUpMode gate_up = GateUpMode::TwoMatmuls);
  ~OneDnnExecutor() override;

  int prepare(const OpGraph& g, const std::vector<int>& ops) override;
  const SegmentTiming& run(int segment) override;
  std::vector<TensorInfo> inputs(int segment) const override;
  void set_input(int segment, TensorKey key, const std::vector<float>& data) override;
  std::vector<float> get_output(int segment, int op) const override;
  std::string name() const override { return "onednn"; }
  std::string device() const override;

  // Bytes prepare() would allocate for `ops` (buffers, weights, temporaries).
  static uint64_t estimate_bytes(const OpGraph& g, const std::vector<int>& ops, DType dtype);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace vlasim
