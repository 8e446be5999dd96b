// GGUF block-quantized tensors read exactly: for every ggml type hyc reads,
// blocks encoded by the independent test writer (test/common/
// gguf_spec_writer.*, packed from the format definition) from explicitly
// chosen fields, read back through GgufFile, and every value compared bit
// for bit with the type's formula evaluated here on those fields, in
// ggml's fp32 order. Then the hostile cases: a tensor whose data runs past
// the file and rows that are not whole blocks are refused by name.
#include "models/io/gguf.h"
#include "test/common/gguf_spec_writer.h"

#include "checkpoint_test_util.h"
#include "tiny_llama.h"

#include <cmath>
#include <cstring>
#include <functional>

namespace hyc::models::test {
namespace {

namespace blocks = ::hyc::test::ggml_blocks;
using blocks::Codes;

// IQ4_NL / IQ4_XS code book and MXFP4's e2m1 values doubled, as the format
// defines them (ggml-common.h kvalues_iq4nl, kvalues_mxfp4).
const int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                      1,    13,   25,  38,  53,  69,  89,  113};
const int kMxfp4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                        0, -1, -2, -3, -4, -6, -8, -12};

/// Deterministic codes in [lo, hi], with the extremes first so that every
/// field width is exercised at both ends.
struct CodeSource {
  uint32_t state;
  Codes take(int n, int lo, int hi) {
    Codes c(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      c[size_t(i)] = i == 0   ? lo
                     : i == 1 ? hi
                              : lo + int((state >> 8) % uint32_t(hi - lo + 1));
    }
    return c;
  }
};

/// One tensor of `rows` x `cols` of a block type: its bytes and the values
/// the format defines for them.
struct Encoded {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

/// Builds `nblocks` blocks with `block(src, bytes, values)`, each appending
/// one block's bytes and its defined values.
Encoded encode(int nblocks, uint32_t seed,
               const std::function<void(CodeSource &, Encoded &)> &block) {
  CodeSource src{seed};
  Encoded e;
  for (int b = 0; b < nblocks; ++b)
    block(src, e);
  return e;
}

void append(Encoded &e, const std::vector<uint8_t> &bytes) {
  e.bytes.insert(e.bytes.end(), bytes.begin(), bytes.end());
}

/// fp16 scales that are not powers of two (so products round), of both
/// signs; `i` varies them per block.
float scale(int i, float base) {
  return ::hyc::test::fp16_round(base * (1.0f + 0.173f * float(i % 7)) *
                                 (i % 3 == 2 ? -1.0f : 1.0f));
}

struct TypeCase {
  const char *name;
  uint32_t ggml_type;
  int64_t block_elements, block_bytes;
  std::function<void(CodeSource &, Encoded &)> block;
};

std::vector<TypeCase> typeCases() {
  std::vector<TypeCase> cases;
  int n = 0; // block counter for scales
  cases.push_back(
      {"Q8_0", blocks::kQ8_0, 32, 34, [n](CodeSource &s, Encoded &e) mutable {
         const float d = scale(n++, 0.0123f);
         Codes q = s.take(32, -128, 127);
         append(e, blocks::q8_0(d, q));
         for (int j = 0; j < 32; ++j)
           e.values.push_back(d * float(q[j]));
       }});
  cases.push_back(
      {"Q4_0", blocks::kQ4_0, 32, 18, [n](CodeSource &s, Encoded &e) mutable {
         const float d = scale(n++, 0.0371f);
         Codes q = s.take(32, 0, 15);
         append(e, blocks::q4_0(d, q));
         for (int j = 0; j < 32; ++j)
           e.values.push_back(float(q[j] - 8) * d);
       }});
  cases.push_back(
      {"Q4_1", blocks::kQ4_1, 32, 20, [n](CodeSource &s, Encoded &e) mutable {
         const float d = std::fabs(scale(n, 0.0371f));
         const float m = scale(n++ + 1, -0.291f); // both signs
         Codes q = s.take(32, 0, 15);
         append(e, blocks::q4_1(d, m, q));
         for (int j = 0; j < 32; ++j)
           e.values.push_back(float(q[j]) * d + m);
       }});
  cases.push_back(
      {"Q5_0", blocks::kQ5_0, 32, 22, [n](CodeSource &s, Encoded &e) mutable {
         const float d = scale(n++, 0.0187f);
         Codes q = s.take(32, 0, 31);
         append(e, blocks::q5_0(d, q));
         for (int j = 0; j < 32; ++j)
           e.values.push_back(float(q[j] - 16) * d);
       }});
  cases.push_back(
      {"Q5_1", blocks::kQ5_1, 32, 24, [n](CodeSource &s, Encoded &e) mutable {
         const float d = std::fabs(scale(n, 0.0187f));
         const float m = scale(n++ + 1, -0.303f);
         Codes q = s.take(32, 0, 31);
         append(e, blocks::q5_1(d, m, q));
         for (int j = 0; j < 32; ++j)
           e.values.push_back(float(q[j]) * d + m);
       }});
  cases.push_back({"IQ4_NL", blocks::kIQ4_NL, 32, 18,
                   [n](CodeSource &s, Encoded &e) mutable {
                     const float d = scale(n++, 0.00291f);
                     Codes idx = s.take(32, 0, 15);
                     append(e, blocks::iq4_nl(d, idx));
                     for (int j = 0; j < 32; ++j)
                       e.values.push_back(d * float(kIq4[idx[j]]));
                   }});
  // MXFP4: 2^(e - 127) * e2m1 = 2^(e - 128) * the doubled table; e = 0 and
  // 1 land in float subnormals, 254 near the top of the range.
  cases.push_back(
      {"MXFP4", blocks::kMXFP4, 32, 17, [n](CodeSource &s, Encoded &e) mutable {
         static const int kExps[] = {127, 0, 1, 254, 120, 131};
         const int ex = kExps[n++ % 6];
         Codes idx = s.take(32, 0, 15);
         append(e, blocks::mxfp4(uint8_t(ex), idx));
         for (int j = 0; j < 32; ++j)
           e.values.push_back(std::ldexp(float(kMxfp4[idx[j]]), ex - 128));
       }});
  cases.push_back(
      {"Q2_K", blocks::kQ2_K, 256, 84, [n](CodeSource &s, Encoded &e) mutable {
         const float d = std::fabs(scale(n, 0.0213f));
         const float dmin = scale(n++ + 2, 0.0119f); // both signs
         Codes sc = s.take(16, 0, 15), m = s.take(16, 0, 15);
         Codes q = s.take(256, 0, 3);
         append(e, blocks::q2_K(d, dmin, sc, m, q));
         for (int i = 0; i < 256; ++i)
           e.values.push_back((d * float(sc[i / 16])) * float(q[i]) -
                              dmin * float(m[i / 16]));
       }});
  cases.push_back(
      {"Q3_K", blocks::kQ3_K, 256, 110, [n](CodeSource &s, Encoded &e) mutable {
         const float d = scale(n++, 0.0079f);
         Codes sc = s.take(16, 0, 63), q = s.take(256, 0, 7);
         append(e, blocks::q3_K(d, sc, q));
         for (int i = 0; i < 256; ++i)
           e.values.push_back((d * float(sc[i / 16] - 32)) * float(q[i] - 4));
       }});
  cases.push_back(
      {"Q4_K", blocks::kQ4_K, 256, 144, [n](CodeSource &s, Encoded &e) mutable {
         const float d = std::fabs(scale(n, 0.00173f));
         const float dmin = scale(n++ + 2, 0.00291f);
         Codes sc = s.take(8, 0, 63), m = s.take(8, 0, 63);
         Codes q = s.take(256, 0, 15);
         append(e, blocks::q4_K(d, dmin, sc, m, q));
         for (int i = 0; i < 256; ++i)
           e.values.push_back((d * float(sc[i / 32])) * float(q[i]) -
                              dmin * float(m[i / 32]));
       }});
  cases.push_back(
      {"Q5_K", blocks::kQ5_K, 256, 176, [n](CodeSource &s, Encoded &e) mutable {
         const float d = std::fabs(scale(n, 0.00087f));
         const float dmin = scale(n++ + 2, 0.00291f);
         Codes sc = s.take(8, 0, 63), m = s.take(8, 0, 63);
         Codes q = s.take(256, 0, 31);
         append(e, blocks::q5_K(d, dmin, sc, m, q));
         for (int i = 0; i < 256; ++i)
           e.values.push_back((d * float(sc[i / 32])) * float(q[i]) -
                              dmin * float(m[i / 32]));
       }});
  cases.push_back(
      {"Q6_K", blocks::kQ6_K, 256, 210, [n](CodeSource &s, Encoded &e) mutable {
         const float d = scale(n++, 0.00041f);
         Codes sc = s.take(16, -128, 127), q = s.take(256, 0, 63);
         append(e, blocks::q6_K(d, sc, q));
         for (int i = 0; i < 256; ++i)
           e.values.push_back(d * float(sc[i / 16]) * float(q[i] - 32));
       }});
  cases.push_back({"IQ4_XS", blocks::kIQ4_XS, 256, 136,
                   [n](CodeSource &s, Encoded &e) mutable {
                     const float d = scale(n++, 0.00037f);
                     Codes ls = s.take(8, 0, 63), idx = s.take(256, 0, 15);
                     append(e, blocks::iq4_xs(d, ls, idx));
                     for (int i = 0; i < 256; ++i)
                       e.values.push_back((d * float(ls[i / 32] - 32)) *
                                          float(kIq4[idx[i]]));
                   }});
  return cases;
}

void PrintTo(const TypeCase &c, std::ostream *os) { *os << c.name; }

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

class GgufBlockType : public ::testing::TestWithParam<TypeCase> {};

TEST_P(GgufBlockType, EveryValueAsTheFormatDefines) {
  const TypeCase &c = GetParam();
  // Rows of 3 blocks, 4 rows: scales, codes and offsets differ per block,
  // and a value read from the wrong block or row would show.
  const int64_t rows = 4, cols = 3 * c.block_elements;
  const Encoded e = encode(int(rows * 3), 7u + c.ggml_type, c.block);
  ASSERT_EQ(int64_t(e.bytes.size()), rows * 3 * c.block_bytes);
  TempDir dir;
  ::hyc::test::GgufSpecWriter w;
  w.str("general.architecture", "llama");
  w.tensor_raw("w", {rows, cols}, c.ggml_type, e.bytes);
  ASSERT_TRUE(w.write(dir.file("q.gguf")));

  Expected<io::GgufFile> g = io::GgufFile::open(dir.file("q.gguf"));
  ASSERT_TRUE(g.ok()) << g.error();
  Expected<io::TensorView> v = g->tensor("w");
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_STREQ(io::dtype_name(v->dtype), c.name);
  EXPECT_EQ(v->shape, (std::vector<int64_t>{rows, cols}));
  Expected<std::vector<float>> got = g->read_f32("w");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), e.values.size());
  int mismatches = 0;
  for (size_t i = 0; i < e.values.size() && mismatches < 8; ++i)
    if (bitsOf((*got)[i]) != bitsOf(e.values[i])) {
      ++mismatches;
      ADD_FAILURE() << c.name << " element " << i << " (row "
                    << i / size_t(cols) << ", block "
                    << (i % size_t(cols)) / size_t(c.block_elements)
                    << ", index " << i % size_t(c.block_elements) << "): read "
                    << (*got)[i] << ", the format defines " << e.values[i];
    }
  // The fields span their ranges: the values are not all one number.
  float lo = e.values[0], hi = e.values[0];
  for (float x : e.values)
    lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_LT(lo, hi);
}

TEST_P(GgufBlockType, TruncatedDataIsRefusedByName) {
  const TypeCase &c = GetParam();
  const Encoded e = encode(4, 3u, c.block);
  TempDir dir;
  ::hyc::test::GgufSpecWriter w;
  w.str("general.architecture", "llama");
  // Claims 16 blocks, stores 4 (the writer pads the data to 32 bytes only).
  w.tensor_raw("blk.0.attn_q.weight", {16, c.block_elements}, c.ggml_type,
               e.bytes);
  ASSERT_TRUE(w.write(dir.file("t.gguf")));
  Expected<io::GgufFile> g = io::GgufFile::open(dir.file("t.gguf"));
  ASSERT_FALSE(g.ok());
  const std::string need =
      std::to_string(16 * c.block_bytes) + " bytes of " + c.name;
  expectContains(g.error(), {"t.gguf", "tensor 'blk.0.attn_q.weight'", need,
                             "extends past the end of the file"});
}

TEST_P(GgufBlockType, RowsOfPartialBlocksAreRefusedByName) {
  const TypeCase &c = GetParam();
  const Encoded e = encode(2, 5u, c.block);
  TempDir dir;
  ::hyc::test::GgufSpecWriter w;
  w.str("general.architecture", "llama");
  // 2 blocks' bytes as 4 rows of half a block: the byte count fits, the
  // rows do not.
  const int64_t half = c.block_elements / 2;
  w.tensor_raw("blk.1.ffn_down.weight", {4, half}, c.ggml_type, e.bytes);
  ASSERT_TRUE(w.write(dir.file("r.gguf")));
  Expected<io::GgufFile> g = io::GgufFile::open(dir.file("r.gguf"));
  ASSERT_FALSE(g.ok());
  expectContains(
      g.error(),
      {"r.gguf", "tensor 'blk.1.ffn_down.weight'",
       std::string("of type ") + c.name, "ne[0]=" + std::to_string(half),
       "expected a multiple of " + std::to_string(c.block_elements)});
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgufBlockType,
                         ::testing::ValuesIn(typeCases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

TEST(GgufBlockTypes, UnknownTypeIsNamedWithItsId) {
  TempDir dir;
  ::hyc::test::GgufSpecWriter w;
  w.str("general.architecture", "llama");
  w.tensor_raw("w", {1, 256}, 19, std::vector<uint8_t>(50)); // IQ1_S
  ASSERT_TRUE(w.write(dir.file("u.gguf")));
  Expected<io::GgufFile> g = io::GgufFile::open(dir.file("u.gguf"));
  ASSERT_TRUE(g.ok()) << g.error();
  Expected<io::TensorView> v = g->tensor("w");
  ASSERT_FALSE(v.ok());
  expectContains(v.error(), {"unsupported tensor type 19 (IQ1_S)", "'w'",
                             "Q4_K", "IQ4_XS"});
}

} // namespace
} // namespace hyc::models::test
