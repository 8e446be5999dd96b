// hyrt_ref_all_reduce_sum, the artifact's side of tensor-parallel
// collectives (abi.h, hyrt_collectives_v0): the registered function runs
// for its group size only; anything else leaves the data alone and marks
// the step failed for the runtime to report.
#include "hyrt/abi.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

int32_t twice(void *ctx, float *data, int64_t n) {
  ++*static_cast<int *>(ctx);
  for (int64_t i = 0; i < n; ++i)
    data[i] *= 2; // what a 2-rank sum of equal vectors gives
  return 0;
}

int32_t fails(void *, float *, int64_t) { return 1; }

class RefCollectives : public ::testing::Test {
protected:
  void SetUp() override { *hyrt_collectives_state() = {nullptr, nullptr, 1, 0, 0, nullptr}; }
  void TearDown() override { SetUp(); }
  hyrt_collectives_v0 &state() { return *hyrt_collectives_state(); }
};

TEST_F(RefCollectives, AGroupOfOneIsTheIdentity) {
  std::vector<float> v = {1, 2, 3};
  hyrt_ref_all_reduce_sum(v.data(), 3, 1);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_OK);
}

TEST_F(RefCollectives, TheRegisteredFunctionReducesItsGroup) {
  int called = 0;
  state().all_reduce_sum = twice;
  state().ctx = &called;
  state().group_size = 2;
  std::vector<float> v = {1, 2, 3};
  hyrt_ref_all_reduce_sum(v.data(), 3, 2);
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(called, 1);
  EXPECT_EQ(state().calls, 1);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_OK);
}

TEST_F(RefCollectives, NothingOrAnotherGroupRegisteredFailsTheStepUntouched) {
  std::vector<float> v = {1, 2, 3};
  hyrt_ref_all_reduce_sum(v.data(), 3, 2);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  int called = 0;
  *hyrt_collectives_state() = {twice, &called, 4, 0, 0, nullptr};
  hyrt_ref_all_reduce_sum(v.data(), 3, 2);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  EXPECT_EQ(called, 0);
}

TEST_F(RefCollectives, AFailureIsStickyUntilTheRuntimeClearsIt) {
  *hyrt_collectives_state() = {fails, nullptr, 2, 0, 0, nullptr};
  std::vector<float> v = {1};
  hyrt_ref_all_reduce_sum(v.data(), 1, 2);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_FAILED);
  int called = 0;
  state().all_reduce_sum = twice;
  state().ctx = &called;
  hyrt_ref_all_reduce_sum(v.data(), 1, 2); // later all-reduces of the lost step
  EXPECT_EQ(called, 0);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_FAILED);
}

// Token dispatch on its own (a group of one: no exchange) with this rank
// holding experts 0..1 of 4: a token goes once, with its slots mapped to
// local experts or -1; a token with no expert here is not sent; undispatch
// brings each returned row back to its token (0 for the token not sent).
TEST_F(RefCollectives, DispatchSendsEachTokenOnceWithItsSlotsHere) {
  const int64_t T = 3, dim = 2, k = 2;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> ids = {1, 0,   // both slots here
                                    3, 2,   // none here: not sent
                                    2, 1};  // slot 1 here
  const std::vector<float> w = {0.25f, 0.75f, 0.5f, 0.5f, 0.4f, 0.6f};
  std::vector<float> rows(T * dim, -7.0f), rw(T * k, -7.0f);
  std::vector<int32_t> ri(T * k, -7), sent(T * k, -7), counts(2, -7);
  hyrt_ref_moe_dispatch(x.data(), ids.data(), w.data(), T, dim, k, /*experts_per_rank=*/2,
                        /*group_size=*/1, /*rank=*/0, rows.data(), ri.data(), rw.data(),
                        sent.data(), counts.data());
  EXPECT_EQ(counts, (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(std::vector<float>(rows.begin(), rows.begin() + 4),
            (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(ri, (std::vector<int32_t>{1, 0, -1, 1, -1, -1}));
  EXPECT_EQ(rw, (std::vector<float>{0.25f, 0.75f, 0.0f, 0.6f, 0.0f, 0.0f}));
  EXPECT_EQ(sent, (std::vector<int32_t>{0, 2, -1, -1, -1, -1}));
  // This rank's result per received token comes back to that token.
  const std::vector<float> results = {10, 20, 30, 40, -1, -1};
  std::vector<float> out(T * dim, -7.0f);
  hyrt_ref_moe_undispatch(results.data(), sent.data(), counts.data(), T, dim, 1, 0, out.data());
  EXPECT_EQ(out, (std::vector<float>{10, 20, 0, 0, 30, 40}));
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_OK);
}

// Over two ranks with no all_to_all_v registered the step is lost: marked
// failed, and every received slot says "none" (no garbage reaches the
// expert GEMMs of a step the runtime discards).
TEST_F(RefCollectives, DispatchWithoutAnExchangeFailsTheStep) {
  const std::vector<float> x = {1, 2};
  const std::vector<int32_t> ids = {0};
  const std::vector<float> w = {1};
  std::vector<float> rows(2), rw(1, -7);
  std::vector<int32_t> ri(1, -7), sent(1), counts(4);
  state().group_size = 2;
  hyrt_ref_moe_dispatch(x.data(), ids.data(), w.data(), 1, 2, 1, 1, 2, 1, rows.data(),
                        ri.data(), rw.data(), sent.data(), counts.data());
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  EXPECT_EQ(ri[0], -1);
  EXPECT_EQ(rw[0], 0.0f);
}

} // namespace
