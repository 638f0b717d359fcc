// The shape-aware GPU cost model: waves, padding, bandwidth per SM, host-bound eager kernels.
#include <gtest/gtest.h>

#include <memory>

#include "scenarios/scenario.h"
#include "sim/costs/cost_models.h"
#include "sim/hardware/hardware.h"
#include "sim/costs/shaped_cost_model.h"

namespace vlasim {
namespace {

const DeviceSpec& h100() {
  static const Catalog c = Catalog::load_dir(default_catalog_dir());
  return *c.find("h100-sxm");
}

Op gemm(int64_t m, int64_t n, int64_t k) {
  Op o;
  o.kind = OpKind::Gemm;
  o.dtype = DType::BF16;
  o.m = m, o.n = n, o.k = k;
  o.flops = 2.0 * m * n * k;
  o.weight_bytes = 2.0 * k * n;
  o.bytes_read = o.weight_bytes + 2.0 * m * k;
  o.bytes_written = 2.0 * m * n;
  return o;
}

Op copy(int64_t rows, int64_t width) {
  Op o;
  o.kind = OpKind::Elementwise;
  o.rows = rows, o.width = width;
  o.flops = double(rows) * width;
  o.bytes_read = o.bytes_written = 4.0 * rows * width;
  return o;
}

double t(const Op& op, int sms, bool graph = true) {
  return shaped_gpu_op_cost(op, h100(), sms, graph, ShapedParams{}).seconds;
}

TEST(ShapedCostModel, OneTileMoreThanTheSmsCostsAnotherWave) {
  const DeviceSpec& d = h100();
  ASSERT_EQ(d.sms, 132);
  // Compute-bound shapes in 128 x 128 tiles: 12 x 11 = 132 tiles (one wave), then
  // 7 x 19 = 133 tiles (0.75% more work).
  const double full = t(gemm(12 * 128, 11 * 128, 16384), 132);
  const double more = t(gemm(7 * 128, 19 * 128, 16384), 132);
  EXPECT_GT(more / full, 1.3) << full << " " << more;  // the best tiling still needs more waves
}

TEST(ShapedCostModel, RowsBelowATilePayForTheWholeTile) {
  const double m16 = t(gemm(16, 4096, 4096), 132);
  const double m128 = t(gemm(128, 4096, 4096), 132);
  EXPECT_GT(m16 / m128, 0.5);  // 1/8 of the FLOPs, more than half the time
}

TEST(ShapedCostModel, AMemoryBoundKernelNeedsOnlyTheSmsThatSaturateBandwidth) {
  const Op big = copy(1 << 16, 4096);  // 2 GB moved
  const double all = t(big, 132), half = t(big, 66), quarter = t(big, 33);
  EXPECT_NEAR(half / all, 1.0, 0.02);    // saturating_sms 0.5: 66 SMs pull the whole bandwidth
  EXPECT_NEAR(quarter / all, 2.0, 0.05);  // 33 pull half of it
}

TEST(ShapedCostModel, EagerTinyKernelsWaitForTheHostAndGraphsDoNot) {
  const Op tiny = copy(1, 64);
  ShapedParams p;
  p.host_op_s = 30e-6;
  const OpCost eager = shaped_gpu_op_cost(tiny, h100(), 132, false, p);
  const OpCost graph = shaped_gpu_op_cost(tiny, h100(), 132, true, p);
  EXPECT_DOUBLE_EQ(eager.seconds, 30e-6);
  EXPECT_NEAR(graph.seconds, h100().kernels.kernel_s + h100().graph_launch_s, 1e-12);
  // A long kernel hides the host time.
  const Op big = gemm(8192, 8192, 8192);
  EXPECT_DOUBLE_EQ(shaped_gpu_op_cost(big, h100(), 132, false, p).seconds,
                   shaped_gpu_op_cost(big, h100(), 132, true, p).seconds);
}

TEST(ShapedCostModel, IsRegisteredWithItsParametersAndRefusesImpossibleOnes) {
  const ConfigNode ok = ConfigNode::load_string("eff_scale: 1.0\nhost_op_us: 10", "t.yaml");
  EXPECT_NE(cost_models().make("shaped", Params(ok), ok), nullptr);
  const ConfigNode bad = ConfigNode::load_string("eff_scale: 0", "t.yaml");
  try {
    cost_models().make("shaped", Params(bad), bad);
    FAIL() << "eff_scale 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("eff_scale"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("t.yaml"), std::string::npos) << e.what();
  }
}

TEST(ShapedCostModel, CatalogKernelsBlockIsCheckedWithFileLineAndKey) {
  Catalog c;
  try {
    c.load_text("g:\n  type: gpu\n  source: x\n  sms: 10\n  tflops_bf16: 10\n  tflops_fp32: 1\n"
                "  mem_gb: 1\n  bw_gbs: 100\n  kernels: {gemm: 1.5}\n",
                "cat.yaml");
    FAIL() << "gemm 1.5 accepted";
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("cat.yaml:9"), std::string::npos) << w;
    EXPECT_NE(w.find("gemm"), std::string::npos) << w;
  }
}

// An embedding lookup reads the rows it gathers, not its table: pi0.5's 257k x 2048 bf16
// vocabulary (1.05 GB) used to be charged whole, 7.35 ms a request on an RTX 4090 with shaped.
// Both GPU models now price a 10-row lookup the same whatever the table, and near a small op.
TEST(ShapedCostModel, EmbeddingLookupReadsItsRowsNotItsTable) {
  auto lookup = [](double vocab) {
    Op o;
    o.kind = OpKind::Embedding;
    o.fn = OpFn::Lookup;
    o.dtype = DType::BF16;
    o.rows = 10, o.width = 2048, o.vocab = int64_t(vocab);
    o.weight_bytes = vocab * 2048 * 2;
    o.out_bytes = 10.0 * 2048 * 2;
    o.bytes_read = o.out_bytes + 40;
    o.bytes_written = o.out_bytes;
    return o;
  };
  DeviceInstance dev;
  dev.name = "h100-sxm";
  dev.spec = h100();
  dev.graph_capture = true;
  UnitDecl unit;
  for (const char* m : {"roofline", "shaped"}) {
    const std::unique_ptr<CostModel> cm = cost_models().make(m, Params(), ConfigNode());
    const double small = cm->op_cost(lookup(1000), dev, unit).seconds;
    const double big = cm->op_cost(lookup(257152), dev, unit).seconds;
    EXPECT_DOUBLE_EQ(small, big) << m;
    EXPECT_LT(big, 20e-6) << m;  // the whole table would be 1.05 GB / 3.35 TB/s = 315 us
  }
}

}  // namespace
}  // namespace vlasim
