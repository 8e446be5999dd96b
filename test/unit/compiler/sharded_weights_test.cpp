// ShardedWeights: a tensor-parallel rank's part of each checkpoint tensor,
// read whole and by rows (the artifact writer slices large matrices by
// rows), equal parts and padded ones (an ffn width that does not divide:
// zeros past the stored rows / columns), against the stored values.
#include "compiler/ShardedWeights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <vector>

namespace {

using hyc::compiler::ShardSpec;

/// A 5 x 3 weight w[r][c] = 10 r + c, readable whole or by rows.
class Stored : public hyc::models::WeightSource {
public:
  Stored() { infos_.push_back({"w", {5, 3}, "F32"}); }
  const std::vector<hyc::models::WeightInfo> &weights() const override { return infos_; }
  hyc::models::Status read_f32(const std::string &, float *out) const override {
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 3; ++c)
        out[r * 3 + c] = float(10 * r + c);
    return {};
  }
  bool read_f32_rows(const std::string &, int64_t row0, int64_t rows,
                     float *out) const override {
    if (row0 < 0 || row0 + rows > 5)
      return false; // past the stored rows: what a real source refuses
    for (int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < 3; ++c)
        out[r * 3 + c] = float(10 * (row0 + r) + c);
    return true;
  }

private:
  std::vector<hyc::models::WeightInfo> infos_;
};

std::unique_ptr<hyc::models::WeightSource> shard(ShardSpec spec) {
  std::string error;
  auto s = hyc::compiler::shardWeights(std::make_unique<Stored>(),
                                       std::map<std::string, ShardSpec>{{"w", spec}}, error);
  EXPECT_TRUE(s) << error;
  return s;
}

// 5 rows padded to 6 over 2 parts: part 1 is rows 3, 4 and a zero row,
// whole and by rows (including a range that is only padding).
TEST(ShardedWeights, PaddedRowsReadAsZerosWholeAndByRows) {
  auto s = shard({0, 2, 1, 6});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->find("w")->shape, (std::vector<int64_t>{3, 3}));
  std::vector<float> whole(9, -1.0f);
  ASSERT_TRUE(s->read_f32("w", whole.data()).ok());
  EXPECT_EQ(whole, (std::vector<float>{30, 31, 32, 40, 41, 42, 0, 0, 0}));
  std::vector<float> rows(6, -1.0f);
  ASSERT_TRUE(s->read_f32_rows("w", 1, 2, rows.data()));
  EXPECT_EQ(rows, (std::vector<float>{40, 41, 42, 0, 0, 0}));
  std::vector<float> pad(3, -1.0f);
  ASSERT_TRUE(s->read_f32_rows("w", 2, 1, pad.data()));
  EXPECT_EQ(pad, (std::vector<float>{0, 0, 0}));
}

// Columns: 3 padded to 4 over 2 parts, part 1 is column 2 and a zero one.
TEST(ShardedWeights, PaddedColumnsReadAsZeros) {
  auto s = shard({1, 2, 1, 4});
  ASSERT_TRUE(s);
  std::vector<float> whole(10, -1.0f);
  ASSERT_TRUE(s->read_f32("w", whole.data()).ok());
  EXPECT_EQ(whole, (std::vector<float>{2, 0, 12, 0, 22, 0, 32, 0, 42, 0}));
  std::vector<float> rows(2, -1.0f);
  EXPECT_FALSE(s->read_f32_rows("w", 0, 1, rows.data())); // columns: read whole
}

// A padded dim that does not divide into the parts is refused by name.
TEST(ShardedWeights, APaddedDimThatDoesNotDivideIsRefused) {
  std::string error;
  auto s = hyc::compiler::shardWeights(std::make_unique<Stored>(),
                                       std::map<std::string, ShardSpec>{{"w", {0, 2, 0, 5}}},
                                       error);
  EXPECT_FALSE(s);
  EXPECT_NE(error.find("w cannot be split along dim 0 into 2 equal parts of 5"),
            std::string::npos)
      << error;
}

/// Integer codes as a GGUF file stores them: "c" [5, 512] as Q4_K
/// (two-level: d, dmin per 256; sc, m per 32), "g" [5, 128] as Q4_0 codes
/// with an fp16 scale per 32. Every field differs by row and position, so
/// a slice that reads the wrong ones shows.
class Coded : public hyc::models::WeightSource {
public:
  Coded() {
    infos_.push_back({"c", {5, 512}, "Q4_K"});
    infos_.push_back({"g", {5, 128}, "Q4_0"});
    c_.format = "q4k", c_.n = 5, c_.k = 512;
    for (int r = 0; r < 5; ++r) {
      for (int k = 0; k < 512; ++k)
        c_.codes.push_back(uint8_t((7 * r + k) % 16));
      for (int g = 0; g < 16; ++g) {
        c_.sub_scales.push_back(int8_t(1 + g + 16 * r));
        c_.sub_mins.push_back(uint8_t(100 + g + 16 * r));
      }
      for (int b = 0; b < 2; ++b) {
        c_.d.push_back(uint16_t(0x3c00 + 16 * r + b));
        c_.dmin.push_back(uint16_t(0x3800 + 16 * r + b));
      }
    }
  }
  const std::vector<hyc::models::WeightInfo> &weights() const override { return infos_; }
  hyc::models::Status read_f32(const std::string &, float *) const override {
    return hyc::io::Error("codes only");
  }
  std::string stored_codes_format(const std::string &name) const override {
    return name == "c" ? "q4k" : "";
  }
  bool read_stored_codes(const std::string &name, hyc::models::StoredCodes &out) const override {
    if (name != "c")
      return false;
    out = c_;
    return true;
  }
  bool read_codes_g32(const std::string &name, int bits, uint8_t *codes,
                      uint16_t *scales) const override {
    if (name != "g" || bits != 4)
      return false;
    for (int r = 0; r < 5; ++r)
      for (int k = 0; k < 128; ++k) {
        codes[r * 128 + k] = uint8_t((r + 3 * k) % 16);
        if (k % 32 == 0)
          scales[r * 4 + k / 32] = uint16_t(0x3000 + 8 * r + k / 32);
      }
    return true;
  }

  /// What element [r][k] of `c` is made of: d, sc, code, dmin, m.
  std::array<int, 5> element(int64_t r, int64_t k) const { return elementOf(c_, 256, r, k); }
  static std::array<int, 5> elementOf(const hyc::models::StoredCodes &c, int64_t super,
                                      int64_t r, int64_t k) {
    const int64_t g = r * (c.k / 32) + k / 32, b = r * (c.k / super) + k / super;
    return {c.d[size_t(b)], c.sub_scales[size_t(g)], c.codes[size_t(r * c.k + k)],
            c.dmin[size_t(b)], c.sub_mins[size_t(g)]};
  }

private:
  std::vector<hyc::models::WeightInfo> infos_;
  hyc::models::StoredCodes c_;
};

std::unique_ptr<hyc::models::WeightSource> shardCoded(const std::string &name, ShardSpec spec) {
  std::string error;
  auto s = hyc::compiler::shardWeights(std::make_unique<Coded>(),
                                       std::map<std::string, ShardSpec>{{name, spec}}, error);
  EXPECT_TRUE(s) << error;
  return s;
}

/// Every element of `part` ([rows, cols] of format `format`, d per
/// `super`) is the whole's element [row0 + r][col0 + k]; rows past the
/// whole's 5 have d = dmin = 0 (zero weights).
void expectWindow(const hyc::models::StoredCodes &part, const std::string &format,
                  int64_t super, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  const Coded whole;
  ASSERT_EQ(part.format, format);
  ASSERT_EQ(part.n, rows);
  ASSERT_EQ(part.k, cols);
  ASSERT_EQ(part.codes.size(), size_t(rows * cols));
  ASSERT_EQ(part.sub_scales.size(), size_t(rows * cols / 32));
  ASSERT_EQ(part.sub_mins.size(), size_t(rows * cols / 32));
  ASSERT_EQ(part.d.size(), size_t(rows * cols / super));
  ASSERT_EQ(part.dmin.size(), size_t(rows * cols / super));
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      const std::array<int, 5> got = Coded::elementOf(part, super, r, k);
      if (row0 + r >= 5)
        wrong += got[0] != 0 || got[3] != 0;
      else
        wrong += got != whole.element(row0 + r, col0 + k);
    }
  EXPECT_EQ(wrong, 0) << format << " rows " << row0 << "+" << rows << " cols " << col0 << "+"
                      << cols;
}

// Rows of a stored-codes matrix keep its format, padding rows zero weights.
TEST(ShardedWeights, StoredCodesSplitByRowsKeepTheirFormat) {
  auto s = shardCoded("c", {0, 2, 1, 6});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->stored_codes_format("c"), "q4k");
  hyc::models::StoredCodes part;
  ASSERT_TRUE(s->read_stored_codes("c", part));
  expectWindow(part, "q4k", 256, 3, 3, 0, 512);
}

// Columns: whole super-blocks keep Q4_K; half super-blocks become q4z
// (d, dmin per 128) with each half's own d and dmin; a cut inside a half
// is no stored format at all (the policy re-quantizes it).
TEST(ShardedWeights, StoredCodesSplitByColumnsKeepWholeScaleBlocks) {
  hyc::models::StoredCodes part;
  auto halves = shardCoded("c", {1, 2, 1, 0});
  ASSERT_TRUE(halves);
  EXPECT_EQ(halves->stored_codes_format("c"), "q4k");
  ASSERT_TRUE(halves->read_stored_codes("c", part));
  expectWindow(part, "q4k", 256, 0, 5, 256, 256);
  for (int64_t index : {1, 2}) {
    auto quarters = shardCoded("c", {1, 4, index, 0});
    ASSERT_TRUE(quarters);
    EXPECT_EQ(quarters->stored_codes_format("c"), "q4z");
    ASSERT_TRUE(quarters->read_stored_codes("c", part));
    expectWindow(part, "q4z", 128, 0, 5, 128 * index, 128);
  }
  auto eighths = shardCoded("c", {1, 8, 1, 0});
  ASSERT_TRUE(eighths);
  EXPECT_EQ(eighths->stored_codes_format("c"), "");
  EXPECT_FALSE(eighths->read_stored_codes("c", part));
}

// Q4_0-style codes with a scale per 32: rows (padding: scale 0) and
// columns in whole groups keep them; a part of 16 columns does not.
TEST(ShardedWeights, GroupCodesSplitInWholeGroups) {
  std::vector<uint8_t> codes(5 * 128);
  std::vector<uint16_t> scales(5 * 4);
  ASSERT_TRUE(Coded().read_codes_g32("g", 4, codes.data(), scales.data()));
  auto cols = shardCoded("g", {1, 2, 1, 0});
  ASSERT_TRUE(cols);
  std::vector<uint8_t> c(5 * 64, 0xff);
  std::vector<uint16_t> sc(5 * 2, 0xffff);
  ASSERT_TRUE(cols->read_codes_g32("g", 4, c.data(), sc.data()));
  for (int r = 0; r < 5; ++r) {
    EXPECT_TRUE(std::equal(c.begin() + r * 64, c.begin() + (r + 1) * 64,
                           codes.begin() + r * 128 + 64))
        << r;
    EXPECT_EQ(sc[size_t(2 * r)], scales[size_t(4 * r + 2)]) << r;
    EXPECT_EQ(sc[size_t(2 * r + 1)], scales[size_t(4 * r + 3)]) << r;
  }
  auto rows = shardCoded("g", {0, 2, 1, 6});
  ASSERT_TRUE(rows);
  std::vector<uint8_t> rc(3 * 128, 0xff);
  std::vector<uint16_t> rs(3 * 4, 0xffff);
  ASSERT_TRUE(rows->read_codes_g32("g", 4, rc.data(), rs.data()));
  EXPECT_TRUE(std::equal(rc.begin(), rc.begin() + 256, codes.begin() + 3 * 128));
  EXPECT_TRUE(std::equal(rs.begin(), rs.begin() + 8, scales.begin() + 12));
  EXPECT_EQ(std::vector<uint16_t>(rs.begin() + 8, rs.end()), std::vector<uint16_t>(4, 0));
  auto narrow = shardCoded("g", {1, 8, 1, 0});
  ASSERT_TRUE(narrow);
  EXPECT_FALSE(narrow->read_codes_g32("g", 4, c.data(), sc.data()));
}

} // namespace
