// The hardware catalog: shipped entries load; broken entries fail with file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/hardware/hardware.h"
#include "scratch.h"

namespace fs = std::filesystem;

namespace vlasim {
namespace {

TEST(Catalog, ShippedEntriesLoadWithSources) {
  Catalog c = Catalog::load_dir(default_catalog_dir());
  for (const char* name : {"h100-sxm", "h200-sxm", "a100-sxm-80gb", "a40", "l20", "rtx4090",
                           "rtx-pro-6000-blackwell", "jetson-agx-orin-64gb", "jetson-agx-thor",
                           "xeon-platinum-8470q", "epyc-2vcpu", "pcie4-x16", "pcie5-x16"}) {
    const DeviceSpec* d = c.find(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_FALSE(d->source.empty()) << name;
  }
  const DeviceSpec& xeon = *c.find("xeon-platinum-8470q");
  EXPECT_EQ(xeon.cores(), 104);
  // AMX: 1024 bf16 FLOP/cycle/core at 2.1 GHz.
  EXPECT_NEAR(xeon.isa.at("amx").matrix_bf16, 1024 * 2.1e9, 1e6);
  EXPECT_NEAR(c.find("rtx4090")->peak.matrix(DType::BF16), 165e12, 1e9);
}

TEST(Catalog, EveryBrokenEntryFailsWithFileLineAndKey) {
  int checked = 0;
  for (auto& e : fs::directory_iterator(std::string(VLASIM_SOURCE_DIR) + "/tests/data/broken_catalog")) {
    std::string path = e.path().string();
    SCOPED_TRACE(path);
    std::ifstream in(path);
    std::string key_line, line_line;
    std::getline(in, key_line);
    std::getline(in, line_line);
    std::string key = key_line.substr(std::string("# expect-key: ").size());
    int line = std::stoi(line_line.substr(std::string("# expect-line: ").size()));
    Catalog c;
    try {
      c.load_file(path);
      ADD_FAILURE() << "accepted a broken entry";
    } catch (const ConfigError& err) {
      EXPECT_EQ(err.file(), path);
      EXPECT_EQ(err.key(), key) << err.what();
      EXPECT_EQ(err.line(), line) << err.what();
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(Catalog, TimeSlicingFiguresHaveCitedDefaultsAndMayBeGiven) {
  Catalog c = Catalog::load_dir(default_catalog_dir());
  EXPECT_DOUBLE_EQ(c.find("h100-sxm")->time_slice_s, 2e-3);
  EXPECT_DOUBLE_EQ(c.find("h100-sxm")->context_switch_s, 50e-6);
  Catalog t;
  t.load_text("g:\n  type: gpu\n  source: t\n  sms: 10\n  tflops_bf16: 10\n  tflops_fp32: 1\n  bw_gbs: 100\n"
              "  mem_gb: 8\n  time_slice_us: 1000\n  context_switch_us: 0\n",
              "<test>");
  EXPECT_DOUBLE_EQ(t.find("g")->time_slice_s, 1e-3);
  EXPECT_DOUBLE_EQ(t.find("g")->context_switch_s, 0);
}

TEST(Catalog, DuplicateNamesAcrossFilesAreRefused) {
  std::string dir = testing::scratch_dir("dup_catalog").string();
  const char* entry = "x:\n  type: link\n  source: t\n  h2d_gbs: 1\n  d2h_gbs: 1\n";
  std::ofstream(dir + "/a.yaml") << entry;
  std::ofstream(dir + "/b.yaml") << entry;
  EXPECT_THROW(Catalog::load_dir(dir), ConfigError);
}

}  // namespace
}  // namespace vlasim
