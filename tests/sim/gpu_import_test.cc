// Importers of public measured GPU kernel times (sim/measured/gpu_import.h) on the vendored files
// (data/gpu_profiles) and on bad files, and the GPU kernel model (sim/costs/gpu_kernel_model.h).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <array>
#include <cmath>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scenarios/config/config.h"
#include "scratch.h"
#include "sim/measured/gpu_import.h"
#include "sim/costs/cost_models.h"
#include "sim/costs/gpu_kernel_model.h"
#include "sim/measured/profile.h"

namespace vlasim {
namespace {

const std::string kData = std::string(VLASIM_SOURCE_DIR) + "/data/gpu_profiles";
const std::string kH100Llama = kData + "/vidur/data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv";
const std::string kOrin = kData + "/apxinf/configs/pi05/orin_sm87_bf16_v2_v3_h10_tactics.json";

const KernelSample* find_sig(const std::vector<KernelSample>& v, const std::string& sig) {
  for (const KernelSample& s : v)
    if (op_signature(s.op) == sig) return &s;
  return nullptr;
}

TEST(GpuImport, VidurH100Llama2) {
  const std::vector<KernelSample> s = import_vidur(kH100Llama);
  // 1044 rows x 8 ops, equal shapes merged (norms and adds at every TP, repeated 2048/4096 rows).
  EXPECT_EQ(s.size(), 5698u);
  const KernelSample* up =
      find_sig(s, "gemm/linear/fp16/m=4096,n=22016,k=4096,batch=1,bias=0,act=none,gate_up=0,residual=0,gate=0");
  ASSERT_NE(up, nullptr);
  EXPECT_NEAR(up->seconds, 0.993e-3, 1e-9);  // median of the two 4096-token TP1 rows (0.987, 0.999)
  EXPECT_EQ(up->merged, 2);
  EXPECT_EQ(up->source, "vidur:" + kH100Llama + ":2");
  EXPECT_DOUBLE_EQ(up->op.flops, 2.0 * 4096 * 22016 * 4096);
  const KernelSample* one =
      find_sig(s, "gemm/linear/fp16/m=1,n=22016,k=4096,batch=1,bias=0,act=none,gate_up=0,residual=0,gate=0");
  ASSERT_NE(one, nullptr);
  EXPECT_NEAR(one->seconds, 0.064e-3, 1e-9);
  EXPECT_NE(find_sig(s, "norm/rmsnorm/fp16/rows=1,width=4096"), nullptr);
}

TEST(GpuImport, VidurFolderHoldsBothModels) {
  const std::vector<KernelSample> s = import_vidur(kData + "/vidur/data/profiling/compute/a40");
  EXPECT_EQ(s.size(), 7511u);
  EXPECT_NE(find_sig(s, "norm/layernorm/fp16/rows=1,width=2560"), nullptr);  // phi-2
}

TEST(GpuImport, ApxInfOrin) {
  const std::vector<KernelSample> s = import_apxinf(kOrin);
  EXPECT_EQ(s.size(), 52u);
  EXPECT_EQ(op_signature(s[0].op), "gemm/linear/bf16/m=1,n=1024,k=1024,batch=1,bias=0,act=none,gate_up=0,residual=0,gate=0");
  EXPECT_NEAR(s[0].seconds, 0.020280536264181137e-3, 1e-12);
  EXPECT_EQ(s[0].reps, 30);
}

TEST(GpuImport, ProfileRoundTrips) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  const DeviceProfile p = samples_to_profile(import_apxinf(kOrin), *cat.find("jetson-agx-orin-64gb"), "apxinf", "Orin");
  ASSERT_EQ(p.sections.size(), 1u);
  EXPECT_EQ(p.sections[0].threads, 16);  // the GPU's SMs (profile_width)
  EXPECT_EQ(p.sections[0].dtype, DType::BF16);
  EXPECT_EQ(p.sections[0].table.size(), 52u);
  EXPECT_EQ(parse_profile(profile_to_json(p), "p.json"), p);
}

std::string error_of(const std::string& text, bool json) {
  const std::string path = (testing::scratch_dir("gpu_import") / (json ? "bad.json" : "bad.csv")).string();
  std::ofstream(path) << text;
  try {
    json ? import_apxinf(path) : import_vidur(path);
  } catch (const ConfigError& e) {
    return std::string(e.what()).substr(path.size());
  }
  return "accepted";
}

const std::string kHead =
    "time_stats.add.min,time_stats.add.max,time_stats.add.mean,time_stats.add.median,time_stats.add.std,"
    "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n";

TEST(GpuImport, BadVidurFilesNameLineAndColumn) {
  EXPECT_EQ(error_of(kHead + "0.03,0.04,0.035,0.035,0.001,32,32,4096,11008,32000,True,1,1\n", false), "accepted");
  EXPECT_EQ(error_of(kHead + "0.03,0.04,0.035,0.035,0.001,32,32,4096,11008\n", false).substr(0, 6), ":2:45:");
  EXPECT_NE(error_of("time_stats.add.min,bogus\n1,2\n", false).find(":1:20: key 'bogus': unknown column"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + "0.03,0.04,0.035,x,0.001,32,32,4096,11008,32000,True,1,1\n", false)
                .find(":2:17: key 'time_stats.add.median': 'x' is not a number"),
            std::string::npos);
  // seconds where milliseconds are expected, and a median outside [min, max]
  EXPECT_NE(error_of(kHead + "3e-5,4e-5,3.5e-5,3.5e-5,1e-6,32,32,4096,11008,32000,True,1,1\n", false)
                .find("not plausibly in milliseconds"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + "0.03,0.04,0.035,0.05,0.001,32,32,4096,11008,32000,True,1,1\n", false)
                .find("outside [min, max]"),
            std::string::npos);
  EXPECT_NE(error_of(kHead, false).find("no data rows"), std::string::npos);
  EXPECT_NE(error_of("", false).find("empty file"), std::string::npos);
}

TEST(GpuImport, BadApxInfFilesNameLineAndColumn) {
  EXPECT_EQ(error_of("{\n \"schema\": \"apxinf.cuda.tuning.v1\",\n \"records\": [\n", true).substr(0, 3), ":4:");
  const std::string rec = "{\"schema\": \"apxinf.cuda.tuning.v1\", \"records\": [\n{\"key\": {\"m\": 1, \"n\": 2, \"k\": 3, "
                          "\"op\": \"bf16\", \"activation_dtype\": \"bf16\", \"weight_dtype\": \"bf16\", "
                          "\"output_dtype\": \"bf16\", \"epilogue\": \"none\"},\n \"milliseconds\": ";
  EXPECT_EQ(error_of(rec + "0.01}]}", true), "accepted");
  EXPECT_NE(error_of(rec + "\"x\"}]}", true).find(":3:2: key 'records[0].milliseconds'"), std::string::npos);
  EXPECT_NE(error_of(rec + "0.01, \"extra\": 1}]}", true).find("unknown key 'extra'"), std::string::npos);
  EXPECT_NE(error_of(rec + "1e9}]}", true).find("not plausibly in milliseconds"), std::string::npos);
}

TEST(GpuKernelModel, AddsLatencyAndGrowsWithWork) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  const DeviceSpec& h100 = *cat.find("h100-sxm");
  GpuKernelParams p;
  p.by_class["gemm"] = {5e-6, 0.9, 0.8, 4};
  const double small = kernel_model_seconds(gemm_op(1, 22016, 4096, false, DType::F16), h100, p);
  // weights 180 MB at 0.9 of the datasheet bandwidth, plus the 5 us latency; the
  // tensor-core time is a few percent of it and, at p = 4, adds well under 1%
  const double memory = 2.0 * (22016.0 * 4096 + 4096 + 22016) / (0.9 * h100.mem_bw);
  EXPECT_NEAR(small, 5e-6 + memory, 0.01 * memory);
  EXPECT_GT(small, 5e-6 + memory);
  EXPECT_GT(kernel_model_seconds(gemm_op(4096, 22016, 4096, false, DType::F16), h100, p), small);
}

// gemm_tiling keeps the promises of its header (blocks, waves, the sum), splits K when a GEMM
// has too few output tiles to fill the SMs and its tensor-core time dominates, and leaves a
// GEMM with tiles for many waves unsplit.
TEST(GpuKernelModel, GemmTilingSplitsKOnlyWhenTilesCannotFillTheSms) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  const DeviceSpec& h100 = *cat.find("h100-sxm");
  const KernelClassFit f{4e-6, 0.9, 0.05, 2};  // a slow tensor rate: compute-bound shapes
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{64, 256, 8192}, {4096, 4096, 4096}, {1, 4096, 4096},
                                                            {200, 1000, 300}}) {
    const GemmTiling g = gemm_tiling(gemm_op(m, n, k, false, DType::F16), h100, f);
    EXPECT_EQ(g.tiles, ((m + g.tile_m - 1) / g.tile_m) * ((n + g.tile_n - 1) / g.tile_n)) << m;
    EXPECT_EQ(g.blocks, g.tiles * g.split_k) << m;
    EXPECT_EQ(g.waves, (g.blocks + h100.sms - 1) / h100.sms) << m;
    EXPECT_NEAR(g.compute_s, double(g.waves) * g.block_s, 1e-15) << m;
    const double hi = std::max(g.memory_s, g.compute_s);
    const double comb = hi * std::pow(std::pow(g.memory_s / hi, 2) + std::pow(g.compute_s / hi, 2), 0.5);
    EXPECT_NEAR(g.seconds, g.latency_s + comb + g.reduce_s, 1e-12) << m;
    EXPECT_EQ(g.reduce_s > 0, g.split_k > 1) << m;
  }
  const GemmTiling narrow = gemm_tiling(gemm_op(64, 256, 8192, false, DType::F16), h100, f);
  EXPECT_GT(narrow.split_k, 1);  // 4 tiles of 64 x 64 on 132 SMs
  EXPECT_LE(narrow.blocks, h100.sms);
  EXPECT_EQ(gemm_tiling(gemm_op(4096, 4096, 4096, false, DType::F16), h100, f).split_k, 1);
}

// gemm_compute_rate: f x peak on a GPU with one tensor rate; on a GeForce-style entry (an
// fp16-accumulate rate above the fp32-accumulate peak) f x that rate, at most the peak, for
// fp16 and bf16 only; every rate scaled by the cited clock under load. The shipped RTX 4090
// entry runs its compute-bound GEMMs at its whole bf16 peak times its load clock.
TEST(GpuKernelModel, TensorRateCappedAtThePeakWhereTheFeedIsFaster) {
  DeviceSpec d;
  d.sms = 100;
  d.peak.matrix_bf16 = d.peak.matrix_fp16 = 100e12;
  d.peak.matrix_fp32 = d.peak.vector_fp32 = 50e12;
  KernelClassFit f;
  f.compute_frac = 0.75;
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, d, f), 75e12);
  d.peak.matrix_fp16_acc16 = 200e12;
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, d, f), 100e12);  // 0.75 x 200, capped
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::F16, d, f), 100e12);
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::F32, d, f), 37.5e12);  // no tensor feed for fp32
  f.compute_frac = 0.4;
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, d, f), 80e12);  // below the cap
  d.boost_mhz = 2000;
  d.load_mhz = 2200;
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, d, f), 88e12);
  f.compute_frac = 0.75;
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, d, f), 110e12);

  Catalog cat = Catalog::load_dir(default_catalog_dir());
  const DeviceSpec& rtx = *cat.find("rtx4090");
  const DeviceSpec& h100 = *cat.find("h100-sxm");
  ASSERT_GT(rtx.peak.matrix_fp16_acc16, rtx.peak.matrix_bf16);
  EXPECT_EQ(h100.peak.matrix_fp16_acc16, 0);
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, rtx, f), rtx.peak.matrix_bf16 * rtx.load_mhz / rtx.boost_mhz);
  EXPECT_DOUBLE_EQ(gemm_compute_rate(DType::BF16, h100, f), 0.75 * h100.peak.matrix_bf16);
  // A compute-bound GEMM's time follows the rate.
  const Op big = gemm_op(4096, 8192, 8192, false, DType::BF16);
  KernelClassFit g{3e-6, 0.75, 0.75, 3};
  const GemmTiling t = gemm_tiling(big, rtx, g);
  EXPECT_NEAR(t.compute_s, double(t.waves) * 2.0 * t.tile_m * t.tile_n * 8192 /
                               (gemm_compute_rate(DType::BF16, rtx, g) / rtx.sms), 1e-12);
}

// A LayerNorm is priced by the `layernorm` fit where the fit has one, else by `norm`; an
// RMSNorm always by `norm`; and the shipped fit holds both, RMSNorm in waves of rows over the
// SMs (a per-SM rate) and LayerNorm by a DRAM fraction.
TEST(GpuKernelModel, LayerNormHasItsOwnFitAndFallsBackToNorm) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  const DeviceSpec& h100 = *cat.find("h100-sxm");
  const Op ln = norm_op(OpFn::LayerNorm, 1024, 4096, DType::F16);
  const Op rms = norm_op(OpFn::RMSNorm, 1024, 4096, DType::F16);
  EXPECT_EQ(kernel_class(ln), "norm");
  EXPECT_EQ(kernel_fit_class(ln), "layernorm");
  EXPECT_EQ(kernel_fit_class(rms), "norm");
  GpuKernelParams p;
  p.by_class["norm"] = {4e-6, 0.5, 1, 1};
  EXPECT_EQ(find_fit(p, ln), &p.by_class["norm"]);
  EXPECT_DOUBLE_EQ(kernel_model_seconds(ln, h100, p), kernel_model_seconds(rms, h100, p) +
                       (ln.bytes_read + ln.bytes_written - rms.bytes_read - rms.bytes_written) / (0.5 * h100.mem_bw));
  p.by_class["layernorm"] = {6e-6, 0.25, 1, 1};
  EXPECT_EQ(find_fit(p, ln), &p.by_class["layernorm"]);
  EXPECT_EQ(find_fit(p, rms), &p.by_class["norm"]);
  EXPECT_DOUBLE_EQ(kernel_model_seconds(ln, h100, p), 6e-6 + (ln.bytes_read + ln.bytes_written) / (0.25 * h100.mem_bw));
  EXPECT_EQ(find_fit(GpuKernelParams{}, ln), nullptr);

  std::ifstream in(default_kernel_fit_path());
  std::stringstream text;
  text << in.rdbuf();
  const GpuKernelParams shipped = parse_kernel_params(text.str(), default_kernel_fit_path());
  ASSERT_TRUE(shipped.by_class.count("layernorm"));
  ASSERT_TRUE(shipped.by_class.count("norm"));
  EXPECT_GT(shipped.by_class.at("norm").sm_rate, 0);
  EXPECT_EQ(shipped.by_class.at("layernorm").sm_rate, 0);
}

// The registered `kernel` cost model with the shipped fit (sim/kernel_fit/kernel_model.csv,
// fitted on every vendored GPU) prices the Llama-2-7b gate/up projection (4096 -> 22016, the
// shape of a 7B backbone's MLP in the shipped scenarios) near Vidur's measured H100 kernel
// times at every measured token count, and never cheaper for more tokens.
TEST(KernelCostModel, ShippedFitNearVidurH100AndMonotoneInM) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  ASSERT_NE(cost_models().find("kernel"), nullptr);
  const std::unique_ptr<CostModel> m = cost_models().make("kernel", Params{}, ConfigNode{});
  DeviceInstance dev;
  dev.name = "h100-sxm";
  dev.spec = *cat.find("h100-sxm");
  dev.graph_capture = true;
  UnitDecl unit;
  int checked = 0;
  double prev = 0;
  int64_t prev_m = 0;
  std::map<int64_t, double> measured;
  for (const KernelSample& s : import_vidur(kH100Llama))
    if (s.op.kind == OpKind::Gemm && s.op.n == 22016 && s.op.k == 4096) measured[s.op.m] = s.seconds;
  ASSERT_GT(measured.size(), 20u);
  for (auto [M, meas] : measured) {
    const Op op = gemm_op(M, 22016, 4096, false, DType::F16);
    const double t = m->op_cost(op, dev, unit).seconds - dev.spec.graph_launch_s;
    EXPECT_GT(t / meas, 0.6) << "M " << M;
    EXPECT_LT(t / meas, 1.6) << "M " << M;
    EXPECT_GE(t, prev) << "M " << M << " after " << prev_m;
    prev = t;
    prev_m = M;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

// The elementwise form (sim/costs/gpu_kernel_model.h): rows go one per SM in waves, so up to the SM
// count a row more adds only its DRAM bytes, and the first row past it starts a new wave (a
// whole row at the per-SM rate). The old form (sm_rate 0, bytes / (b x bw)) grows evenly and
// fails the step check.
TEST(KernelCostModel, ElementwiseRowsPastTheSmCountStartANewWave) {
  DeviceSpec d;
  d.sms = 132;
  d.mem_bw = 3.35e12;
  d.kernels.memory = 0.87;
  KernelClassFit f;
  f.latency_s = 2e-6;
  f.bw_frac = f.compute_frac = f.p = 1;
  f.sm_rate = 10e9;
  const int64_t width = 4096;
  auto t = [&](int64_t rows, const KernelClassFit& k) {
    return kernel_class_seconds(eltwise_op(OpFn::Add, rows, width, 2, DType::F16), d, k);
  };
  const double row_bytes = 3.0 * width * 2;  // two inputs and the output, fp16
  const double dram_step = row_bytes / (0.87 * 3.35e12);
  const double below = t(d.sms, f) - t(d.sms - 1, f);
  const double past = t(d.sms + 1, f) - t(d.sms, f);
  EXPECT_NEAR(below, dram_step, 1e-3 * dram_step);
  EXPECT_NEAR(past, dram_step + row_bytes / 10e9, 1e-3 * past);
  EXPECT_GT(past, 10 * below);
  // One row and a full wave differ by DRAM bytes only.
  EXPECT_NEAR(t(d.sms, f) - t(1, f), (d.sms - 1) * dram_step, 1e-3 * d.sms * dram_step);
  // Non-decreasing in rows.
  double prev = 0;
  for (int64_t r = 1; r <= 600; ++r) {
    EXPECT_GE(t(r, f), prev) << r;
    prev = t(r, f);
  }
  // The old form has no step.
  KernelClassFit old = f;
  old.sm_rate = 0;
  old.bw_frac = 0.6;
  const double old_below = t(d.sms, old) - t(d.sms - 1, old), old_past = t(d.sms + 1, old) - t(d.sms, old);
  EXPECT_NEAR(old_past, old_below, 1e-3 * old_below);
}

// A non-GEMM class's per-SM rate is stated at 1.5 GHz: a GPU runs it at its cited clock under
// load (load_mhz, else boost_mhz) over that, and as stated where its entry gives no clock.
TEST(KernelCostModel, PerSmRateScalesWithTheSmClock) {
  DeviceSpec d;
  d.sms = 100;
  d.mem_bw = 1e12;
  d.kernels.memory = 1;
  EXPECT_DOUBLE_EQ(sm_clock_scale(d), 1.0);
  KernelClassFit f;
  f.latency_s = 1e-6;
  f.bw_frac = f.compute_frac = f.p = 1;
  f.sm_rate = 10e9;
  const Op op = eltwise_op(OpFn::Add, 1000, 4096, 2, DType::F16);  // 10 waves of rows
  const double row_term = 10 * (op.bytes_read + op.bytes_written) / 1000 / 10e9;
  const double no_clock = kernel_class_seconds(op, d, f);
  d.boost_mhz = 3000;
  EXPECT_DOUBLE_EQ(sm_clock_scale(d), 2.0);
  EXPECT_NEAR(no_clock - kernel_class_seconds(op, d, f), row_term / 2, 1e-3 * row_term);
  d.load_mhz = 1500;  // the clock under load, where given, not the boost clock
  EXPECT_DOUBLE_EQ(sm_clock_scale(d), 1.0);
  EXPECT_DOUBLE_EQ(kernel_class_seconds(op, d, f), no_clock);
  // The shipped catalog gives every Vidur GPU its boost clock.
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  EXPECT_DOUBLE_EQ(sm_clock_scale(*cat.find("a100-sxm-80gb")), 1410.0 / 1500);
  EXPECT_DOUBLE_EQ(sm_clock_scale(*cat.find("h100-sxm")), 1980.0 / 1500);
}

// What parse_kernel_params says of fit file text `t` named f.csv ("accepted" if it reads).
std::string fit_error(const std::string& t) {
  try {
    parse_kernel_params(t, "f.csv");
  } catch (const std::runtime_error& e) {
    return std::string(e.what());
  }
  return std::string("accepted");
}

// The three classes besides `cls` at the defaults, so a row of `cls` makes a whole fit file.
std::string other_rows(const std::string& cls, bool sm_gbs = true) {
  std::string out;
  for (const char* c : kKernelFitClasses)
    if (c != cls) out += std::string(c) + ",5e-06,0.8,0.75,4" + (sm_gbs ? ",0\n" : "\n");
  return out;
}

TEST(KernelCostModel, FitFileCarriesThePerSmRate) {
  GpuKernelParams p;
  p.by_class["gemm"] = {5e-6, 0.7, 0.85, 4};
  p.by_class["elementwise"] = {2e-6, 1, 1, 1, 12.5e9};
  const GpuKernelParams q = parse_kernel_params(kernel_params_csv(p, "n"), "x");
  EXPECT_DOUBLE_EQ(q.by_class.at("elementwise").sm_rate, 12.5e9);
  EXPECT_DOUBLE_EQ(q.by_class.at("gemm").sm_rate, 0);
  const std::string h = "class,latency_s,bw_frac,compute_frac,p,sm_gbs\n";
  EXPECT_NE(fit_error(h + "elementwise,2e-6,1,1,1\n").find("f.csv:2: expected 6 fields"), std::string::npos);
  EXPECT_NE(fit_error(h + "elementwise,2e-6,1,1,1,-3\n").find("f.csv:2:24: key 'sm_gbs': sm_gbs '-3'"), std::string::npos);
  EXPECT_NE(fit_error(h + "gemm,5e-6,0.7,0.8,4,10\n").find("sm_gbs must be 0 for gemm"), std::string::npos);
  // The older header (no sm_gbs) still reads, every class without the per-SM term.
  const GpuKernelParams o = parse_kernel_params("class,latency_s,bw_frac,compute_frac,p\nnorm,3e-6,0.6,1,1\n" +
                                                    other_rows("norm", false), "o");
  EXPECT_DOUBLE_EQ(o.by_class.at("norm").sm_rate, 0);
}

TEST(KernelCostModel, FitFileRoundTripsAndRejectsBadRows) {
  GpuKernelParams p;
  p.by_class["gemm"] = {5e-6, 0.7, 0.85, 4};
  p.by_class["norm"] = {3e-6, 0.6, 1, 1};
  // The classes not fitted are written at their defaults: the file is whole.
  const GpuKernelParams q = parse_kernel_params(kernel_params_csv(p, "a note\nsecond line"), "x");
  ASSERT_EQ(q.by_class.size(), 4u);
  EXPECT_DOUBLE_EQ(q.by_class.at("gemm").compute_frac, 0.85);
  EXPECT_DOUBLE_EQ(q.by_class.at("norm").latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(q.by_class.at("layernorm").bw_frac, KernelClassFit{}.bw_frac);
  const std::string h = "class,latency_s,bw_frac,compute_frac,p\n";
  EXPECT_EQ(fit_error(""), "f.csv: no header line (class,latency_s,bw_frac,compute_frac,p,sm_gbs)");
  EXPECT_NE(fit_error(h + "gemm,5e-6,0.7,0.8\n").find("f.csv:2: expected 5 fields"), std::string::npos);
  EXPECT_NE(fit_error(h + "conv,5e-6,0.7,0.8,4\n").find("unknown class 'conv'"), std::string::npos);
  EXPECT_NE(fit_error(h + "gemm,5e-6,x,0.8,4\n").find("f.csv:2:11: key 'bw_frac': 'x' is not a number"), std::string::npos);
  EXPECT_NE(fit_error(h + "gemm,5,0.7,0.8,4\n").find("key 'latency_s': '5' must be from 1e-09 to 0.01 seconds"),
            std::string::npos);
}

// Issue 49 items 4, 5 and 9: a field left empty (it took the previous row's value), figures that
// priced ops at "inf ms", a header-only file or one without a class (the defaults stood in
// silently) are refused naming the file, line and column.
TEST(KernelCostModel, FitFileRefusesEmptyImplausibleAndMissingRows) {
  const std::string h = "class,latency_s,bw_frac,compute_frac,p,sm_gbs\n";
  const std::string rest = other_rows("gemm");
  EXPECT_EQ(fit_error(h + "gemm,,0.73,0.74,2.8,0\n" + rest), "f.csv:2:6: key 'latency_s': empty value; expected a number");
  EXPECT_NE(fit_error(h + "gemm,3e-6,0.73,0.74,1e-9,0\n" + rest).find("key 'p': '1e-9' must be from 1 to 64"),
            std::string::npos);
  EXPECT_NE(fit_error(h + "gemm,3e-6,1e-300,0.74,2.8,0\n" + rest).find("key 'bw_frac': '1e-300' must be from 0.01"),
            std::string::npos);
  EXPECT_NE(fit_error(h + "gemm,3e-6,0.73,1e-300,2.8,0\n" + rest).find("key 'compute_frac'"), std::string::npos);
  const std::string ew = other_rows("elementwise");
  EXPECT_NE(fit_error(h + "elementwise,2e-6,1,1,1,1e-300\n" + ew).find("key 'sm_gbs'"), std::string::npos);
  EXPECT_EQ(fit_error(h), "f.csv:1: no row for class elementwise, gemm, layernorm, norm: a fit file gives every class "
                          "(gemm, layernorm, elementwise, norm); is it truncated?");
  EXPECT_NE(fit_error(h + rest).find("no row for class gemm"), std::string::npos);
  EXPECT_NE(fit_error(h + "gemm,3e-6,0.73,0.74,2.8,0\n" + rest + "gemm,3e-6,0.73,0.74,2.8,0\n").find("class 'gemm' is given twice"),
            std::string::npos);
  // Issue 49 item 15: a spreadsheet's byte order mark and CR line ends are not part of the text.
  EXPECT_EQ(fit_error("\xEF\xBB\xBF" + h + "gemm,3e-6,0.73,0.74,2.8,0\r\n" + rest), "accepted");
  // Every file the writer makes reads back, even from a fit of no class at all.
  EXPECT_EQ(fit_error(kernel_params_csv(GpuKernelParams{}, "empty fit")), "accepted");
}

// What the `kernel` cost model says when made with the scenario text `params` (a map) read
// as file s.yaml ("made" if it is).
std::string kernel_model_error(const std::string& params) {
  try {
    cost_models().make("kernel", Params(ConfigNode::load_string(params, "s.yaml")), ConfigNode{});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "made";
}

// Issue 49 item 1: a fit file that is a device, a pipe or larger than any input is refused before
// it is read (it grew to 17.8 GB from /dev/zero; a FIFO hung), at the scenario's `fit` key; item
// 14/15: one named by $VLASIM_KERNEL_FIT names the variable, exit 2 (a ConfigError).
TEST(KernelCostModel, FitFileFollowsTheInputFileRule) {
  const std::filesystem::path dir = testing::scratch_dir("kernel_fit_rule");
  EXPECT_NE(kernel_model_error("fit: /dev/zero\n").find("s.yaml:1:6: key 'fit': /dev/zero: cannot read '/dev/zero': "
                                                        "is not a regular file"),
            std::string::npos)
      << kernel_model_error("fit: /dev/zero\n");
  const std::string fifo = (dir / "fifo.csv").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(kernel_model_error("fit: " + fifo + "\n").find("is not a regular file"), std::string::npos);
  EXPECT_NE(kernel_model_error("fit: " + dir.string() + "\n").find("is a directory"), std::string::npos);
  const std::filesystem::path big = dir / "big.csv";
  std::ofstream(big) << "class,latency_s,bw_frac,compute_frac,p,sm_gbs\n";
  std::filesystem::resize_file(big, kMaxInputFileBytes + 1);  // sparse: no disk used
  EXPECT_NE(kernel_model_error("fit: " + big.string() + "\n").find("the limit for an input file is 16 MiB"),
            std::string::npos);
  std::ofstream(dir / "kernel_model.csv") << "class,latency_s,bw_frac,compute_frac,p,sm_gbs\n";
  ::setenv("VLASIM_KERNEL_FIT", dir.c_str(), 1);
  const std::string by_env = kernel_model_error("{}");
  ::unsetenv("VLASIM_KERNEL_FIT");
  EXPECT_NE(by_env.find("<environment>: key 'VLASIM_KERNEL_FIT': the kernel model fit it names: " +
                        (dir / "kernel_model.csv").string() + ":1: no row for class"),
            std::string::npos)
      << by_env;
  EXPECT_EQ(kernel_model_error("{}"), "made");
}

// Issue 49 item 12: a measured time the catalog GPU cannot give is refused naming the sample's
// file and line, the GPU and both figures: faster than its datasheet (a GEMM at 3e20 FLOP/s), or
// a thousand times slower (microseconds written as milliseconds).
TEST(GpuImport, TimesAreHeldAgainstTheDatasheet) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  const DeviceSpec& h100 = *cat.find("h100-sxm");
  std::vector<KernelSample> s = import_vidur(kH100Llama);
  for (const KernelSample& k : s) EXPECT_NO_THROW(check_against_datasheet(k, h100)) << k.source;  // all plausible
  KernelSample big;
  for (const KernelSample& k : s)
    if (k.op.kind == OpKind::Gemm && k.op.m == 4096 && k.op.n == 22016) big = k;
  ASSERT_GT(big.seconds, 0);
  KernelSample fast = big;
  fast.seconds = big.op.flops / 3e20;
  try {
    check_against_datasheet(fast, h100);
    ADD_FAILURE() << "a GEMM at 3e20 FLOP/s was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), big.source);
    EXPECT_NE(e.message().find("faster than h100-sxm's datasheet allows"), std::string::npos) << e.message();
  }
  KernelSample slow = big;
  slow.seconds = big.seconds * 1000;
  EXPECT_THROW(check_against_datasheet(slow, h100), ConfigError);
  // The Orin's own times are plausible on the Orin.
  EXPECT_NO_THROW(samples_to_profile(import_apxinf(kOrin), *cat.find("jetson-agx-orin-64gb"), "apxinf", "Orin"));
}

// Issue 49 item 12: an ApxInf file says the GPU it ran on; one imported for another catalog GPU
// is told apart by name. A key given twice in its JSON is refused, not the last one taken.
TEST(GpuImport, ApxInfDeviceNameAndDuplicateKeys) {
  Catalog cat = Catalog::load_dir(default_catalog_dir());
  std::string name;
  import_apxinf(kOrin, &name);
  EXPECT_EQ(name, "Orin");
  EXPECT_EQ(device_name_mismatch("Orin", *cat.find("jetson-agx-orin-64gb")), "");
  EXPECT_EQ(device_name_mismatch("NVIDIA GeForce RTX 4090", *cat.find("rtx4090")), "");
  EXPECT_EQ(device_name_mismatch("NVIDIA Thor", *cat.find("jetson-agx-thor")), "");
  EXPECT_NE(device_name_mismatch("Orin", *cat.find("h100-sxm")).find("'orin' is not in its name"), std::string::npos);
  std::string text = read_input_file(kOrin);
  const size_t at = text.find("\"m\": 1,");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"m\": 2, ");
  try {
    parse_apxinf(text, "dup.json");
    ADD_FAILURE() << "a duplicate key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "m");
    EXPECT_NE(e.message().find("duplicate key"), std::string::npos);
  }
}

// Issue 49 item 11: a folder's mlp.csv files together past kMaxVidurFolderBytes are refused before
// any is parsed (eight 14.6 MB files took 2 GB of memory).
TEST(GpuImport, VidurFolderIsBoundedAsAWhole) {
  const std::filesystem::path dir = testing::scratch_dir("vidur_folder_bound");
  for (int i = 0; i < 3; ++i) {
    std::filesystem::create_directories(dir / std::to_string(i));
    const std::filesystem::path f = dir / std::to_string(i) / "mlp.csv";
    std::ofstream(f) << read_input_file(kH100Llama);
    std::filesystem::resize_file(f, 12 << 20);  // sparse past the real rows
  }
  try {
    import_vidur(dir.string());
    ADD_FAILURE() << "36 MiB of mlp.csv accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), dir.string());
    EXPECT_NE(e.message().find("more than 32 MiB together"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace vlasim
