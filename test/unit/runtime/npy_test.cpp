// Tests for the float32 .npy reader and writer.
#include "hyrt/cli/npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {
std::string temp_path(const std::string &name) {
  return std::string(HYC_BINARY_DIR) + "/" + name;
}
} // namespace

TEST(Npy, WriteThenReadRoundTrip) {
  const std::string path = temp_path("npy_roundtrip.npy");
  const std::vector<float> data = {1.5f, -2.f, 3.25f, 0.f, 1e-7f, 42.f};
  ASSERT_TRUE(hyrt::write_npy_f32(path, data.data(), 2, 3).ok());
  std::ifstream f(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)),
                  std::istreambuf_iterator<char>());
  ASSERT_GE(all.size(), 10u);
  EXPECT_EQ((all.size() - 6 * 4) % 64, 0u); // header padded to 64 bytes
  EXPECT_NE(all.find("'shape': (2, 3)"), std::string::npos);
  hyrt::NpyArray a;
  ASSERT_TRUE(hyrt::read_npy_f32(path, &a).ok());
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, data);
  std::remove(path.c_str());
}

TEST(Npy, RejectsOtherDtypesAndBadFiles) {
  const std::string path = temp_path("npy_f8.npy");
  {
    std::ofstream f(path, std::ios::binary);
    std::string h = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }";
    h.append(128 - 10 - h.size() - 1, ' ');
    h += '\n';
    f.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {char(h.size()), 0};
    f.write(len, 2);
    f << h << std::string(8, '\0');
  }
  hyrt::NpyArray a;
  hyrt::Status s = hyrt::read_npy_f32(path, &a);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected dtype '<f4'"), std::string::npos);
  {
    std::ofstream f(path, std::ios::binary);
    f << "not numpy";
  }
  EXPECT_FALSE(hyrt::read_npy_f32(path, &a).ok());
  EXPECT_FALSE(hyrt::read_npy_f32(path + ".missing", &a).ok());
  std::remove(path.c_str());
}

TEST(Npy, ReadsGoldenLogits) {
  const std::string path =
      std::string(HYC_SHARED_DIR) + "/golden/llama-tiny/logits_7.npy";
  if (!std::ifstream(path).good())
    GTEST_SKIP() << "shared golden data not found at " << path;
  hyrt::NpyArray a;
  hyrt::Status s = hyrt::read_npy_f32(path, &a);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(a.shape.size(), 2u);
  EXPECT_EQ(a.shape[0], 7);
  EXPECT_EQ(int64_t(a.data.size()), a.shape[0] * a.shape[1]);
}
