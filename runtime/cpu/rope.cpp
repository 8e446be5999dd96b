// RoPE for optimized artifacts: the semantics of hyrt_ref_rope
// (reference.h) bit for bit (both use reference/rope_math.h), without its
// two costs. The reference takes
// cos/sin in double for every (token, head, pair) although they depend only
// on (token, pair); here each token's table is computed once, by the same
// expressions, and applied to all its heads, and tokens are split across
// the runtime's threads.
#include "hyrt/cpu_kernels.h"

#include "../reference/rope_math.h"
#include "thread_pool.h"

#include <vector>

extern "C" void hyrt_cpu_rope(const float *x, const int32_t *positions,
                              int64_t num_tokens, int64_t heads, int64_t head_dim,
                              int64_t rotary_dim, int32_t neox, const float *inv_freq,
                              float mscale, float *out) {
  const int64_t half = rotary_dim / 2;
  // Splitting pays off from a few hundred tokens' worth of sin/cos.
  hyrt::cpu::parallelFor(
      num_tokens, num_tokens * half >= 4096 ? hyrt::cpu::kAllThreads : 1, [&](int64_t t) {
        thread_local std::vector<float> cs;
        cs.resize(size_t(2 * half));
        const float pos = float(positions[t]);
        for (int64_t i = 0; i < half; ++i)
          hyrt::rope::cosSin(pos, inv_freq[i], mscale, cs[size_t(2 * i)],
                             cs[size_t(2 * i + 1)]);
        for (int64_t h = 0; h < heads; ++h) {
          const float *xi = x + (t * heads + h) * head_dim;
          float *o = out + (t * heads + h) * head_dim;
          for (int64_t i = rotary_dim; i < head_dim; ++i)
            o[i] = xi[i];
          for (int64_t i = 0; i < half; ++i)
            hyrt::rope::rotatePair(xi, o, i, half, neox != 0, cs[size_t(2 * i)],
                                   cs[size_t(2 * i + 1)]);
        }
      });
}
