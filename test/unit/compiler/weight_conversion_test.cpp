// The artifact writer's work units: an entry's bytes are the same whether
// its matrices are converted whole or in row slices (the path large
// embedding tables and heads take on every core), for every layout and
// derivation; and a row range read alone equals those rows of the whole
// tensor.
#include "compiler/WeightConversion.h"

#include "models/checkpoint/synth.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace hyc::compiler {
namespace {

namespace fs = std::filesystem;

/// A synthesized checkpoint in a fresh directory (removed at exit).
struct SynthCheckpoint {
  fs::path dir;
  models::Checkpoint ckpt;
  explicit SynthCheckpoint(const std::string &arch, bool fp8 = false) {
    char tmpl[] = "/tmp/hyc-wconv-XXXXXX";
    dir = ::mkdtemp(tmpl);
    models::SynthOptions o;
    o.arch = arch;
    o.seed = 3;
    o.fp8 = fp8;
    o.output_dir = dir.string();
    EXPECT_TRUE(models::synthesize(o).ok());
    auto loaded = models::load_checkpoint(dir.string());
    EXPECT_TRUE(bool(loaded)) << (loaded ? "" : loaded.error());
    if (loaded)
      ckpt = std::move(*loaded);
  }
  ~SynthCheckpoint() { fs::remove_all(dir); }
};

/// The entry's bytes and how many chunks produced them.
std::pair<std::vector<uint8_t>, size_t> entryBytes(const models::Checkpoint &ckpt,
                                                   const PlannedWeight &w, int64_t slice) {
  std::vector<ChunkFn> chunks;
  std::string error;
  EXPECT_TRUE(planEntryChunks(ckpt, w, chunks, error, slice)) << error;
  std::vector<uint8_t> bytes;
  for (ChunkFn &c : chunks)
    EXPECT_TRUE(c(bytes, error)) << w.name << ": " << error;
  return {bytes, chunks.size()};
}

// The tiny llama's embedding table is [512, 64]: slices of 128 rows split
// it in four. Every way the writer stores a matrix, sliced and whole.
TEST(WeightConversion, RowSlicesGiveTheWholeMatrixBytes) {
  SynthCheckpoint s("llama");
  const std::vector<int64_t> shape = {512, 64};
  const std::string t = "model.embed_tokens.weight";
  const PlannedWeight entries[] = {
      {t, shape, "f32"},
      {t + "#copy", shape, "bf16_vnni2"},
      {t + "#copy", shape, "f32_k1"},
      {t + "#bf16", shape, "bf16"},
      {t + "#w8a8", shape, "s8_vnni4"},
      {t + "#w8a8.scale", {512}, "f32"},
      {t + "#w8a8g128", shape, "s8_vnni4_g128"},
      {t + "#w8a8g128.scale", {512, 1}, "f32"},
      {t + "#fp8", shape, "f8_vnni2"},
      {t + "#fp8.scale", {4, 1}, "f32"},
  };
  for (const PlannedWeight &w : entries) {
    auto [whole, wholeChunks] = entryBytes(s.ckpt, w, kSliceElements);
    auto [sliced, slicedChunks] = entryBytes(s.ckpt, w, 128 * 64);
    EXPECT_EQ(wholeChunks, 1u) << w.name << " " << w.layout;
    EXPECT_EQ(slicedChunks, 4u) << w.name << " " << w.layout;
    ASSERT_FALSE(whole.empty()) << w.name;
    EXPECT_EQ(sliced, whole) << w.name << " " << w.layout;
  }
}

// Rows read alone are the rows of the whole read; out-of-range rows and a
// tensor not stored plainly (FP8 codes with block scales) are refused.
TEST(WeightConversion, RowRangeReadsMatchTheWholeTensor) {
  SynthCheckpoint s("llama");
  const std::string t = "model.layers.0.mlp.down_proj.weight";
  const models::WeightInfo *info = s.ckpt.weights->find(t);
  ASSERT_NE(info, nullptr);
  const int64_t n = info->shape[0], k = info->shape[1];
  std::vector<float> whole(size_t(n * k)), part(size_t(7 * k));
  ASSERT_TRUE(s.ckpt.weights->read_f32(t, whole.data()).ok());
  ASSERT_TRUE(s.ckpt.weights->read_f32_rows(t, 5, 7, part.data()));
  for (int64_t i = 0; i < 7 * k; ++i)
    ASSERT_EQ(part[size_t(i)], whole[size_t(5 * k + i)]) << i;
  EXPECT_FALSE(s.ckpt.weights->read_f32_rows(t, n - 3, 7, part.data()));
  SynthCheckpoint f("llama", /*fp8=*/true);
  EXPECT_FALSE(f.ckpt.weights->read_f32_rows(t, 0, 7, part.data()));
}

} // namespace
} // namespace hyc::compiler
