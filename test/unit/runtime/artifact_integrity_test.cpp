// A damaged artifact is refused with a message naming what does not match:
// a truncated or foreign model.so, a manifest edited after compilation
// (its library's own description says otherwise), a flipped byte in
// weights.bin; and the entry points refuse a step past their compiled
// bounds when handed one directly.
#include "artifact_open.h"

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/kv_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

using hyrt_test::StoriesArtifactOptions;
using hyrt_test::TempDir;
using hyrt_test::open_error;
using json = nlohmann::json;

/// The manifest edited after the library was compiled.
StoriesArtifactOptions tampered(std::function<void(json &)> edit) {
  StoriesArtifactOptions o;
  o.tamper_manifest = std::move(edit);
  return o;
}

#define EXPECT_HAS(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

TEST(ArtifactIntegrity, TruncatedLibraryIsRefusedBeforeDlopen) {
  REQUIRE_STORIES();
  for (double keep : {0.5, 0.9}) {
    const std::string msg = open_error({}, [keep](const TempDir &d) {
      namespace fs = std::filesystem;
      fs::resize_file(d.file("model.so"),
                      uintmax_t(double(fs::file_size(d.file("model.so"))) * keep));
    });
    EXPECT_HAS(msg, "/model.so: ");
    EXPECT_HAS(msg, "lie");
    EXPECT_HAS(msg, "outside the file of ");
    EXPECT_HAS(msg, "(truncated or damaged? recompile the artifact)");
  }
  // Not ELF at all, and ELF for another machine.
  std::string msg = open_error({}, [](const TempDir &d) {
    std::ofstream(d.file("model.so"), std::ios::trunc) << std::string(200, 'x');
  });
  EXPECT_HAS(msg, "/model.so: not an ELF file (200 bytes, no ELF header)");
  msg = open_error({}, [](const TempDir &d) {
    std::fstream f(d.file("model.so"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(18); // e_machine
    f.put(char(183)); // EM_AARCH64
    f.put(0);
  });
  EXPECT_HAS(msg, "/model.so: ELF file for another machine (expected 64-bit little-endian "
                  "x86-64, found class 2, machine 183)");
}

TEST(ArtifactIntegrity, LibraryFromAnotherArtifactIsRefused) {
  REQUIRE_STORIES();
  TempDir other;
  std::string error;
  StoriesArtifactOptions o;
  o.max_batch_tokens = 128;
  ASSERT_TRUE(hyrt_test::write_stories_artifact(other.path(), o, &error)) << error;
  std::string msg = open_error({}, [&](const TempDir &d) {
    std::filesystem::copy_file(other.file("model.so"), d.file("model.so"),
                               std::filesystem::copy_options::overwrite_existing);
  });
  EXPECT_HAS(msg, "manifest.json limits.max_batch_tokens is 64 but model.so was "
                  "compiled for 128");

  // A library compiled for a KV cache of another dtype.
  StoriesArtifactOptions bf16;
  bf16.edit_manifest = [](json &m) { m["kv_cache"]["dtype"] = "bf16"; };
  TempDir third;
  ASSERT_TRUE(hyrt_test::write_stories_artifact(third.path(), bf16, &error)) << error;
  msg = open_error({}, [&](const TempDir &d) {
    std::filesystem::copy_file(third.file("model.so"), d.file("model.so"),
                               std::filesystem::copy_options::overwrite_existing);
  });
  EXPECT_HAS(msg, "manifest.json kv_cache.dtype is \"f32\" but model.so was compiled "
                  "for \"bf16\"");
}

TEST(ArtifactIntegrity, LibraryWithoutDescriptionIsRefused) {
  REQUIRE_STORIES();
  StoriesArtifactOptions o;
  o.library_source = hyrt_test::no_description_model_library();
  EXPECT_HAS(open_error(o), "/model.so: no hyc_artifact_desc_v0 (compiled by an older "
                            "hyc, or not a hyc artifact): recompile the artifact with "
                            "this hyc");
  // The fixture library as built, its placeholder not replaced.
  o.library_source.clear();
  EXPECT_HAS(open_error(o,
                        [](const TempDir &d) {
                          std::filesystem::copy_file(
                              hyrt_test::fixture_model_library(), d.file("model.so"),
                              std::filesystem::copy_options::overwrite_existing);
                        }),
             "/model.so: hyc_artifact_desc_v0 is malformed (");
}

TEST(ArtifactIntegrity, EditedManifestFieldsAreRefused) {
  REQUIRE_STORIES();
  struct Case {
    std::function<void(json &)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](json &m) { m["limits"]["max_batch_tokens"] = 128; },
       "manifest.json limits.max_batch_tokens is 128 but model.so was compiled for 64"},
      {[](json &m) { m["limits"]["max_seq_len"] = 4096; },
       "manifest.json limits.max_seq_len is 4096 but model.so was compiled for 512"},
      {[](json &m) { m["limits"]["max_seqs"] = 64; },
       "manifest.json limits.max_seqs is 64 but model.so was compiled for 8"},
      {[](json &m) { m["kv_cache"]["num_layers"] = 4; },
       "manifest.json kv_cache.num_layers is 4 but model.so was compiled for 5"},
      {[](json &m) { m["kv_cache"]["num_kv_heads"] = 8; },
       "manifest.json kv_cache.num_kv_heads is 8 but model.so was compiled for 4"},
      {[](json &m) { m["model"]["vocab_size"] = 1024; },
       "manifest.json model.vocab_size is 1024 but model.so was compiled for 512"},
      {[](json &m) { m["entry_points"]["extend"] = "hyc_decode_v0"; },
       "manifest.json entry_points.extend is \"hyc_decode_v0\" but model.so was "
       "compiled for \"hyc_extend_v0\""},
      // Fewer features than the code needs: it would be loaded on a CPU
      // that cannot run it (SIGILL).
      {[](json &m) { m["cpu_features"] = json::array(); },
       "manifest.json cpu_features is \"[]\" but model.so was compiled for \"[sse2]\""},
      {[](json &m) { m["arena_bytes"] = 64; },
       "manifest.json arena_bytes is 64 but model.so was compiled for 4096"},
      // Two tensors swapped in the table (offsets and all).
      {[](json &m) { std::swap(m["weights"]["tensors"][2], m["weights"]["tensors"][3]); },
       "manifest.json weights.tensors[2].name is \"model.layers.0.self_attn.k_proj."
       "weight\" but model.so was compiled for \"model.layers.0.self_attn.q_proj.weight\""},
      {[](json &m) { m["weights"]["tensors"][3]["name"] = "model.layers.0.self_attn.kk"; },
       "manifest.json weights.tensors[3].name is \"model.layers.0.self_attn.kk\" but "
       "model.so was compiled for \"model.layers.0.self_attn.k_proj.weight\""},
      // Same byte count, another shape.
      {[](json &m) { m["weights"]["tensors"][3]["shape"] = {64, 32}; },
       "manifest.json weights.tensors[3] (model.layers.0.self_attn.k_proj.weight).shape "
       "is [64,32] but model.so was compiled for [32,64]"},
      {[](json &m) { m["weights"]["tensors"][1]["dtype"] = "i32"; },
       "manifest.json weights.tensors[1] (model.layers.0.input_layernorm.weight).dtype "
       "is \"i32\" but model.so was compiled for \"f32\""},
      {[](json &m) { m["weights"]["tensors"].erase(46); },
       "manifest.json weights.tensors count is 46 but model.so was compiled for 47"},
      {[](json &m) { m["weights"]["tensors"][5]["xxh3"] = "0123456789abcdef"; },
       "(model.layers.0.self_attn.o_proj.weight).xxh3 is \"0123456789abcdef\" but "
       "model.so was compiled for \""},
  };
  for (const Case &c : cases) {
    const std::string msg = open_error(tampered(c.edit));
    EXPECT_HAS(msg, c.message);
  }
}

TEST(ArtifactIntegrity, FlippedWeightByteIsFoundUnlessNoVerify) {
  REQUIRE_STORIES();
  auto flip = [](const TempDir &d) {
    // Inside model.layers.0.self_attn.q_proj.weight (offset 131328).
    std::fstream f(d.file("weights.bin"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(131328 + 1000);
    const char c = char(f.get());
    f.seekp(131328 + 1000);
    f.put(char(c ^ 0x10));
  };
  for (bool mmap : {false, true}) {
    hyrt::ArtifactOptions ao;
    ao.mmap_weights = mmap;
    const std::string msg = open_error({}, flip, ao);
    EXPECT_HAS(msg, "/weights.bin: tensor model.layers.0.self_attn.q_proj.weight (offset "
                    "131328, 16384 bytes) has xxh3 ");
    EXPECT_HAS(msg, " (manifest.json and the library): the file is damaged (--no-verify "
                    "skips this check)");
    ao.verify_weights = false;
    EXPECT_EQ(open_error({}, flip, ao), "");
  }
}

/// A valid extend step of `tokens` (fresh sequences of `per_seq` tokens
/// each) built by the runtime, for the entry point to be called directly.
struct DirectStep {
  hyrt::KvCacheManager cache;
  hyrt::StepBatch batch;
  hyrt::Status build(int64_t tokens, int64_t per_seq) {
    hyrt::KvCacheConfig c;
    c.num_layers = 5;
    c.num_kv_heads = 4;
    c.k_head_dim = c.v_head_dim = 8;
    c.page_size = 16;
    c.num_pages = 64;
    c.max_pages_per_seq = 16;
    if (hyrt::Status s = cache.init(c); !s.ok())
      return s;
    std::vector<hyrt::SeqChunk> chunks;
    for (int64_t t = 0; t < tokens; t += per_seq)
      chunks.push_back({int64_t(chunks.size()),
                        std::vector<int32_t>(size_t(std::min(per_seq, tokens - t)), 1)});
    return batch.build(cache, chunks, 512);
  }
};

TEST(ArtifactIntegrity, EntryPointRefusesStepsPastItsBounds) {
  REQUIRE_STORIES();
  TempDir dir;
  std::string error;
  ASSERT_TRUE(hyrt_test::write_stories_artifact(dir.path(), {}, &error)) << error;
  std::unique_ptr<hyrt::Artifact> art;
  ASSERT_TRUE(hyrt::Artifact::open(dir.path(), {}, &art).ok());
  std::vector<char> arena_storage(size_t(art->arena_bytes()) + 64);
  void *arena = arena_storage.data() + (64 - uintptr_t(arena_storage.data()) % 64) % 64;
  auto run = [&](DirectStep &d, hyrt_step_v0 step, bool decode = false) {
    return (decode ? art->decode_fn() : art->extend_fn())(&step, d.cache.view(),
                                                          art->weights(), arena);
  };
  {
    DirectStep d;
    ASSERT_TRUE(d.build(64, 64).ok());
    EXPECT_EQ(run(d, *d.batch.abi()), HYRT_STEP_OK);
  }
  {
    DirectStep d; // the fixture's arena holds 64 tokens
    ASSERT_TRUE(d.build(65, 65).ok());
    EXPECT_EQ(run(d, *d.batch.abi()), HYRT_STEP_TOO_MANY_TOKENS);
  }
  DirectStep d;
  ASSERT_TRUE(d.build(4, 2).ok());
  hyrt_step_v0 s = *d.batch.abi();
  std::vector<int32_t> tokens(s.tokens, s.tokens + 4);
  tokens[3] = 512;
  s.tokens = tokens.data();
  EXPECT_EQ(run(d, s), HYRT_STEP_TOKEN_ID);
  s = *d.batch.abi();
  std::vector<int32_t> positions(s.positions, s.positions + 4);
  positions[1] = 7;
  s.positions = positions.data();
  EXPECT_EQ(run(d, s), HYRT_STEP_POSITION);
  s = *d.batch.abi();
  s.num_logit_rows = 5;
  EXPECT_EQ(run(d, s), HYRT_STEP_LOGIT_ROWS);
  s = *d.batch.abi();
  std::vector<int32_t> tables(s.block_tables, s.block_tables + 2 * s.max_pages_per_seq);
  tables[0] = 64; // past the pool
  s.block_tables = tables.data();
  EXPECT_EQ(run(d, s), HYRT_STEP_PAGES);
  s = *d.batch.abi();
  s.max_pages_per_seq = 0;
  EXPECT_EQ(run(d, s), HYRT_STEP_PAGES);
  s = *d.batch.abi();
  EXPECT_EQ(run(d, s, /*decode=*/true), HYRT_STEP_TOO_MANY_SEQS); // 2 tokens per sequence
  s = *d.batch.abi();
  s.tokens = nullptr;
  EXPECT_EQ(run(d, s), HYRT_STEP_NULL);
  hyrt_kv_cache_v0 kv = *d.cache.view();
  kv.num_layers = 4;
  s = *d.batch.abi();
  EXPECT_EQ(art->extend_fn()(&s, &kv, art->weights(), arena), HYRT_STEP_KV_CACHE);
  s = *d.batch.abi();
  EXPECT_EQ(run(d, s), HYRT_STEP_OK);
}

} // namespace

namespace {

// Found by fuzz_manifest: a number the compiler never writes where an
// integer belongs (nlohmann casts a float to int64 unchecked, undefined
// behaviour for 1e28) is a malformed description naming the field.
TEST(ArtifactDescription, NonIntegerNumbersAreMalformedNotCast) {
  const json good = {
      {"abi_version", 2},
      {"variant", "portable"},
      {"entry_points", {{"extend", "hyc_extend_v0"}, {"decode", "hyc_decode_v0"}}},
      {"limits", {{"max_seq_len", 16}, {"max_batch_tokens", 8}, {"max_seqs", 2}}},
      {"vocab_size", 8},
      {"arena_bytes", 1024},
      {"kv_cache",
       {{"num_layers", 1}, {"num_kv_heads", 1}, {"k_head_dim", 2}, {"v_head_dim", 2},
        {"dtype", "f32"}}},
      {"weights", json::array({{{"name", "w"}, {"dtype", "f32"}, {"shape", {8, 4}},
                                {"offset", 0}, {"nbytes", 128}, {"xxh3", "0"}}})}};
  hyrt::ArtifactDescription d;
  ASSERT_TRUE(hyrt::parse_description(good.dump(), "m.so", &d).ok());
  EXPECT_EQ(d.weights[0].nbytes, 128);
  auto parsed = [&](const std::function<void(json &)> &edit) {
    json j = good;
    edit(j);
    return hyrt::parse_description(j.dump(), "m.so", &d).message();
  };
  EXPECT_HAS(parsed([](json &j) { j["weights"][0]["offset"] = 1e28; }),
             "weights[].offset is 1e+28, expected an integer");
  EXPECT_HAS(parsed([](json &j) { j["arena_bytes"] = 2.5; }),
             "arena_bytes is 2.5, expected an integer");
  EXPECT_HAS(parsed([](json &j) { j["weights"][0]["shape"][1] = uint64_t(1) << 63; }),
             "weights[].shape[] = 9223372036854775808 does not fit int64");
  EXPECT_HAS(parsed([](json &j) { j["limits"]["max_seqs"] = "2"; }), "recompile the artifact");
}

} // namespace
