// The CUDA executor: registered with its parameters everywhere; where a GPU is present, every
// op kind of whole small graphs against the float64 reference executor (tests skip with the
// reason where there is none).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "executors/calibration/calibrate.h"
#include "executors/cuda/cuda_probe.h"
#include "executors/reference.h"
#include "models/builder.h"
#include "models/passes/passes.h"
#include "executors/executor_registry.h"

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

// pi0_tiny's whole graph at `shape`.
OpGraph tiny_pi0(const RunShape& shape = {}) {
  return build_graph(load_card(default_cards_dir() + "/pi0_tiny.yaml"), shape);
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
  EXPECT_EQ(names, (std::vector<std::string>{"dtype", "device", "seed", "graph", "sms", "sms_from_end",
                                             "fuse_epilogue"}));
  for (const char* bad : {"dtype: int8", "sms: -4"})
    try {
      make_cuda(bad);
      FAIL() << bad << " accepted";
    } catch (const ConfigError& err) {
      EXPECT_NE(std::string(err.what()).find(std::string(bad).substr(0, std::string(bad).find(':'))),
                std::string::npos)
          << err.what();
    }
}

// Without a GPU the link copier is refused saying why; with one, a copy from pinned memory
// beats the same copy from pageable memory (HARDWARE.md: ~23 vs ~13-18 GB/s host to device).
TEST(CudaLink, PinnedCopiesBeatPageableOnesOrTheCopierSaysWhyNot) {
  if (cuda_device_count() == 0) {
    try {
      make_cuda_link_copier(0, true, true, 1 << 20);
      FAIL() << "made a link copier without a GPU";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
    }
    GTEST_SKIP() << "no CUDA device on this machine: the refusal was checked";
  }
  const int64_t bytes = 64 << 20;
  for (bool h2d : {true, false}) {
    auto pinned = make_cuda_link_copier(0, h2d, true, bytes);
    auto pageable = make_cuda_link_copier(0, h2d, false, bytes);
    EXPECT_NE(pinned->device().find("pinned"), std::string::npos) << pinned->device();
    EXPECT_THROW(pinned->copy(bytes + 1), std::invalid_argument);
    double tp = 1e9, tq = 1e9;
    for (int i = 0; i < 5; ++i) {
      tp = std::min(tp, pinned->copy(bytes));
      tq = std::min(tq, pageable->copy(bytes));
    }
    RecordProperty(h2d ? "h2d_pinned_gbs" : "d2h_pinned_gbs", std::to_string(bytes / tp / 1e9));
    RecordProperty(h2d ? "h2d_pageable_gbs" : "d2h_pageable_gbs", std::to_string(bytes / tq / 1e9));
    EXPECT_LT(tp, tq) << (h2d ? "h2d" : "d2h") << ": pinned " << tp << " s, pageable " << tq << " s";
  }
}

// A GEMM big enough to fill the GPU, alone on the executor.
OpGraph big_gemm() {
  OpGraph g;
  Op o;
  o.name = "gemm";
  o.weight_id = "gemm";
  o.dtype = DType::BF16;
  o.kind = OpKind::Gemm;
  o.fn = OpFn::Linear;
  o.m = 4096;
  o.n = 4096;
  o.k = 4096;
  g.add(o);
  return g;
}

// An SM limit runs the kernels on a green context of at least that many SMs: the same
// outputs, a GPU-filling GEMM several times slower on an eighth of the SMs, and
// set_sm_limit switching between limits (0: back to the executor's own).
TEST(CudaExecutor, AnSmLimitRunsOnFewerSmsWithTheSameOutputs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const OpGraph g = big_gemm();
  auto whole = make_cuda("seed: 2");
  const int sms = whole->set_sm_limit(0);
  ASSERT_GT(sms, 8);
  auto part = make_cuda("seed: 2\nsms: " + std::to_string(sms / 8));
  EXPECT_NE(part->device().find("green context of"), std::string::npos) << part->device();
  const int a = whole->prepare(g, {0}), b = part->prepare(g, {0});
  auto best = [](Executor& ex, int seg) {
    double t = 1e9;
    for (int i = 0; i < 5; ++i) t = std::min(t, ex.run(seg).total);
    return t;
  };
  const double t_whole = best(*whole, a), t_part = best(*part, b);
  RecordProperty("whole_ms", std::to_string(t_whole * 1e3));
  RecordProperty("eighth_ms", std::to_string(t_part * 1e3));
  EXPECT_GT(t_part, 3 * t_whole) << "an eighth of the SMs: " << t_part << " s vs " << t_whole << " s";
  EXPECT_EQ(whole->get_output(a, 0), part->get_output(b, 0));
  const int granted = part->set_sm_limit(sms / 2);
  EXPECT_GE(granted, sms / 2);
  const double t_half = best(*part, b);
  EXPECT_LT(t_half, t_part);
  EXPECT_EQ(part->set_sm_limit(0), part->set_sm_limit(sms / 8));  // back to its own lane
  EXPECT_THROW(part->set_sm_limit(sms + 1), std::invalid_argument);
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
  OpGraph g = tiny_pi0(shape);
  auto cuda = make_cuda(std::string("dtype: ") + to_string(dtype) + "\nseed: 5");
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
TEST(CudaExecutor, TinyPi0Fp16MatchesTheReference) { against_reference(DType::F16, 1e-2, {}); }

// Bias, GELU-tanh / ReLU and residuals in cuBLASLt's epilogue compute what the executor's own
// epilogue kernel does (fp32: to rounding).
TEST(CudaExecutor, CublasLtEpiloguesGiveTheKernelEpiloguesOutputs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  OpGraph g = tiny_pi0();
  auto fused = make_cuda("dtype: fp32\nseed: 4");
  auto apart = make_cuda("dtype: fp32\nseed: 4\nfuse_epilogue: false");
  const std::vector<int> ops = all_ops(g);
  const int a = fused->prepare(g, ops), b = apart->prepare(g, ops);
  fused->run(a);
  apart->run(b);
  const double e = rel_err(fused->get_output(a, ops.back()), apart->get_output(b, ops.back()));
  RecordProperty("fused_vs_apart_rel_err", std::to_string(e));
  EXPECT_LT(e, 1e-5);
}

// A replayed CUDA Graph computes what the kernel-by-kernel run did (bit for bit: the same
// kernels on the same buffers), and its total is its own.
TEST(CudaExecutor, AGraphReplayGivesTheKernelByKernelOutputs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  OpGraph g = tiny_pi0();
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

// The two streams of a lockstep split (96 SMs from the GPU's front, the rest from its end)
// run on disjoint SMs, each on at least what it asked for; a whole-device lane reaches more.
TEST(GreenContexts, ASplitsTwoStreamsShareNoSm) {
  if (cuda_device_count() == 0) {
    EXPECT_THROW(cuda_lane_sm_ids(0, 96, false), std::runtime_error);
    GTEST_SKIP() << "no CUDA device on this machine: the refusal was checked";
  }
  const std::vector<int> all = cuda_lane_sm_ids(0, 0, false);
  const int total = static_cast<int>(all.size());
  ASSERT_GT(total, 96);
  const std::vector<int> front = cuda_lane_sm_ids(0, 96, false), end = cuda_lane_sm_ids(0, total - 96, true);
  RecordProperty("front_sms_used", std::to_string(front.size()));
  RecordProperty("end_sms_used", std::to_string(end.size()));
  EXPECT_LE(front.size(), 96u + 8u);
  EXPECT_GT(front.size(), 48u);  // the blocks spread over the lane
  std::vector<int> both;
  std::set_intersection(front.begin(), front.end(), end.begin(), end.end(), std::back_inserter(both));
  EXPECT_TRUE(both.empty()) << both.size() << " SMs in both lanes";
}

// `vlasim calibrate` on a GPU: one section per SM limit (a green context each), the GEMM that
// fills the GPU slower on fewer SMs, graph replays recorded as such; a CPU executor is refused
// for a GPU catalog device everywhere, and without a GPU the cuda executor says why.
TEST(GpuCalibration, ProfilesEverySmLimitOrSaysWhyItCannot) {
  CalibrateOptions o;
  o.catalog_device = "h200-sxm";
  o.executor = "onednn";
  EXPECT_THROW(calibrate(o), ConfigError);
  o.executor = "cuda";
  o.grid = GridLevel::None;
  o.dtypes = {DType::BF16};
  o.sms = {16, 128};
  o.graph = true;
  o.repetitions = 3;
  o.graphs.push_back(big_gemm());
  if (cuda_device_count() == 0) {
    try {
      calibrate(o);
      FAIL() << "calibrated a GPU without one";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
    }
    GTEST_SKIP() << "no CUDA device on this machine: the refusal was checked";
  }
  const DeviceProfile p = calibrate(o);
  EXPECT_TRUE(p.graph);
  ASSERT_EQ(p.sections.size(), 2u);
  const Op gemm = big_gemm().op(0);
  const Measurement* few = p.sections[0].exact(gemm);
  const Measurement* many = p.sections[1].exact(gemm);
  ASSERT_TRUE(few && many);
  RecordProperty("gemm_16sms_ms", std::to_string(few->median_s * 1e3));
  RecordProperty("gemm_128sms_ms", std::to_string(many->median_s * 1e3));
  EXPECT_GT(few->median_s, 3 * many->median_s);
}

TEST(CudaExecutor, TinyPi0WithEveryPassMatchesTheReference) {
  against_reference(DType::F32, 1e-4, pass_names());
}

}  // namespace
}  // namespace vlasim
