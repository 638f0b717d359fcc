// The oneDNN executor's arena (executors/onednn_kernels.h): aligned, zeroed, disjoint buffers
// whose place within their pages follows from the arena's own requests only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "executors/onednn_kernels.h"

namespace vlasim::onednn {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Request sizes like a segment's: tensors, an attention's scores, a weight larger than a chunk.
const std::vector<size_t> kSizes = {1, 63, 64, 65, 4096, 131072 + 64, 24576, 3, 40u << 20, 1000, 7 * 4096 + 5};

TEST(ExecutorArena, BuffersAreAlignedZeroedAndDisjoint) {
  Arena a;
  std::vector<std::pair<char*, size_t>> got;
  for (size_t n : kSizes) {
    char* p = a.take(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    for (size_t i = 0; i < n; i += (n > 4096 ? 4093 : 1)) ASSERT_EQ(p[i], 0) << n << " at " << i;
    std::fill(p, p + n, static_cast<char>(0x5a));  // a neighbour's bytes must not change below
    got.push_back({p, n});
  }
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t j = i + 1; j < got.size(); ++j) {
      const bool apart = got[i].first + got[i].second <= got[j].first || got[j].first + got[j].second <= got[i].first;
      EXPECT_TRUE(apart) << "requests " << i << " and " << j << " overlap";
    }
  for (auto [p, n] : got) EXPECT_EQ(p[n - 1], 0x5a);
  EXPECT_GE(a.mapped(), size_t{40} << 20);
}

TEST(ExecutorArena, PlaceWithinPagesDoesNotDependOnWhatTheProcessAllocatedBefore) {
  if (kSanitized) GTEST_SKIP() << "under AddressSanitizer every request is its own heap allocation";
  auto offsets = [](Arena& a) {
    std::vector<uintptr_t> v;
    for (size_t n : kSizes) v.push_back(reinterpret_cast<uintptr_t>(a.take(n)) % 4096);
    return v;
  };
  Arena first;
  const std::vector<uintptr_t> ref = offsets(first);
  // The heap in another state: blocks of odd sizes held and some freed, as a process that
  // loaded a profile or ran a simulation first would leave it.
  std::vector<std::unique_ptr<char[]>> held;
  for (int i = 0; i < 200; ++i) held.emplace_back(new char[static_cast<size_t>(37 + 911 * i)]);
  for (size_t i = 0; i < held.size(); i += 2) held[i].reset();
  Arena second;
  EXPECT_EQ(offsets(second), ref);
}

}  // namespace
}  // namespace vlasim::onednn
