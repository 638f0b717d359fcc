// main() of every test binary. Compiled into each binary (not taken from gtest_main) because
// libsystemc also defines main(), and an object file's definition always wins the link.
#include <gtest/gtest.h>

#include <system_error>

#include "scratch.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  try {  // scratch directories die with the run; failing to remove them is no test failure
    std::error_code ec;
    std::filesystem::remove_all(vlasim::testing::scratch_root(), ec);
  } catch (const std::exception&) {
  }
  return rc;
}
