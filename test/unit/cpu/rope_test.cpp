// hyrt_cpu_rope against hyrt_ref_rope, bit for bit: both styles, a partial
// rotary dim (pass-through tail), mscale != 1, and a step long enough to
// take the threaded path (num_tokens x half >= 4096). The kernel keeps each
// position's cos/sin for later calls: calls with other frequencies (values
// changed in place, at the same address) or positions past the table must
// not reuse stale entries.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

TEST(CpuRope, EqualsReferenceBitForBit) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-2, 2);
  const int64_t heads = 3, headDim = 12;
  for (int64_t tokens : {int64_t(5), int64_t(1000)})
    for (int64_t rotary : {int64_t(12), int64_t(8)})
      for (int32_t neox : {0, 1}) {
        std::vector<float> x(size_t(tokens * heads * headDim)), freq(size_t(rotary / 2));
        for (float &v : x)
          v = d(rng);
        for (size_t i = 0; i < freq.size(); ++i)
          freq[i] = std::pow(10000.0f, -2.0f * float(i) / float(rotary));
        std::vector<int32_t> pos(static_cast<size_t>(tokens));
        for (int64_t t = 0; t < tokens; ++t)
          pos[size_t(t)] = int32_t((t * 37) % 4096); // unordered, large angles
        std::vector<float> want(x.size()), got(x.size(), -7.0f);
        hyrt_ref_rope(x.data(), pos.data(), tokens, heads, headDim, rotary, neox,
                      freq.data(), 1.25f, want.data());
        hyrt_cpu_rope(x.data(), pos.data(), tokens, heads, headDim, rotary, neox,
                      freq.data(), 1.25f, got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * got.size()))
            << tokens << " tokens, rotary " << rotary << ", neox " << neox;
      }
}

TEST(CpuRope, CachedTablesFollowTheFrequenciesAndPositions) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> d(-2, 2);
  const int64_t heads = 2, headDim = 16, rotary = 16, tokens = 300;
  std::vector<float> x(size_t(tokens * heads * headDim)), freq(size_t(rotary / 2));
  for (float &v : x)
    v = d(rng);
  std::vector<int32_t> pos(static_cast<size_t>(tokens));
  for (int round = 0; round < 4; ++round) {
    // Rounds 0 and 2 share frequencies; rounds 1 and 3 use other values in
    // the same buffer; round 3 also goes past every earlier position.
    const float base = round % 2 ? 500000.0f : 10000.0f;
    for (size_t i = 0; i < freq.size(); ++i)
      freq[i] = std::pow(base, -2.0f * float(i) / float(rotary));
    for (int64_t t = 0; t < tokens; ++t)
      pos[size_t(t)] = int32_t(round == 3 ? 20000 + t * 101 : (t * 53) % 5000);
    for (float mscale : {1.0f, 0.5f}) {
      std::vector<float> want(x.size()), got(x.size(), -7.0f);
      hyrt_ref_rope(x.data(), pos.data(), tokens, heads, headDim, rotary, 1, freq.data(), mscale,
                    want.data());
      hyrt_cpu_rope(x.data(), pos.data(), tokens, heads, headDim, rotary, 1, freq.data(), mscale,
                    got.data());
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * got.size()))
          << "round " << round << ", mscale " << mscale;
    }
  }
}

} // namespace
