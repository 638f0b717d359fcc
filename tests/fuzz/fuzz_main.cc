// One libFuzzer program per target (tests/fuzz/CMakeLists.txt names the target in
// VLASIM_FUZZ_TARGET). A Finding aborts, so libFuzzer keeps the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    VLASIM_FUZZ_TARGET(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const vlasim::fuzz::Finding& f) {
    std::fprintf(stderr, "vlasim fuzz finding: %s\n", f.what());
    std::abort();
  }
  return 0;
}
