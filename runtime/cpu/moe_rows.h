// Row kernels of the MoE combine shared by moe.cpp and its AVX-512 body
// (moe_avx512.cpp).
#ifndef HYRT_CPU_MOE_ROWS_H
#define HYRT_CPU_MOE_ROWS_H

#include <cstdint>

namespace hyrt::cpu {

/// out[0, dim) = fp32(sum over slots j < topK with rowOfSlot[j] >= 0, in
/// slot order, in double, of weights[j] x y[rowOfSlot[j]][.]) + add0 + add1
/// (each addend optional): hyrt_ref_moe_unpermute_add's row, bit for bit.
/// AVX-512F hosts only.
void unpermuteAddRowAvx512(const float *y, const int64_t *rowOfSlot, const float *weights,
                           int64_t topK, int64_t dim, const float *add0, const float *add1,
                           float *out);

} // namespace hyrt::cpu

#endif // HYRT_CPU_MOE_ROWS_H
