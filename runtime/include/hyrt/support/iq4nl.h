// The IQ4_NL / IQ4_XS code book (ggml's kvalues_iq4nl): the non-linear
// values a 4-bit code stands for, in one place for the checkpoint reader,
// the grouped kernels' generators (which look codes up with a byte
// shuffle) and the runtime's scalar models of those kernels.
#ifndef HYRT_SUPPORT_IQ4NL_H
#define HYRT_SUPPORT_IQ4NL_H

#include <cstdint>

namespace hyrt {

/// Weight value of each 4-bit code: w = d * kIq4nlValues[code].
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

/// The same values plus 128, as unsigned bytes (1..241): the grouped kernels
/// multiply them with zero point 128, so scale * (kIq4nlU8[c] - 128) is the
/// weight. No code maps to 128 itself.
inline constexpr uint8_t kIq4nlU8[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                         129, 141, 153, 166, 181, 197, 217, 241};

namespace detail {
constexpr bool iq4nlTablesAgree() {
  for (int i = 0; i < 16; ++i)
    if (kIq4nlU8[i] != kIq4nlValues[i] + 128)
      return false;
  return true;
}
} // namespace detail
static_assert(detail::iq4nlTablesAgree(), "kIq4nlU8 is kIq4nlValues + 128");

} // namespace hyrt

#endif // HYRT_SUPPORT_IQ4NL_H
