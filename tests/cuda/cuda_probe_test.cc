// The CUDA build works; device checks run only where a GPU is present.
#include <gtest/gtest.h>

#include "executors/cuda/cuda_probe.h"

namespace vlasim {
namespace {

TEST(Cuda, DeviceCountIsNeverNegative) { EXPECT_GE(cuda_device_count(), 0); }

TEST(Cuda, EveryDeviceDescribesItself) {
  int n = cuda_device_count();
  if (n == 0) GTEST_SKIP() << "no CUDA device on this machine";
  for (int i = 0; i < n; ++i) EXPECT_NE(cuda_device_description(i).find("SMs"), std::string::npos);
}

}  // namespace
}  // namespace vlasim
