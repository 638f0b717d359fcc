// main() of every test binary. Compiled into each binary (not taken from gtest_main) because
// libsystemc also defines main(), and an object file's definition always wins the link.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
