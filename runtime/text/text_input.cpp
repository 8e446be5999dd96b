// Bounded reading of the hyrt commands' text inputs (see text_input.h).
#include "text_input.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <istream>
#include <sys/stat.h>
#include <unistd.h>

namespace hyrt::cli {

namespace {

constexpr size_t kPiece = 64 * 1024;

const char *kindOf(mode_t mode) {
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

/// A read-only descriptor of a regular file, closed on destruction.
class RegularFile {
public:
  ~RegularFile() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  /// O_NONBLOCK: a FIFO without a writer would block open() itself; the
  /// flag changes nothing for the regular files that pass fstat.
  Status open(const std::string &path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0)
      return Status::Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0)
      return Status::Error(path + ": cannot stat: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      return Status::Error(path + ": is " + kindOf(st.st_mode) +
                           ", expected a regular file");
    size_ = uint64_t(st.st_size);
    path_ = path;
    return Status::Ok();
  }
  uint64_t size() const { return size_; }
  /// Up to `n` bytes; 0 at the end of the file.
  Status read(char *buf, size_t n, size_t *got) {
    ssize_t r;
    do
      r = ::read(fd_, buf, n);
    while (r < 0 && errno == EINTR);
    if (r < 0)
      return Status::Error(path_ + ": read failed: " + std::strerror(errno));
    *got = size_t(r);
    return Status::Ok();
  }

private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

/// split_paragraphs as a stream: feed() bytes, finish() at the end.
class ParagraphSplitter {
public:
  ParagraphSplitter(int64_t max_paragraphs, size_t max_bytes,
                    std::vector<std::string> *out)
      : max_paragraphs_(max_paragraphs), max_bytes_(max_bytes), out_(out) {}

  bool full() const { return int64_t(out_->size()) >= max_paragraphs_; }

  void feed(const char *p, size_t n) {
    for (size_t i = 0; i < n && !full(); ++i) {
      const char c = p[i];
      if (c == '\n') {
        endLine();
        continue;
      }
      if (!std::isspace(static_cast<unsigned char>(c)))
        nonblank_ = true;
      // Bytes past the paragraph's budget are dropped, but the line is
      // still followed to its end (and its blankness).
      if (current_.size() + line_.size() < max_bytes_)
        line_ += c;
    }
  }

  void finish() {
    if (!line_.empty() || nonblank_)
      endLine();
    flush();
  }

private:
  void endLine() {
    if (!line_.empty() && line_.back() == '\r')
      line_.pop_back();
    if (!nonblank_) {
      flush();
    } else if (current_.size() < max_bytes_) {
      if (!current_.empty())
        current_ += '\n';
      current_.append(line_, 0, max_bytes_ - std::min(max_bytes_, current_.size()));
    }
    line_.clear();
    nonblank_ = false;
  }
  void flush() {
    if (!current_.empty() && !full())
      out_->push_back(std::move(current_));
    current_.clear();
  }

  int64_t max_paragraphs_;
  size_t max_bytes_;
  std::vector<std::string> *out_;
  std::string current_, line_;
  bool nonblank_ = false;
};

} // namespace

Status check_regular_file(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::Error(path + ": cannot read: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Status::Error(path + ": is " + kindOf(st.st_mode) +
                         ", expected a regular file");
  return Status::Ok();
}

Status read_regular_file(const std::string &path, uint64_t max_bytes,
                         std::string *out) {
  RegularFile f;
  if (Status s = f.open(path); !s.ok())
    return s;
  if (f.size() > max_bytes)
    return Status::Error(path + ": " + std::to_string(f.size()) +
                         " bytes, more than the " + std::to_string(max_bytes) +
                         " this input may have");
  out->clear();
  char buf[kPiece];
  for (size_t got = 0;; out->append(buf, got)) {
    if (Status s = f.read(buf, sizeof buf, &got); !s.ok())
      return s;
    if (got == 0)
      return Status::Ok();
    if (out->size() + got > max_bytes) // the file grew while being read
      return Status::Error(path + ": more than the " +
                           std::to_string(max_bytes) +
                           " bytes this input may have");
  }
}

Status read_paragraphs(const std::string &path, int64_t max_paragraphs,
                       size_t max_paragraph_bytes,
                       std::vector<std::string> *out) {
  RegularFile f;
  if (Status s = f.open(path); !s.ok())
    return s;
  out->clear();
  ParagraphSplitter split(max_paragraphs, max_paragraph_bytes, out);
  std::vector<char> buf(kPiece);
  while (!split.full()) {
    size_t got = 0;
    if (Status s = f.read(buf.data(), buf.size(), &got); !s.ok())
      return s;
    if (got == 0)
      break;
    split.feed(buf.data(), got);
  }
  split.finish();
  return Status::Ok();
}

size_t paragraph_byte_budget(int64_t max_tokens) {
  return std::max<size_t>(size_t(1) << 20, size_t(std::max<int64_t>(max_tokens, 0)) * 256);
}

Status read_bounded(std::istream &in, uint64_t max_bytes,
                    const std::string &what, std::string *out) {
  out->clear();
  char buf[kPiece];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (out->size() + uint64_t(in.gcount()) > max_bytes)
      return Status::Error(what + " has more than " +
                           std::to_string(max_bytes) + " bytes");
    out->append(buf, size_t(in.gcount()));
  }
  return Status::Ok();
}

std::vector<int32_t> encode_prefix(const Tokenizer &tok, const std::string &text,
                                   bool add_bos, int64_t max_tokens,
                                   bool *truncated, Status *error) {
  // Ids kept must lie well before the cut, so that no merge across it could
  // have changed them; every id covers at least one byte.
  constexpr int64_t kMargin = 16;
  const size_t want = size_t(std::max<int64_t>(max_tokens, 0) + kMargin);
  std::vector<int32_t> ids;
  for (size_t bytes = std::max<size_t>(4096, want * 4);; bytes *= 2) {
    Status s;
    if (bytes >= text.size()) {
      s = tok.encode(text, add_bos, &ids);
      if (!s.ok() && error)
        *error = s;
      break;
    }
    // Cut before whitespace (words stay whole), inside a long word only
    // when there is none nearby, never inside a UTF-8 sequence.
    size_t cut = text.find_last_of(" \t\n", bytes);
    if (cut == std::string::npos || cut < bytes / 2)
      cut = bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
      --cut;
    s = tok.encode(text.substr(0, cut), add_bos, &ids);
    if (!s.ok() && error)
      *error = s;
    if (!s.ok() || ids.size() > want)
      break;
  }
  if (truncated)
    *truncated = int64_t(ids.size()) > max_tokens;
  if (int64_t(ids.size()) > max_tokens)
    ids.resize(size_t(std::max<int64_t>(max_tokens, 0)));
  return ids;
}

} // namespace hyrt::cli
