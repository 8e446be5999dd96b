// MappedFile: open + fstat + mmap, with errors that name the path.
#include "models/io/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hyc::io {

namespace {
Error sysError(const std::string &path, const char *what) {
  return Error(path + ": " + what + " failed: " + std::strerror(errno));
}
} // namespace

const char *non_regular_kind(unsigned mode) {
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISSOCK(mode))
    return "a socket";
  return "a special file";
}

Expected<MappedFile> MappedFile::open(const std::string &path) {
  // O_NONBLOCK: opening a FIFO that has no writer would otherwise wait
  // forever; fstat then refuses it. Regular files ignore the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return sysError(path, "open");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Error err = sysError(path, "fstat");
    ::close(fd);
    return err;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(path + ": is " + non_regular_kind(st.st_mode) +
                 ", expected a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void *p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Error err = sysError(path, "mmap");
      ::close(fd);
      return err;
    }
    file.data_ = static_cast<const uint8_t *>(p);
  }
  ::close(fd);
  return file;
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_)
    ::munmap(const_cast<uint8_t *>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void release_mapped_pages(const void *data, size_t nbytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + nbytes) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

} // namespace hyc::io
