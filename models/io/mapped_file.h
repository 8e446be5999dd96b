// Read-only memory mapping of a whole file (RAII), the storage under every
// zero-copy TensorView handed out by the checkpoint readers.
#ifndef HYC_MODELS_IO_MAPPED_FILE_H
#define HYC_MODELS_IO_MAPPED_FILE_H

#include "models/io/expected.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace hyc::io {

/// "a FIFO", "a character device", ... for a stat mode that is not a
/// regular file (messages that refuse special files).
const char *non_regular_kind(unsigned mode);

/// A read-only, private mapping of an entire file. Move-only; unmaps on
/// destruction. An empty file is valid (size() == 0, data() == nullptr).
class MappedFile {
public:
  /// Maps `path`. Errors name the path and the failing system call; a FIFO,
  /// device, socket or directory is refused without waiting on it.
  static Expected<MappedFile> open(const std::string &path);

  MappedFile() = default;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  void reset();

  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

/// Drops the whole pages inside [data, data + nbytes) of a MappedFile from
/// this process (madvise MADV_DONTNEED): the next access reads them again
/// from the page cache. Only for ranges of a MappedFile (anonymous memory
/// would read back as zeros).
void release_mapped_pages(const void *data, size_t nbytes);

} // namespace hyc::io

#endif // HYC_MODELS_IO_MAPPED_FILE_H
