// The artifact's side of tensor-parallel collectives (abi.h,
// hyrt_collectives_v0): generated code calls hyrt_ref_all_reduce_sum; the
// runtime registers the function that reduces across ranks through the
// exported hyc_collectives_v0(), as for the profile (profile.cpp).
#include "hyrt/abi.h"
#include "hyrt/reference.h"

namespace {
hyrt_collectives_v0 state = {nullptr, nullptr, 1, HYRT_COLLECTIVE_OK, 0};
} // namespace

extern "C" hyrt_collectives_v0 *hyrt_collectives_state(void) { return &state; }

extern "C" void hyrt_ref_all_gather_cols(const float *in, int64_t rows, int64_t cols,
                                         float *out, int64_t group_size, int64_t rank) {
  const int64_t width = cols * group_size;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      out[r * width + c] =
          c >= rank * cols && c < (rank + 1) * cols ? in[r * cols + c - rank * cols] : 0.0f;
  hyrt_ref_all_reduce_sum(out, rows * width, group_size);
}

extern "C" void hyrt_ref_all_reduce_sum(float *data, int64_t n, int64_t group_size) {
  if (group_size == 1)
    return;
  if (state.failed != HYRT_COLLECTIVE_OK)
    return; // the step is lost already; the runtime reports the first cause
  if (!state.all_reduce_sum || state.group_size != group_size) {
    state.failed = HYRT_COLLECTIVE_NOT_REGISTERED;
    return;
  }
  ++state.calls;
  if (state.all_reduce_sum(state.ctx, data, n) != 0)
    state.failed = HYRT_COLLECTIVE_FAILED;
}
