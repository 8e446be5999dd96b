// Text inputs of the hyrt commands: paragraphs split while the file
// streams agree with split_paragraphs, special files and oversized inputs
// are refused, and a long text tokenized by prefixes gives the ids of the
// whole text.
#include "runtime/cli/common.h"
#include "runtime/text/text_input.h"

#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <functional>
#include <future>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using hyrt::Status;

const std::string kShared = HYC_SHARED_DIR;
const std::string kTok512 = kShared + "/models/stories260K/tok512.bin";

class TextInput : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hyrt-text-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string &name, const std::string &text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(TextInput, StreamedParagraphsMatchSplitParagraphs) {
  const std::string text = "  \nfirst line\r\nsecond\n\n\t \nthird\n\n\n"
                           "fourth with trailing blank   \n   ";
  const std::string path = write("t.txt", text);
  std::vector<std::string> got;
  ASSERT_TRUE(hyrt::cli::read_paragraphs(path, INT64_MAX, 1 << 20, &got).ok());
  EXPECT_EQ(got, hyrt::cli::split_paragraphs(text));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "first line\nsecond");

  // Stops after the paragraphs asked for; keeps the budget of each.
  ASSERT_TRUE(hyrt::cli::read_paragraphs(path, 2, 1 << 20, &got).ok());
  EXPECT_EQ(got.size(), 2u);
  ASSERT_TRUE(hyrt::cli::read_paragraphs(path, INT64_MAX, 5, &got).ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "first");
  EXPECT_EQ(got[2], "fourt");

  // Longer than one 64 KiB piece.
  std::string big;
  for (int i = 0; i < 5000; ++i)
    big += "line " + std::to_string(i) + (i % 7 == 0 ? "\n\n" : "\n");
  ASSERT_TRUE(hyrt::cli::read_paragraphs(write("big.txt", big), INT64_MAX,
                                         1 << 20, &got)
                  .ok());
  EXPECT_EQ(got, hyrt::cli::split_paragraphs(big));
}

/// `read(fifo)` for a reader that must refuse the FIFO `fifo`; fails the
/// test instead of hanging when it waits for a writer (writers are then
/// opened and closed until it returns).
Status withinSeconds(const std::string &fifo, std::function<Status()> read) {
  auto result = std::async(std::launch::async, read);
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the reader waits on the FIFO " << fifo;
    do {
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0)
        ::close(fd);
    } while (result.wait_for(std::chrono::milliseconds(100)) !=
             std::future_status::ready);
  }
  return result.get();
}

TEST_F(TextInput, SpecialFilesAndOversizedInputsAreRefused) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::string> paragraphs;
  std::string text;
  Status s = withinSeconds(fifo, [&] {
    return hyrt::cli::read_paragraphs(fifo, 1, 1 << 20, &paragraphs);
  });
  EXPECT_EQ(s.message(), fifo + ": is a FIFO, expected a regular file");
  s = withinSeconds(fifo, [&] {
    return hyrt::cli::read_regular_file(fifo, 1 << 20, &text);
  });
  EXPECT_EQ(s.message(), fifo + ": is a FIFO, expected a regular file");
  s = hyrt::cli::read_regular_file("/dev/zero", 1 << 20, &text);
  EXPECT_EQ(s.message(), "/dev/zero: is a character device, expected a regular file");
  s = hyrt::cli::check_regular_file(dir_);
  EXPECT_EQ(s.message(), dir_ + ": is a directory, expected a regular file");

  s = hyrt::cli::read_regular_file(write("ten.txt", "0123456789"), 9, &text);
  EXPECT_EQ(s.message(), dir_ + "/ten.txt: 10 bytes, more than the 9 this input may have");
  ASSERT_TRUE(hyrt::cli::read_regular_file(dir_ + "/ten.txt", 10, &text).ok());
  EXPECT_EQ(text, "0123456789");

  std::istringstream in(std::string(100, 'x'));
  s = hyrt::cli::read_bounded(in, 99, "standard input", &text);
  EXPECT_EQ(s.message(), "standard input has more than 99 bytes");
  std::istringstream in2(std::string(100, 'x'));
  ASSERT_TRUE(hyrt::cli::read_bounded(in2, 100, "standard input", &text).ok());
  EXPECT_EQ(text.size(), 100u);
}

TEST_F(TextInput, PrefixEncodingGivesTheIdsOfTheWholeText) {
  if (!fs::exists(kTok512))
    GTEST_SKIP() << "shared models not found at " << kTok512;
  hyrt::TokenizerData data;
  ASSERT_TRUE(hyrt::read_llama2c_tokenizer(kTok512, 512, &data).ok());
  hyrt::Tokenizer tok;
  ASSERT_TRUE(tok.init(data).ok());
  std::string text;
  for (int i = 0; text.size() < 30000; ++i)
    text += "Once upon a time, there was a girl named Lily" +
            std::to_string(i) + ". She liked to play with her ball. ";
  const std::vector<int32_t> whole = tok.encode(text, true);
  for (int64_t max_tokens : {1, 64, 256, 2000}) {
    bool truncated = false;
    const std::vector<int32_t> ids =
        hyrt::cli::encode_prefix(tok, text, true, max_tokens, &truncated);
    EXPECT_TRUE(truncated);
    ASSERT_EQ(int64_t(ids.size()), max_tokens);
    EXPECT_EQ(ids, std::vector<int32_t>(whole.begin(), whole.begin() + max_tokens))
        << max_tokens;
  }
  // A text that fits is encoded whole.
  bool truncated = true;
  EXPECT_EQ(hyrt::cli::encode_prefix(tok, "Lily was happy.", true, 256, &truncated),
            tok.encode("Lily was happy.", true));
  EXPECT_FALSE(truncated);

  // A 200 KB paragraph costs what its first 256 ids cost.
  std::string long_text;
  while (long_text.size() < 200 * 1024)
    long_text += text;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(hyrt::cli::encode_prefix(tok, long_text, true, 256).size(), 256u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

} // namespace
