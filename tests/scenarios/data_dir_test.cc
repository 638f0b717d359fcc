// Where shipped data is found: the environment override first, then an installed layout next
// to the binary, then the source tree (which is what a build-tree binary like this one gets).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "models/builder.h"
#include "scenarios/config/data_dir.h"
#include "sim/costs/gpu_kernel_model.h"
#include "sim/hardware/hardware.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one scope and restores its previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool installed_layout_beside_binary() {
  return fs::exists(fs::path(module_dir()) / ".." / "share" / "vlasim");
}

TEST(DataDir, ModuleDirIsThisExecutablesFolder) {
  EXPECT_EQ(module_dir(), fs::canonical("/proc/self/exe").parent_path().string());
}

TEST(DataDir, EnvironmentOverrideWins) {
  ScopedEnv cards("VLASIM_CARDS", "/some/cards");
  ScopedEnv catalog("VLASIM_CATALOG", "/some/catalog");
  EXPECT_EQ(default_cards_dir(), "/some/cards");
  EXPECT_EQ(default_catalog_dir(), "/some/catalog");
  EXPECT_EQ(find_data_dir("VLASIM_CARDS", "cards", "/built/in"), "/some/cards");
}

TEST(DataDir, EmptyEnvironmentValueIsIgnored) {
  ScopedEnv cards("VLASIM_CARDS", "");
  ScopedEnv catalog("VLASIM_CATALOG", "");
  EXPECT_FALSE(default_cards_dir().empty());
  EXPECT_FALSE(default_catalog_dir().empty());
}

TEST(DataDir, BuildTreeFallsBackToTheSourceTree) {
  if (installed_layout_beside_binary()) GTEST_SKIP() << "an installed vlasim sits beside this binary";
  ScopedEnv root("VLASIM_DATA_DIR", nullptr);
  ScopedEnv cards("VLASIM_CARDS", nullptr);
  ScopedEnv catalog("VLASIM_CATALOG", nullptr);
  EXPECT_EQ(default_cards_dir(), std::string(VLASIM_SOURCE_DIR) + "/models/cards");
  EXPECT_EQ(default_catalog_dir(), std::string(VLASIM_SOURCE_DIR) + "/sim/catalog");
  EXPECT_EQ(find_data_dir("VLASIM_DATA_DIR_TEST_UNSET", "cards", "/built/in"), "/built/in");
}

TEST(DataDir, OneDataDirServesCardsCatalogAndKernelFit) {
  ScopedEnv root("VLASIM_DATA_DIR", "/kit/share/vlasim");
  ScopedEnv cards("VLASIM_CARDS", nullptr);
  ScopedEnv catalog("VLASIM_CATALOG", nullptr);
  ScopedEnv fit("VLASIM_KERNEL_FIT", nullptr);
  EXPECT_EQ(default_cards_dir(), "/kit/share/vlasim/cards");
  EXPECT_EQ(default_catalog_dir(), "/kit/share/vlasim/catalog");
  EXPECT_EQ(default_kernel_fit_path(), "/kit/share/vlasim/kernel_fit/kernel_model.csv");
}

TEST(DataDir, FolderVariableBeatsTheDataDir) {
  ScopedEnv root("VLASIM_DATA_DIR", "/kit/share/vlasim");
  ScopedEnv cards("VLASIM_CARDS", "/my/cards");
  ScopedEnv catalog("VLASIM_CATALOG", nullptr);
  EXPECT_EQ(default_cards_dir(), "/my/cards");
  EXPECT_EQ(default_catalog_dir(), "/kit/share/vlasim/catalog");
}

}  // namespace
}  // namespace vlasim
