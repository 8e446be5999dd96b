// A look at a library's ELF headers before dlopen: the dynamic loader maps
// the segments the program headers name, and a file cut short faults
// (SIGBUS) on the first page past its end instead of failing. So the
// headers, the section table and every loadable segment must lie within
// the file, and the file must be a 64-bit x86-64 shared object.
#include "hyrt/artifact/artifact.h"

#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

namespace hyrt {

namespace {

bool read_at(int fd, int64_t offset, void *out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, static_cast<char *>(out) + done, n - done,
                              off_t(offset + int64_t(done)));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    done += size_t(r);
  }
  return true;
}

/// True when [offset, offset + size) lies within a file of `file_size`.
bool within(uint64_t offset, uint64_t size, int64_t file_size) {
  return offset <= uint64_t(file_size) && size <= uint64_t(file_size) - offset;
}

} // namespace

Status check_elf_file(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::Error(path + ": cannot open: " + std::strerror(errno));
  struct Guard {
    int fd;
    ~Guard() { ::close(fd); }
  } guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return Status::Error(path + ": not a regular file");
  const int64_t size = st.st_size;
  const std::string damaged = " (truncated or damaged? recompile the artifact)";
  Elf64_Ehdr eh;
  if (size < int64_t(sizeof(eh)) || !read_at(fd, 0, &eh, sizeof(eh)) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return Status::Error(path + ": not an ELF file (" + std::to_string(size) +
                         " bytes, no ELF header)" + damaged);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != EM_X86_64)
    return Status::Error(path + ": ELF file for another machine (expected 64-bit "
                                "little-endian x86-64, found class " +
                         std::to_string(eh.e_ident[EI_CLASS]) + ", machine " +
                         std::to_string(eh.e_machine) + ")");
  if (eh.e_type != ET_DYN)
    return Status::Error(path + ": ELF type " + std::to_string(eh.e_type) +
                         ", expected a shared object (ET_DYN)");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !within(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr), size))
    return Status::Error(path + ": program headers (" + std::to_string(eh.e_phnum) +
                         " at offset " + std::to_string(eh.e_phoff) +
                         ") lie outside the file of " + std::to_string(size) +
                         " bytes" + damaged);
  if (eh.e_shnum != 0 &&
      !within(eh.e_shoff, uint64_t(eh.e_shnum) * uint64_t(eh.e_shentsize), size))
    return Status::Error(path + ": section headers (" + std::to_string(eh.e_shnum) +
                         " at offset " + std::to_string(eh.e_shoff) +
                         ") lie outside the file of " + std::to_string(size) +
                         " bytes" + damaged);
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(fd, int64_t(eh.e_phoff), ph.data(), ph.size() * sizeof(Elf64_Phdr)))
    return Status::Error(path + ": cannot read its program headers" + damaged);
  for (size_t i = 0; i < ph.size(); ++i)
    if ((ph[i].p_type == PT_LOAD || ph[i].p_type == PT_DYNAMIC) &&
        !within(ph[i].p_offset, ph[i].p_filesz, size))
      return Status::Error(path + ": segment " + std::to_string(i) + " (offset " +
                           std::to_string(ph[i].p_offset) + " + " +
                           std::to_string(ph[i].p_filesz) +
                           " bytes) lies outside the file of " + std::to_string(size) +
                           " bytes" + damaged);
  return Status::Ok();
}

} // namespace hyrt
