// The float64 reference executor: runs every op kind the executors support with plain loops
// in double precision, on the calling thread. Weights and synthetic inputs are the same
// values the other executors use, rounded to the dtype they store (so a comparison
// measures compute error only). Slow; meant for tests.
#pragma once

#include <map>
#include <vector>

#include "executors/executor.h"

namespace vlasim {

// Activation functions in double precision (gelu_tanh, gelu_erf, silu, relu; none = x).
double ref_activation(Activation a, double x);

class ReferenceExecutor : public Executor {
 public:
  explicit ReferenceExecutor(ExecOptions opt);
  int prepare(const OpGraph& g, const std::vector<int>& ops) override;
  const SegmentTiming& run(int segment) override;
  std::vector<TensorInfo> inputs(int segment) const override;
  void set_input(int segment, TensorKey key, const std::vector<float>& data) override;
  std::vector<float> get_output(int segment, int op) const override;
  std::string name() const override { return "reference"; }
  std::string device() const override;

 private:
  struct Segment {
    const OpGraph* g = nullptr;
    std::vector<OpPlan> plan;
    std::map<TensorKey, std::vector<double>> tensors;  // inputs and op outputs
    SegmentTiming timing;
  };
  const std::vector<double>& weight(const Op& o, const char* part, int64_t n);
  void run_op(Segment& s, const OpPlan& p);
  Segment& seg(int id);
  const Segment& seg(int id) const;

  ExecOptions opt_;
  std::map<std::string, std::vector<double>> weights_;
  std::vector<Segment> segments_;
};

}  // namespace vlasim
