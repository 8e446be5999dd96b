// Internal to hyc_models_io: a bounds-checked little-endian cursor over a
// byte range. It throws ParseError; the public readers catch it and return
// an Error naming the file, so nothing escapes the library API.
#ifndef HYC_MODELS_IO_BYTE_READER_H
#define HYC_MODELS_IO_BYTE_READER_H

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace hyc::io::detail {

/// Thrown by ByteReader and the parsers; never crosses the public API.
struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ByteReader {
public:
  ByteReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  size_t offset() const { return offset_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - offset_; }

  /// Throws unless `n` more bytes are available for reading `what`.
  void require(uint64_t n, const std::string &what) const {
    if (n > remaining())
      throw ParseError("truncated at offset " + std::to_string(offset_) +
                       " reading " + what + ": need " + std::to_string(n) +
                       " bytes, " + std::to_string(remaining()) + " left");
  }

  template <typename T> T read(const std::string &what) {
    require(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + offset_, sizeof(T));
    offset_ += sizeof(T);
    return v;
  }

  /// Returns a pointer to the next `n` bytes and advances past them.
  const uint8_t *take(uint64_t n, const std::string &what) {
    require(n, what);
    const uint8_t *p = data_ + offset_;
    offset_ += static_cast<size_t>(n);
    return p;
  }

  std::string readString(uint64_t n, const std::string &what) {
    const uint8_t *p = take(n, what);
    return std::string(reinterpret_cast<const char *>(p),
                       static_cast<size_t>(n));
  }

private:
  const uint8_t *data_;
  size_t size_;
  size_t offset_ = 0;
};

} // namespace hyc::io::detail

#endif // HYC_MODELS_IO_BYTE_READER_H
