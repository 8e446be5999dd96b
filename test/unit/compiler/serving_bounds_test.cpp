// The default max_seq_len: the model's context up to 8192, halved while the
// weights and a KV cache of max_seqs full sequences exceed 80% of memory,
// never below min(context, 2048).
#include "compiler/ServingBounds.h"

#include <gtest/gtest.h>

namespace hyc::compiler {
namespace {

constexpr int64_t GB = 1000 * 1000 * 1000;

TEST(ServingBounds, ContextUpTo8192WhenItFits) {
  EXPECT_EQ(defaultMaxSeqLen(512, GB, 1024, 16, 24 * GB), 512);
  EXPECT_EQ(defaultMaxSeqLen(8192, GB, 1024, 16, 24 * GB), 8192);
  EXPECT_EQ(defaultMaxSeqLen(131072, GB, 1024, 16, 24 * GB), 8192);
  EXPECT_EQ(defaultMaxSeqLen(131072, GB, 1024, 16, 0), 8192); // memory unknown
}

TEST(ServingBounds, HalvedToFitButNotBelow2048) {
  // Llama-3.2-1B-like: 2.5 GB of bf16 weights, 32 KiB of bf16 KV a
  // position; 16 x 8192 positions = 4.3 GB. On 24 GB it fits; on 8 GB
  // (budget 6.4 GB) 8192 does not (6.8 GB) and 4096 does (4.6 GB).
  const int64_t kv = 32 * 1024;
  EXPECT_EQ(defaultMaxSeqLen(131072, 2500000000, kv, 16, 24 * GB), 8192);
  EXPECT_EQ(defaultMaxSeqLen(131072, 2500000000, kv, 16, 8 * GB), 4096);
  // Nothing fits: the floor, the old default.
  EXPECT_EQ(defaultMaxSeqLen(131072, 20 * GB, kv, 16, 8 * GB), 2048);
  EXPECT_EQ(defaultMaxSeqLen(1024, 20 * GB, kv, 16, 8 * GB), 1024);
}

} // namespace
} // namespace hyc::compiler
