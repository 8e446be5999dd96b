// The static planner's allocator: first fit, reuse after release, aligned
// sizes, and the end reservation for kernel scratch.
#include "passes/ArenaAllocator.h"

#include <gtest/gtest.h>

namespace hyc {
namespace {

TEST(ArenaAllocator, FirstFitReusesReleasedSpace) {
  ArenaAllocator a(64);
  int64_t x = a.allocate(100); // rounds to 128
  int64_t y = a.allocate(64);
  EXPECT_EQ(x, 0);
  EXPECT_EQ(y, 128);
  a.release(x);
  EXPECT_EQ(a.allocate(128), 0) << "a freed block of the right size is reused";
  EXPECT_EQ(a.allocate(256), 192) << "a block that does not fit goes after the live ones";
  EXPECT_EQ(a.peakBytes(), 448);
}

TEST(ArenaAllocator, GapsAreFilledOnlyWhenLargeEnough) {
  ArenaAllocator a(64);
  int64_t x = a.allocate(64), y = a.allocate(64), z = a.allocate(64);
  (void)x;
  (void)z;
  a.release(y);
  EXPECT_EQ(a.allocate(128), 192) << "a 64-byte hole cannot take 128 bytes";
  EXPECT_EQ(a.allocate(64), 64) << "but takes 64";
}

TEST(ArenaAllocator, ReserveAtEndSitsAboveThePeak) {
  ArenaAllocator a(64);
  int64_t x = a.allocate(1000);
  a.release(x);
  EXPECT_EQ(a.reserveAtEnd(10), 1024) << "scratch must not overlap any buffer ever planned";
  EXPECT_EQ(a.peakBytes(), 1088);
}

} // namespace
} // namespace hyc
