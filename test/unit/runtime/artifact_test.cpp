// Artifact loading: a good stories260K artifact (read and mmap modes), and
// every kind of broken artifact failing with a message that names the file
// and what was expected and found.
#include "artifact_open.h"

#include "hyrt/artifact/artifact.h"
#include "hyrt/artifact/cpu_features.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace {

using hyrt_test::StoriesArtifactOptions;
using hyrt_test::TempDir;
using hyrt_test::open_error;
using json = nlohmann::json;

StoriesArtifactOptions edited(std::function<void(json &)> edit) {
  StoriesArtifactOptions o;
  o.edit_manifest = std::move(edit);
  return o;
}

void check_loaded(const hyrt::Artifact &art) {
  const hyrt::Manifest &m = art.manifest();
  EXPECT_EQ(m.format, "hyc-artifact");
  EXPECT_EQ(m.target, "reference");
  EXPECT_EQ(m.model.vocab_size, 512);
  EXPECT_EQ(m.model.bos_token_id, 1);
  EXPECT_EQ(m.limits.max_seq_len, 512);
  EXPECT_EQ(m.kv_cache.num_kv_heads, 4);
  ASSERT_EQ(art.num_weights(), 47);
  EXPECT_NE(art.extend_fn(), nullptr);
  EXPECT_NE(art.decode_fn(), nullptr);
  // The library's hyc_arena_bytes (64 tokens x 1048 floats) beats the
  // manifest's 4096.
  EXPECT_EQ(art.arena_bytes(), 64 * (5 * 64 + 2 * 32 + 2 * 172) * 4);
  for (int64_t i = 0; i < art.num_weights(); ++i)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(art.weights()[i]) % 64, 0u) << i;
  // Tensor 0 is the embedding, the first floats after the 28-byte header;
  // the last is the final norm.
  const std::string bin =
      hyrt_test::read_file(hyrt_test::stories_dir() + "/stories260K.bin");
  EXPECT_EQ(std::memcmp(art.weights()[0], bin.data() + 28, 512 * 64 * 4), 0);
  const size_t final_norm = 28 + 4 * size_t(264128 - 2 * 512 * 4 - 64);
  EXPECT_EQ(std::memcmp(art.weights()[46], bin.data() + final_norm, 64 * 4), 0);
  ASSERT_NE(art.tokenizer(), nullptr);
  EXPECT_EQ(art.tokenizer()->vocab_size(), 512);
}

TEST(Artifact, OpensStoriesArtifact) {
  REQUIRE_STORIES();
  TempDir dir;
  std::string error;
  ASSERT_TRUE(hyrt_test::write_stories_artifact(dir.path(), {}, &error))
      << error;
  for (bool mmap : {false, true}) {
    hyrt::ArtifactOptions options;
    options.mmap_weights = mmap;
    std::unique_ptr<hyrt::Artifact> art;
    hyrt::Status s = hyrt::Artifact::open(dir.path(), options, &art);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(art->weights_mapped(), mmap);
    check_loaded(*art);
  }
}

TEST(Artifact, TokenizerIsOptional) {
  REQUIRE_STORIES();
  TempDir dir;
  std::string error;
  StoriesArtifactOptions o;
  o.with_tokenizer = false;
  ASSERT_TRUE(hyrt_test::write_stories_artifact(dir.path(), o, &error));
  std::unique_ptr<hyrt::Artifact> art;
  ASSERT_TRUE(hyrt::Artifact::open(dir.path(), {}, &art).ok());
  EXPECT_EQ(art->tokenizer(), nullptr);
}

TEST(Artifact, MissingDirectoryAndManifest) {
  std::unique_ptr<hyrt::Artifact> art;
  hyrt::Status s = hyrt::Artifact::open("/nonexistent/x.hyc", {}, &art);
  EXPECT_EQ(s.message(), "artifact directory /nonexistent/x.hyc not found");
  TempDir empty;
  s = hyrt::Artifact::open(empty.path(), {}, &art);
  EXPECT_EQ(s.message(),
            empty.path() + "/manifest.json: not found (not a hyc artifact?)");
}

TEST(Artifact, MalformedManifests) {
  REQUIRE_STORIES();
  auto write_text = [](const std::string &text) {
    return [text](const TempDir &d) {
      std::ofstream(d.file("manifest.json")) << text;
    };
  };
  std::string msg = open_error({}, write_text("{\"format\": "));
  EXPECT_NE(msg.find("manifest.json: invalid JSON"), std::string::npos) << msg;
  msg = open_error({}, write_text("[1, 2]"));
  EXPECT_NE(msg.find("expected a JSON object at top level"), std::string::npos)
      << msg;

  msg = open_error(edited([](json &m) { m["format"] = "gguf"; }));
  EXPECT_NE(msg.find("manifest.json: field 'format': expected "
                     "\"hyc-artifact\", found \"gguf\""),
            std::string::npos)
      << msg;
  // An artifact of an earlier ABI (its steps had no logit_rows).
  msg = open_error(edited([](json &m) { m["abi_version"] = 1; }));
  EXPECT_NE(msg.find("field 'abi_version': expected " + std::to_string(HYRT_ABI_VERSION) +
                     " (this runtime), found 1"),
            std::string::npos)
      << msg;
  // A tensor-parallel rank without the compile's identity (an artifact of
  // before identities) or with a malformed one.
  msg = open_error(edited([](json &m) { m["tensor_parallel"] = {{"rank", 0}, {"size", 2}}; }));
  EXPECT_NE(msg.find("field 'tensor_parallel.compile_id': missing (expected a string)"),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) {
    m["tensor_parallel"] = {{"rank", 0}, {"size", 2}, {"compile_id", "0123"}};
  }));
  EXPECT_NE(msg.find("field 'tensor_parallel.compile_id': expected 16 hex digits"),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) { m["limits"].erase("max_seq_len"); }));
  EXPECT_NE(msg.find("field 'limits.max_seq_len': missing"), std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) { m["limits"]["max_seqs"] = "8"; }));
  EXPECT_NE(msg.find("field 'limits.max_seqs': expected an integer, found "
                     "\"8\""),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) { m["limits"]["max_seqs"] = 0; }));
  EXPECT_NE(msg.find("expected an integer >= 1, found 0"), std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) { m["kv_cache"]["dtype"] = "f16"; }));
  EXPECT_NE(msg.find("field 'kv_cache.dtype': expected \"f32\", \"bf16\" or \"int8\" "
                     "(ABI v" + std::to_string(HYRT_ABI_VERSION) + "), found \"f16\""),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) { m["model"]["bos_token_id"] = 512; }));
  EXPECT_NE(msg.find("expected an id below vocab_size 512, found 512"),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) {
    m["weights"]["tensors"][3]["nbytes"] = 100;
  }));
  EXPECT_NE(msg.find("'weights.tensors[3] (model.layers.0.self_attn.k_proj."
                     "weight).nbytes': shape [32,64] of f32 needs 8192 bytes, "
                     "found 100"),
            std::string::npos)
      << msg;
  // Found by fuzz_manifest: a shape whose element count overflows int64
  // (signed overflow before the check) is refused naming it.
  msg = open_error(edited([](json &m) {
    m["weights"]["tensors"][3]["shape"] = {int64_t(1) << 40, int64_t(1) << 30};
  }));
  EXPECT_NE(msg.find("'weights.tensors[3] (model.layers.0.self_attn.k_proj.weight).shape': "
                     "[1099511627776,1073741824] has more elements than int64 counts"),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) {
    m["weights"]["tensors"][3]["shape"] = {int64_t(1) << 31, int64_t(1) << 31};
  }));
  EXPECT_NE(msg.find("has more bytes than int64 counts"), std::string::npos) << msg;
}

TEST(Artifact, CpuFeatureChecks) {
  REQUIRE_STORIES();
  std::string msg = open_error(
      edited([](json &m) { m["cpu_features"] = {"sse2", "warp_drive"}; }));
  EXPECT_NE(msg.find("this CPU can run none of the artifact's variants (reference "
                     "lacks warp_drive (unknown to this runtime)"),
            std::string::npos)
      << msg;
  if (!hyrt::host_has_cpu_feature("amx_tile")) {
    msg = open_error(
        edited([](json &m) { m["cpu_features"] = {"avx2", "amx_tile"}; }));
    EXPECT_NE(msg.find("reference lacks amx_tile"), std::string::npos) << msg;
    EXPECT_NE(msg.find("manifest.json"), std::string::npos) << msg;
  }
  hyrt::ArtifactOptions no_check;
  no_check.check_cpu_features = false;
  EXPECT_EQ(open_error(edited([](json &m) {
                         m["cpu_features"] = {"warp_drive"};
                       }),
                       {}, no_check),
            "");
}

TEST(Artifact, LibraryErrors) {
  REQUIRE_STORIES();
  std::string msg = open_error(
      {}, [](const TempDir &d) { std::filesystem::remove(d.file("model.so")); });
  EXPECT_NE(msg.find("/model.so: library named by manifest.json not found"),
            std::string::npos)
      << msg;
  msg = open_error({}, [](const TempDir &d) {
    std::ofstream(d.file("model.so")) << "not an ELF file";
  });
  EXPECT_NE(msg.find("/model.so: not an ELF file (15 bytes, no ELF header)"),
            std::string::npos)
      << msg;

  StoriesArtifactOptions bad_abi;
  bad_abi.library_source = hyrt_test::bad_abi_model_library();
  msg = open_error(bad_abi);
  // bad_abi_model exports HYRT_ABI_VERSION + 98.
  EXPECT_NE(msg.find("/model.so: hyc_abi_version: expected " +
                     std::to_string(HYRT_ABI_VERSION) + " (manifest.json and this runtime), found " +
                     std::to_string(HYRT_ABI_VERSION + 98)),
            std::string::npos)
      << msg;
  msg = open_error(edited(
      [](json &m) { m["entry_points"]["decode"] = "hyc_decode_v7"; }));
  EXPECT_NE(msg.find("/model.so: missing symbol hyc_decode_v7"),
            std::string::npos)
      << msg;
}

TEST(Artifact, WeightsErrors) {
  REQUIRE_STORIES();
  // 47 f32 tensors, all multiples of 64 bytes: 1,040,128 bytes.
  std::string msg = open_error({}, [](const TempDir &d) {
    std::filesystem::resize_file(d.file("weights.bin"), 1040128 - 4);
  });
  EXPECT_NE(msg.find("/weights.bin: tensor model.norm.weight at offset "
                     "1039872 + 256 bytes exceeds file size 1040124"),
            std::string::npos)
      << msg;
  msg = open_error(edited([](json &m) {
    m["weights"]["tensors"][1]["offset"] =
        m["weights"]["tensors"][1]["offset"].get<int64_t>() + 4;
  }));
  EXPECT_NE(msg.find("/weights.bin: tensor model.layers.0.input_layernorm."
                     "weight at offset 131076 is not 64-byte aligned"),
            std::string::npos)
      << msg;
  msg = open_error({}, [](const TempDir &d) {
    std::filesystem::remove(d.file("weights.bin"));
  });
  EXPECT_NE(msg.find("/weights.bin: cannot open: No such file"),
            std::string::npos)
      << msg;
}

TEST(Artifact, TokenizerErrors) {
  REQUIRE_STORIES();
  std::string msg = open_error({}, [](const TempDir &d) {
    std::filesystem::remove(d.file("tokenizer.hytk"));
  });
  EXPECT_NE(msg.find("/tokenizer.hytk: tokenizer named by manifest.json not "
                     "found"),
            std::string::npos)
      << msg;
  msg = open_error({}, [](const TempDir &d) {
    std::filesystem::resize_file(d.file("tokenizer.hytk"), 100);
  });
  EXPECT_NE(msg.find("/tokenizer.hytk: "), std::string::npos) << msg;
}

} // namespace
