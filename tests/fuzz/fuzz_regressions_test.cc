// The fuzz targets replayed in the normal build: the inputs the fuzzers start from and every
// finding kept under tests/fuzz/regressions/<target>/ (scripts/fuzz.sh).
#include <gtest/gtest.h>

#include <filesystem>

#include "fuzz/fuzz_targets.h"
#include "scenarios/config/config.h"

namespace fs = std::filesystem;
using vlasim::fuzz::Outcome;

namespace {

const std::string kSource = VLASIM_SOURCE_DIR;

std::vector<fs::path> inputs_of(const vlasim::fuzz::Target& t) {
  std::vector<fs::path> files;
  auto input = [](const fs::path& p) {
    return p.extension() == ".yaml" || p.extension() == ".json" || p.extension() == ".csv";
  };
  for (const std::string& d : t.seed_dirs) {
    if (t.nested) {
      for (auto& e : fs::recursive_directory_iterator(kSource + "/" + d))
        if (e.is_regular_file() && input(e.path())) files.push_back(e.path());
    } else {
      for (auto& e : fs::directory_iterator(kSource + "/" + d))
        if (e.is_regular_file() && input(e.path())) files.push_back(e.path());
    }
  }
  fs::path kept = kSource + "/tests/fuzz/regressions/" + t.name;
  if (fs::is_directory(kept))
    for (auto& e : fs::directory_iterator(kept))
      if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// Each input is accepted or refused with a ConfigError naming it, never an unnamed error; and
// each target both accepts some inputs (the shipped files) and refuses some (the broken ones),
// so a target that stopped reading, or stopped checking, fails here.
TEST(FuzzRegressions, EveryKeptInputIsAcceptedOrRefusedWithANamedError) {
  for (const auto& t : vlasim::fuzz::targets()) {
    int accepted = 0, refused = 0;
    for (const fs::path& f : inputs_of(t)) {
      try {
        (t.run(vlasim::read_input_file(f.string())) == Outcome::Accepted ? accepted : refused)++;
      } catch (const vlasim::fuzz::Finding& e) {
        ADD_FAILURE() << t.name << " target, " << f << ": " << e.what();
      }
    }
    EXPECT_GT(accepted, 0) << t.name;
    EXPECT_GT(refused, 0) << t.name;
    std::printf("%s: %d accepted, %d refused\n", t.name, accepted, refused);
  }
}

// The guard itself: an error that does not name the input is a finding, not a refusal.
TEST(FuzzRegressions, ARefusalMustNameTheInput) {
  EXPECT_EQ(vlasim::fuzz::catalog("x: {type: gpu}\n"), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::profile("{"), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::card("name: fuzz\n"), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::scenario("["), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::gpu_import("{"), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::gpu_import("n_head\n1\n"), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::gpu_network("links:\n  x: {collective: send_recv}\n"), Outcome::Refused);
  EXPECT_EQ(vlasim::fuzz::gpu_network(",time_stats.send_recv.min\n"), Outcome::Refused);
}
