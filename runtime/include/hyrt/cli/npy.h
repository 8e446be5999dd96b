// hyrt/cli/npy.h - reading and writing float32 .npy files (NumPy format v1.0
// written; v1-v3 read) for comparisons against golden data.
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyrt {

/// A dense little-endian float32 array in C order.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Writes data[rows][cols] as a float32 .npy of shape (rows, cols).
Status write_npy_f32(const std::string &path, const float *data, int64_t rows,
                     int64_t cols);

/// Reads a '<f4', C-order .npy of any rank into `out`.
Status read_npy_f32(const std::string &path, NpyArray *out);

} // namespace hyrt
