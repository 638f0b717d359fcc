// The kernel GPU cost model with measured GPU profiles (its `measured` parameter): a measured
// kernel time takes precedence over the model's op by op, on its own GPU only.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "scenarios/config/config.h"
#include "scratch.h"
#include "sim/costs/cost_models.h"
#include "sim/measured/gpu_import.h"
#include "sim/costs/gpu_kernel_model.h"
#include "sim/measured/profile.h"

namespace vlasim {
namespace {

const std::string k4090 =
    std::string(VLASIM_SOURCE_DIR) + "/data/gpu_profiles/apxinf/configs/pi05/rtx4090_sm89_bf16_v2_v3_h10_tactics.json";

std::unique_ptr<CostModel> kernel_with(const std::string& measured) {
  const ConfigNode n = ConfigNode::load_string("measured: \"" + measured + "\"\n", "scenario.yaml");
  return cost_models().make("kernel", Params(n), ConfigNode{});
}

DeviceInstance gpu(const Catalog& cat, const std::string& name) {
  DeviceInstance d;
  d.name = "gpu0";
  d.spec = *cat.find(name);
  d.graph_capture = true;
  return d;
}

double shipped_event_s() {
  std::ifstream in(default_kernel_fit_path());
  std::ostringstream t;
  t << in.rdbuf();
  return parse_kernel_params(t.str(), default_kernel_fit_path()).event_timing_s;
}

class KernelMeasured : public ::testing::Test {
 protected:
  void SetUp() override {
    cat_ = Catalog::load_dir(default_catalog_dir());
    samples_ = import_apxinf(k4090);
    path_ = (testing::scratch_dir("kernel_measured") / "rtx4090.json").string();
    save_profile(samples_to_profile(samples_, *cat_.find("rtx4090"), "apxinf", "RTX 4090"), path_);
  }
  double measured_s(int64_t m, int64_t n, int64_t k) const {
    for (const KernelSample& s : samples_)
      if (s.op.m == m && s.op.n == n && s.op.k == k) return s.seconds;
    ADD_FAILURE() << "no sample " << m << "x" << n << "x" << k;
    return 0;
  }
  Catalog cat_;
  std::vector<KernelSample> samples_;
  std::string path_;
};

TEST_F(KernelMeasured, MeasuredGemmTakesPrecedenceLessTheCudaEventOverhead) {
  const auto with = kernel_with(path_);
  const auto without = cost_models().make("kernel", Params{}, ConfigNode{});
  const DeviceInstance d = gpu(cat_, "rtx4090");
  const UnitDecl unit;
  const Op op = gemm_op(10, 8192, 1024, false, DType::BF16);
  const OpCost c = with->op_cost(op, d, unit);
  const double meas = measured_s(10, 8192, 1024);
  EXPECT_TRUE(c.measured);
  EXPECT_NEAR(c.seconds, meas - shipped_event_s() + d.spec.graph_launch_s, 1e-12);
  EXPECT_FALSE(without->op_cost(op, d, unit).measured);
  EXPECT_GT(std::abs(without->op_cost(op, d, unit).seconds - c.seconds), 1e-7);
}

TEST_F(KernelMeasured, FusedEpilogueTakesThePlainGemmsTime) {
  const auto with = kernel_with(path_);
  const DeviceInstance d = gpu(cat_, "rtx4090");
  Op op = gemm_op(10, 8192, 1024, true, DType::BF16);
  op.epi.act = Activation::Silu;
  const OpCost c = with->op_cost(op, d, UnitDecl{});
  EXPECT_TRUE(c.measured);
  EXPECT_NEAR(c.seconds, with->op_cost(gemm_op(10, 8192, 1024, false, DType::BF16), d, UnitDecl{}).seconds, 1e-12);
}

TEST_F(KernelMeasured, UnmeasuredShapesAndOtherGpusKeepTheModel) {
  const auto with = kernel_with(path_);
  const auto without = cost_models().make("kernel", Params{}, ConfigNode{});
  const UnitDecl unit;
  const DeviceInstance d4090 = gpu(cat_, "rtx4090");
  const Op other_m = gemm_op(11, 8192, 1024, false, DType::BF16);  // ApxInf measured M = 10
  EXPECT_FALSE(with->op_cost(other_m, d4090, unit).measured);
  EXPECT_DOUBLE_EQ(with->op_cost(other_m, d4090, unit).seconds, without->op_cost(other_m, d4090, unit).seconds);
  const DeviceInstance h100 = gpu(cat_, "h100-sxm");
  const Op same = gemm_op(10, 8192, 1024, false, DType::BF16);
  EXPECT_FALSE(with->op_cost(same, h100, unit).measured);
  EXPECT_DOUBLE_EQ(with->op_cost(same, h100, unit).seconds, without->op_cost(same, h100, unit).seconds);
}

TEST_F(KernelMeasured, BadMeasuredListsNameTheKey) {
  auto err = [&](const std::string& v) {
    try {
      kernel_with(v);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(err("/no/such/profile.json").find("cannot read '/no/such/profile.json'"), std::string::npos);
  EXPECT_NE(err("/no/such/profile.json").find("measured"), std::string::npos);
  EXPECT_NE(err(path_ + "," + path_).find("two profiles for GPU 'rtx4090'"), std::string::npos);
  EXPECT_NE(err(path_ + ",").find("empty profile path"), std::string::npos);
  const std::string junk = (testing::scratch_dir("kernel_measured_junk") / "junk.json").string();
  std::ofstream(junk) << "{\"not\": \"a profile\"}";
  EXPECT_NE(err(junk), "accepted");
}

}  // namespace
}  // namespace vlasim
