// Numeric comparison for tests, shared by the unit and end-to-end suites.
//
// Every comparison of logits or kernel outputs goes through these helpers so
// that a NaN or an infinity anywhere is a failure that names its position:
// `std::max(m, fabs(a - b))` silently drops NaN, which let optimized paths
// pass on all-NaN logits.
#ifndef HYC_TEST_COMMON_COMPARE_H
#define HYC_TEST_COMMON_COMPARE_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace hyc::test {

/// Largest |a[i] - b[i]|. A size mismatch, or a NaN or Inf in either input,
/// records a test failure naming the first offending index and returns
/// +infinity, so that any `EXPECT_LT(maxAbsDiff(..), tol)` fails as well.
inline float maxAbsDiff(const float *a, const float *b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      ADD_FAILURE() << "non-finite value at index " << i << ": " << a[i]
                    << " vs " << b[i];
      return std::numeric_limits<float>::infinity();
    }
    m = std::max(m, std::fabs(a[i] - b[i]));
  }
  return m;
}

inline float maxAbsDiff(const std::vector<float> &a,
                        const std::vector<float> &b) {
  if (a.size() != b.size()) {
    ADD_FAILURE() << "size mismatch: " << a.size() << " vs " << b.size();
    return std::numeric_limits<float>::infinity();
  }
  return maxAbsDiff(a.data(), b.data(), a.size());
}

/// Largest |a[i]|. A non-finite value fails as in maxAbsDiff and returns
/// +infinity.
inline float maxAbs(const float *a, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) {
      ADD_FAILURE() << "non-finite value at index " << i << ": " << a[i];
      return std::numeric_limits<float>::infinity();
    }
    m = std::max(m, std::fabs(a[i]));
  }
  return m;
}

/// Two runs of one computation that may differ only in fp32 reduction order
/// (ranks of a tensor-parallel group, say): their largest difference and the
/// size of the values it is relative to, for `EXPECT_LE(worst, r * scale)`.
struct GapWithScale {
  float worst = std::numeric_limits<float>::infinity(); ///< max |a[i] - b[i]|
  float scale = 0;                                      ///< max |a[i]|
};

/// The gap of b from a. Empty or mismatched inputs, or a NaN or Inf in
/// either, record a failure and leave worst = +infinity and scale = 0, so
/// that both `EXPECT_GT(scale, ..)` and `EXPECT_LE(worst, r * scale)` fail.
inline GapWithScale gapWithScale(const std::vector<float> &a,
                                 const std::vector<float> &b) {
  GapWithScale g;
  if (a.empty()) {
    ADD_FAILURE() << "gapWithScale: no values to compare";
    return g;
  }
  const float worst = maxAbsDiff(a, b);
  if (!std::isfinite(worst))
    return g;
  g.worst = worst;
  g.scale = maxAbs(a.data(), a.size());
  return g;
}

/// Largest excess of |got[i] - want[i]| over atol + rtol |want[i]|: <= 0
/// when every element is within the tolerance. Non-finite values or a size
/// mismatch record a failure and return +infinity.
inline double maxExcess(const std::vector<float> &want,
                        const std::vector<float> &got, double atol,
                        double rtol) {
  if (want.size() != got.size()) {
    ADD_FAILURE() << "size mismatch: " << want.size() << " vs " << got.size();
    return std::numeric_limits<double>::infinity();
  }
  double worst = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      ADD_FAILURE() << "non-finite value at index " << i << ": " << want[i]
                    << " vs " << got[i];
      return std::numeric_limits<double>::infinity();
    }
    worst = std::max(worst, std::fabs(double(want[i]) - got[i]) -
                                (atol + rtol * std::fabs(double(want[i]))));
  }
  return worst;
}

/// How many of the rows (of `width` values) of a and b agree to `tol`.
/// For paths with discontinuities (rounding activations to bf16 or int8,
/// top-k routing), where an ulp-level difference upstream can move a value
/// to the other side of a rounding boundary: most rows must agree to
/// accumulation error even when a few do not.
inline size_t rowsWithin(const std::vector<float> &a, const std::vector<float> &b,
                         size_t width, float tol) {
  if (a.size() != b.size() || width == 0 || a.size() % width != 0) {
    ADD_FAILURE() << "rowsWithin: sizes " << a.size() << " and " << b.size()
                  << " are not the same multiple of " << width;
    return 0;
  }
  size_t n = 0;
  for (size_t r = 0; r < a.size() / width; ++r)
    n += maxAbsDiff(&a[r * width], &b[r * width], width) < tol;
  return n;
}

/// Cosine similarity of two rows, in double. Non-finite inputs fail as in
/// maxAbsDiff and return -infinity (below any threshold).
inline double cosine(const float *a, const float *b, size_t n) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      ADD_FAILURE() << "non-finite value at index " << i << ": " << a[i]
                    << " vs " << b[i];
      return -std::numeric_limits<double>::infinity();
    }
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return na == 0 || nb == 0 ? (na == nb ? 1.0 : 0.0) : dot / std::sqrt(na * nb);
}

} // namespace hyc::test

#endif // HYC_TEST_COMMON_COMPARE_H
