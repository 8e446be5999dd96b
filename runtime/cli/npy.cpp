// Float32 .npy reader and writer (see hyrt/cli/npy.h).
#include "hyrt/cli/npy.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace hyrt {

Status write_npy_f32(const std::string &path, const float *data, int64_t rows,
                     int64_t cols) {
  if (rows < 0 || cols < 0)
    return Status::Error("write_npy_f32: expected non-negative shape, found (" +
                         std::to_string(rows) + ", " + std::to_string(cols) +
                         ")");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) +
                       "), }";
  // magic(6) + version(2) + length(2) + header, padded to 64 bytes with '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f)
    return Status::Error("write_npy_f32: cannot open " + path);
  const unsigned char prefix[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  f.write(reinterpret_cast<const char *>(prefix), 8);
  const uint16_t len = uint16_t(header.size());
  const unsigned char len_le[2] = {uint8_t(len & 0xff), uint8_t(len >> 8)};
  f.write(reinterpret_cast<const char *>(len_le), 2);
  f << header;
  f.write(reinterpret_cast<const char *>(data),
          std::streamsize(sizeof(float) * rows * cols));
  if (!f)
    return Status::Error("write_npy_f32: write failed for " + path);
  return Status::Ok();
}

namespace {

/// Text after `key` in the header dict, or npos.
size_t find_value(const std::string &h, const std::string &key) {
  const size_t k = h.find("'" + key + "'");
  if (k == std::string::npos)
    return k;
  const size_t colon = h.find(':', k);
  return colon == std::string::npos ? colon : colon + 1;
}

} // namespace

Status read_npy_f32(const std::string &path, NpyArray *out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Status::Error("read_npy_f32: cannot open " + path);
  unsigned char pre[8];
  if (!f.read(reinterpret_cast<char *>(pre), 8) ||
      std::memcmp(pre, "\x93NUMPY", 6) != 0)
    return Status::Error(path + ": expected the .npy magic \\x93NUMPY");
  const int major = pre[6];
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char *>(b), 2);
    hlen = b[0] | (uint32_t(b[1]) << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    f.read(reinterpret_cast<char *>(b), 4);
    hlen = b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) |
           (uint32_t(b[3]) << 24);
  } else {
    return Status::Error(path + ": expected .npy version 1, 2 or 3, found " +
                         std::to_string(major));
  }
  std::string h(hlen, '\0');
  if (!f.read(&h[0], hlen))
    return Status::Error(path + ": truncated header");
  size_t v = find_value(h, "descr");
  if (v == std::string::npos || h.find("'<f4'", v) != h.find('\'', v))
    return Status::Error(path + ": expected dtype '<f4', header is " + h);
  v = find_value(h, "fortran_order");
  if (v == std::string::npos || h.find("False", v) > h.find_first_of(",}", v))
    return Status::Error(path + ": expected fortran_order False, header is " +
                         h);
  v = find_value(h, "shape");
  const size_t open = v == std::string::npos ? v : h.find('(', v);
  const size_t close = open == std::string::npos ? open : h.find(')', open);
  if (close == std::string::npos)
    return Status::Error(path + ": no shape tuple in header " + h);
  out->shape.clear();
  int64_t numel = 1;
  for (size_t i = open + 1; i < close;) {
    while (i < close && (h[i] == ' ' || h[i] == ','))
      ++i;
    if (i >= close)
      break;
    const char *begin = h.c_str() + i;
    char *end = nullptr;
    const int64_t dim = std::strtoll(begin, &end, 10);
    if (end == begin || dim < 0)
      return Status::Error(path + ": bad shape in header " + h);
    out->shape.push_back(dim);
    numel *= dim;
    i += size_t(end - begin);
  }
  out->data.resize(size_t(numel));
  if (!f.read(reinterpret_cast<char *>(out->data.data()),
              std::streamsize(sizeof(float) * numel)))
    return Status::Error(path + ": expected " + std::to_string(numel) +
                         " floats of data, file is shorter");
  return Status::Ok();
}

} // namespace hyrt
