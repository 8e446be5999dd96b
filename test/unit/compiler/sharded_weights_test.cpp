// ShardedWeights: a tensor-parallel rank's part of each checkpoint tensor,
// read whole and by rows (the artifact writer slices large matrices by
// rows), equal parts and padded ones (an ffn width that does not divide:
// zeros past the stored rows / columns), against the stored values.
#include "compiler/ShardedWeights.h"

#include <gtest/gtest.h>

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

} // namespace
