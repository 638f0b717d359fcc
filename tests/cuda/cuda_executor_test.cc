// The CUDA executor: registered with its parameters everywhere; where a GPU is present, every
// op kind of whole small graphs against the float64 reference executor (tests skip with the
// reason where there is none).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "executors/cuda/cuda_probe.h"
#include "executors/reference.h"
#include "models/builder.h"
#include "models/passes/passes.h"

namespace vlasim {
namespace {

double rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return a.size() != ref.size() ? INFINITY : std::sqrt(num / std::max(den, 1e-30));
}

std::unique_ptr<Executor> make_cuda(const std::string& params) {
  const ConfigNode n = ConfigNode::load_string(params, "s.yaml");
  return executor_registry().make("cuda", Params(n), n);
}

TEST(CudaExecutor, IsRegisteredWithItsParametersAndRefusesOtherDtypes) {
  const ExecutorRegistry& r = executor_registry();
  const auto* e = r.find("cuda");
  ASSERT_NE(e, nullptr);
  std::vector<std::string> names;
  for (const ParamSpec& p : e->params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"dtype", "device", "seed", "graph"}));
  try {
    make_cuda("dtype: int8");
    FAIL() << "int8 accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("dtype"), std::string::npos) << err.what();
  }
}

TEST(CudaExecutor, WithoutAGpuMakingOneSaysWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  try {
    make_cuda("seed: 1");  // the module loads (this build has nvcc) and finds no device
    FAIL() << "made a CUDA executor without a GPU";
  } catch (const std::runtime_error& err) {
    EXPECT_NE(std::string(err.what()).find("cuda executor"), std::string::npos) << err.what();
  }
}

// pi0_tiny, whole inference, every stage's last output against the reference.
void against_reference(DType dtype, double tol, const std::vector<std::string>& passes) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  RunShape shape;
  shape.dtype = dtype;
  if (!passes.empty()) shape.passes = passes;  // else the card's default passes
  OpGraph g = build_graph(load_card(std::string(VLASIM_SOURCE_DIR) + "/models/cards/pi0_tiny.yaml"), shape);
  auto cuda = make_cuda(std::string("dtype: ") + (dtype == DType::BF16 ? "bf16" : "fp32") + "\nseed: 5");
  ExecOptions ro;
  ro.dtype = dtype;
  ro.seed = 5;
  ReferenceExecutor ref(ro);
  const std::vector<int> ops = all_ops(g);
  const int a = cuda->prepare(g, ops), b = ref.prepare(g, ops);
  const SegmentTiming& t = cuda->run(a);
  ref.run(b);
  EXPECT_GT(t.total, 0);
  std::map<Stage, int> last;
  for (int id : ops) last[g.op(id).stage] = id;
  for (auto [stage, id] : last) {
    const double e = rel_err(cuda->get_output(a, id), ref.get_output(b, id));
    EXPECT_LT(e, tol) << to_string(stage) << " output (op " << id << " '" << g.op(id).name << "')";
    ::testing::Test::RecordProperty(std::string(to_string(stage)) + "_rel_err", std::to_string(e));
  }
}

TEST(CudaExecutor, TinyPi0Fp32MatchesTheReference) { against_reference(DType::F32, 1e-4, {}); }
TEST(CudaExecutor, TinyPi0Bf16MatchesTheReference) { against_reference(DType::BF16, 3e-2, {}); }
// A replayed CUDA Graph computes what the kernel-by-kernel run did (bit for bit: the same
// kernels on the same buffers), and its total is its own.
TEST(CudaExecutor, AGraphReplayGivesTheKernelByKernelOutputs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  OpGraph g = build_graph(load_card(std::string(VLASIM_SOURCE_DIR) + "/models/cards/pi0_tiny.yaml"), RunShape{});
  auto eager = make_cuda("seed: 3");
  auto graph = make_cuda("seed: 3\ngraph: true");
  const std::vector<int> ops = all_ops(g);
  const int a = eager->prepare(g, ops), b = graph->prepare(g, ops);
  eager->run(a);
  for (int i = 0; i < 3; ++i) {
    const SegmentTiming& t = graph->run(b);
    EXPECT_GT(t.total, 0);
  }
  EXPECT_EQ(eager->get_output(a, ops.back()), graph->get_output(b, ops.back()));
}

TEST(CudaExecutor, TinyPi0WithEveryPassMatchesTheReference) {
  against_reference(DType::F32, 1e-4, pass_names());
}

}  // namespace
}  // namespace vlasim
