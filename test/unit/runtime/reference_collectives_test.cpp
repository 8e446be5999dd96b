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
  void SetUp() override { *hyrt_collectives_state() = {nullptr, nullptr, 1, 0, 0}; }
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
  *hyrt_collectives_state() = {twice, &called, 4, 0, 0};
  hyrt_ref_all_reduce_sum(v.data(), 3, 2);
  EXPECT_EQ(state().failed, HYRT_COLLECTIVE_NOT_REGISTERED);
  EXPECT_EQ(called, 0);
}

TEST_F(RefCollectives, AFailureIsStickyUntilTheRuntimeClearsIt) {
  *hyrt_collectives_state() = {fails, nullptr, 2, 0, 0};
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

} // namespace
