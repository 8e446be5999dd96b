// The tensor- and expert-parallel exchange kernels (runtime/cpu/
// collectives.cpp) in a group of one, where no data crosses ranks: what
// they do around the exchange (row packing, unpacking, the per-token sums
// of undispatch) must equal the hyrt_ref_* versions bit for bit, at sizes
// that cross the threads' threshold. Groups of several ranks, through a
// real shared-memory group: collectives_ranks_test.cpp.
#include "hyrt/abi.h"
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

template <typename T> bool sameBits(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

class CpuCollectives : public ::testing::Test {
protected:
  void SetUp() override {
    *hyrt_collectives_state() = {nullptr, nullptr, 1, 0, 0, nullptr, nullptr};
  }
  void TearDown() override { SetUp(); }
  hyrt_collectives_v0 &state() { return *hyrt_collectives_state(); }
};

/// Routes of `tokens` tokens over `experts` experts, `topK` each, some
/// out of range (the kernels drop those), weights in (0, 1).
struct Routes {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};
Routes randomRoutes(int64_t tokens, int64_t topK, int64_t experts, std::mt19937 &rng) {
  std::uniform_int_distribution<int32_t> e(-1, int32_t(experts));
  std::uniform_real_distribution<float> w(0.01f, 1.0f);
  Routes r;
  for (int64_t i = 0; i < tokens * topK; ++i) {
    r.ids.push_back(e(rng));
    r.weights.push_back(w(rng));
  }
  return r;
}

std::vector<float> randomFloats(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

// A group of one holding experts [0, 4) of routes over 6 (and -1): the
// received rows, their local ids and weights, the rows sent and the counts
// equal the reference's; 1 token (decode) and 900 (rows across threads).
TEST_F(CpuCollectives, DispatchInAGroupOfOneEqualsTheReference) {
  std::mt19937 rng(3);
  const int64_t dim = 64, k = 3;
  for (int64_t T : {1, 900}) {
    const std::vector<float> x = randomFloats(size_t(T * dim), rng);
    const Routes r = randomRoutes(T, k, 6, rng);
    struct Out {
      std::vector<float> rows, weights;
      std::vector<int32_t> ids, sent, counts;
    };
    auto run = [&](auto kernel) {
      Out o{std::vector<float>(size_t(T * dim), 7.0f), std::vector<float>(size_t(T * k), 7.0f),
            std::vector<int32_t>(size_t(T * k), 7), std::vector<int32_t>(size_t(T * k), 7),
            std::vector<int32_t>(2, 7)};
      kernel(x.data(), r.ids.data(), r.weights.data(), T, dim, k, /*experts_per_rank=*/4, 1, 0,
             o.rows.data(), o.ids.data(), o.weights.data(), o.sent.data(), o.counts.data());
      return o;
    };
    const Out want = run(hyrt_ref_moe_dispatch), got = run(hyrt_cpu_moe_dispatch);
    EXPECT_TRUE(sameBits(want.rows, got.rows)) << T;
    EXPECT_EQ(want.ids, got.ids) << T;
    EXPECT_TRUE(sameBits(want.weights, got.weights)) << T;
    EXPECT_EQ(want.sent, got.sent) << T;
    EXPECT_EQ(want.counts, got.counts) << T;
    if (T > 1) // the case is not vacuous: some tokens go, some do not
      EXPECT_TRUE(want.counts[0] > 0 && want.counts[0] < T) << want.counts[0];
  }
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_OK);
}

// Undispatch of a group of one: each sent row's result is added to its
// token in the order sent, tokens never sent stay -0 (the reference's
// starting value, not +0). Tokens sent several times are made here by
// hand, which the dispatch of one rank never does (its own sums have one
// row), so the per-token accumulation is exercised: sums of 3 rows in
// sent order, where another order would change bits.
TEST_F(CpuCollectives, UndispatchSumsEachTokensRowsInTheReferencesOrder) {
  std::mt19937 rng(4);
  const int64_t dim = 80;
  for (int64_t T : {1, 3, 700}) {
    std::vector<int32_t> sent;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < (t % 4 == 1 ? 0 : t % 4); ++c) // 0, 0, 2, 3 rows
        sent.push_back(int32_t((t * 7 + c * 13) % T));
    if (sent.empty())
      sent.push_back(0);
    const int64_t rows = int64_t(sent.size());
    std::vector<float> results = randomFloats(size_t(rows * dim), rng);
    for (size_t i = 0; i < results.size(); i += 5)
      results[i] *= 1e6f; // magnitudes that make the order of addition show
    const std::vector<int32_t> counts = {int32_t(rows), int32_t(rows)};
    std::vector<float> want(size_t(T * dim), 7.0f), got(want.size(), 7.0f);
    hyrt_ref_moe_undispatch(results.data(), sent.data(), counts.data(), T, dim, 1, 0, want.data());
    hyrt_cpu_moe_undispatch(results.data(), sent.data(), counts.data(), T, dim, 1, 0, got.data());
    EXPECT_TRUE(sameBits(want, got)) << T << " tokens";
    if (T == 700) {
      EXPECT_TRUE(std::signbit(got[size_t(1 * dim)])) << "token 1 has no row: -0";
      EXPECT_EQ(got[size_t(1 * dim)], 0.0f);
    }
  }
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_OK);
}

// A group of one: the all-reduce is the identity and the column gather a
// copy, with no registered function called.
TEST_F(CpuCollectives, AGroupOfOneNeedsNoRegisteredFunction) {
  std::mt19937 rng(5);
  std::vector<float> v = randomFloats(50, rng), keep = v;
  hyrt_cpu_all_reduce_sum(v.data(), 50, 1);
  EXPECT_TRUE(sameBits(v, keep));
  std::vector<float> out(50, 7.0f);
  hyrt_cpu_all_gather_cols(v.data(), 5, 10, out.data(), 1, 0);
  EXPECT_TRUE(sameBits(out, keep));
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_OK);
  EXPECT_EQ(state().calls, 0);
}

// Two ranks with nothing registered: every exchange marks the step failed
// (the runtime then discards it), dispatch leaves every received slot
// "none", and a failed step runs no later exchange.
TEST_F(CpuCollectives, NothingRegisteredFailsTheStep) {
  std::vector<float> v = {1, 2, 3}, out(6, 7.0f);
  hyrt_cpu_all_gather_cols(v.data(), 1, 3, out.data(), 2, 0);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  state().failed = HYRT_COLLECTIVE_OK;
  hyrt_cpu_all_reduce_sum(v.data(), 3, 2);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  state().failed = HYRT_COLLECTIVE_OK;
  const std::vector<float> x = {1, 2};
  const std::vector<int32_t> ids = {0};
  const std::vector<float> w = {1};
  std::vector<float> rows(2), rw(1, -7);
  std::vector<int32_t> ri(1, -7), sent(1), counts(4, 7);
  hyrt_cpu_moe_dispatch(x.data(), ids.data(), w.data(), 1, 2, 1, 1, 2, 1, rows.data(), ri.data(),
                        rw.data(), sent.data(), counts.data());
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  EXPECT_EQ(ri[0], -1);
  EXPECT_EQ(rw[0], 0.0f);
  EXPECT_EQ(counts[2] + counts[3], 0);
  EXPECT_EQ(state().calls, 0);
}

} // namespace
