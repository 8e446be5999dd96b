// The artifact's op-kind profiler (abi.h, hyrt_profile_v0). Linked into
// every artifact with hyrt_reference, whose symbols the artifact does not
// export (-Wl,--exclude-libs,ALL): its calls bind to its own copy, and the
// generated code exports `hyc_profile_v0`, which returns
// hyrt_profile_state(), for the runtime to find with dlsym.
#include "hyrt/abi.h"

#include <cstring>
#include <ctime>

namespace {

hyrt_profile_v0 state = {0, 0, {}, -1, 0.0};

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int32_t kindIndex(const char *kind) {
  for (int32_t i = 0; i < state.num_kinds; ++i)
    if (state.entries[i].kind == kind || std::strcmp(state.entries[i].kind, kind) == 0)
      return i;
  if (state.num_kinds == HYRT_PROFILE_MAX_KINDS)
    return HYRT_PROFILE_MAX_KINDS - 1; // more kinds than slots: lump the rest
  state.entries[state.num_kinds] = {kind, 0, 0.0};
  return state.num_kinds++;
}

} // namespace

extern "C" void hyrt_profile_mark(const char *kind) {
  if (!state.enabled)
    return;
  const double t = now();
  if (state.current >= 0 && state.current < state.num_kinds)
    state.entries[state.current].seconds += t - state.started;
  state.current = -1;
  if (kind) {
    state.current = kindIndex(kind);
    ++state.entries[state.current].calls;
  }
  state.started = t;
}

extern "C" hyrt_profile_v0 *hyrt_profile_state(void) {
  return &state;
}
