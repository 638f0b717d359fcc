// Every graph pass keeps the meaning of the graph: tiny pi0 with and without it computes the
// same actions from the same (pass-transformed, not regenerated) synthetic weights, on the
// float64 reference and on oneDNN.
#include <gtest/gtest.h>

#include <cstdio>

#include "executors/onednn_executor.h"
#include "executors/reference.h"
#include "host_skip.h"
#include "models/builder.h"
#include "models/passes/passes.h"
#include "tests/executors/graphs.h"

namespace vlasim {
namespace {

using testing::rel_err;

ModelCard tiny() { return load_card(std::string(VLASIM_SOURCE_DIR) + "/models/cards/pi0_tiny.yaml"); }

OpGraph graph(const std::vector<std::string>& passes, DType dtype) {
  RunShape s;
  s.dtype = dtype;
  s.steps = 3;  // every step folds its own time bias; three are enough and keep this quick
  s.passes = passes;
  return build_graph(tiny(), s);
}

// The final actions (last op) of one run of the whole graph.
std::vector<float> actions(Executor& ex, const OpGraph& g) {
  const int seg = ex.prepare(g, all_ops(g));
  ex.run(seg);
  return ex.get_output(seg, int(g.size()) - 1);
}

// The passes added one at a time in registry order (the speed-up table's rows), each set
// against no pass.
void check_passes(DType dtype, bool reference, double tol) {
  ExecOptions opt;
  opt.dtype = dtype;
  opt.seed = 11;
  auto run = [&](const OpGraph& g) {
    if (reference) {
      ReferenceExecutor ex(opt);
      return actions(ex, g);
    }
    OneDnnExecutor ex(opt);
    return actions(ex, g);
  };
  const OpGraph none = graph({}, dtype);
  const std::vector<float> want = run(none);
  ASSERT_EQ(want.size(), 10u * 32u);  // chunk 10 x action_dim 32
  std::vector<std::string> names = pass_names();
  std::vector<std::string> set;
  for (const std::string& p : names) {
    set.push_back(p);
    const OpGraph g = graph(set, dtype);
    ASSERT_NE(g.size(), 0u);
    const double e = rel_err(run(g), want);
    const std::string label = "+" + p;
    EXPECT_LT(e, tol) << label << " changes the actions (" << to_string(dtype) << ")";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2e", e);
    ::testing::Test::RecordProperty(label + "_rel_err", buf);
  }
}

TEST(GraphPassesKeepMeaning, ReferenceFp32) { check_passes(DType::F32, true, 1e-6); }
// bf16 rounding of the intermediates the fused and unfused forms keep (act(gate) before the
// multiply, a folded bias rounded once) differs; the float64 reference shows it on any CPU.
TEST(GraphPassesKeepMeaning, ReferenceBf16) { check_passes(DType::BF16, true, 3e-2); }
TEST(GraphPassesKeepMeaning, OneDnnFp32) { check_passes(DType::F32, false, 1e-4); }
TEST(GraphPassesKeepMeaning, OneDnnBf16) {
  VLASIM_SKIP_UNLESS_CPU_RUNS(DType::BF16);
  check_passes(DType::BF16, false, 3e-2);
}

// The check can fail: a pass that transformed the graph but not its weights would change the
// actions. Regenerating the folded GEMM's weights (dropping Op::param) must be caught.
TEST(GraphPassesKeepMeaning, RegeneratedWeightsAreCaught) {
  OpGraph g = graph({"rmsnorm_fold"}, DType::F32);
  for (size_t i = 0; i < g.size(); ++i) g.op(int(i)).param = ParamSource{};
  ExecOptions opt;
  opt.dtype = DType::F32;
  opt.seed = 11;
  ReferenceExecutor a(opt), b(opt);
  EXPECT_GT(rel_err(actions(a, g), actions(b, graph({}, DType::F32))), 1e-3);
}

}  // namespace
}  // namespace vlasim
