// A compiled artifact that was damaged after `hyc compile` is refused by
// `hyc run` with a message naming what does not match (the library's own
// description against manifest.json, the ELF headers, the weights'
// checksums), and the generated entry points refuse a step past their
// compiled bounds when handed one directly, bypassing the engine's checks.
#include "test/e2e/e2e_util.h"

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/kv_cache.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace hyc::e2e {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

#define REQUIRE_SHARED()                                                       \
  if (!haveShared())                                                           \
  GTEST_SKIP() << "../shared/models is absent: real-model e2e test skipped"

const std::vector<std::string> kSmall = {"--max-seq-len", "64", "--max-batch-tokens",
                                         "16", "--max-seqs", "2"};
const std::vector<std::string> kLarge = {"--max-seq-len", "256", "--max-batch-tokens",
                                         "64"};

std::string stories() { return sharedDir() + "/models/stories260K/stories260K.bin"; }

/// A fresh copy of the small artifact, to damage.
std::string copyOfSmall() {
  static int n = 0;
  const std::string dir = tempDir() + "/damaged" + std::to_string(n++);
  fs::copy(compileOnce(stories(), kSmall), dir, fs::copy_options::recursive);
  return dir;
}

CommandResult run(const std::string &dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run", dir, "--prompt-ids", "1,400,3", "-n", "4",
                                   "--no-stats"};
  args.insert(args.end(), extra.begin(), extra.end());
  return runHyc(args);
}

void editManifest(const std::string &dir, const std::function<void(json &)> &edit) {
  json m = json::parse(readFile(dir + "/manifest.json"));
  edit(m);
  std::ofstream(dir + "/manifest.json", std::ios::trunc) << m.dump(2);
}

#define EXPECT_REFUSED(r, text)                                                \
  do {                                                                         \
    EXPECT_EQ((r).exit_code, 1) << (r).err;                                    \
    EXPECT_NE((r).err.find(text), std::string::npos) << (r).err;               \
  } while (0)

TEST(ArtifactIntegrity, IntactCopyRuns) {
  REQUIRE_SHARED();
  const CommandResult r = run(copyOfSmall());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(ArtifactIntegrity, TruncatedLibraryIsRefused) {
  REQUIRE_SHARED();
  const std::string dir = copyOfSmall();
  fs::resize_file(dir + "/model.so", fs::file_size(dir + "/model.so") / 2);
  EXPECT_REFUSED(run(dir), "(truncated or damaged? recompile the artifact)");
}

TEST(ArtifactIntegrity, LibraryOfAnotherArtifactIsRefused) {
  REQUIRE_SHARED();
  const std::string dir = copyOfSmall();
  fs::copy_file(compileOnce(stories(), kLarge) + "/model.so", dir + "/model.so",
                fs::copy_options::overwrite_existing);
  EXPECT_REFUSED(run(dir), "manifest.json limits.max_seq_len is 64 but model.so was "
                           "compiled for 256");
}

TEST(ArtifactIntegrity, EditedManifestIsRefused) {
  REQUIRE_SHARED();
  struct Case {
    std::function<void(json &)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](json &m) { m["limits"]["max_batch_tokens"] = 128; },
       "manifest.json limits.max_batch_tokens is 128 but model.so was compiled for 16"},
      {[](json &m) { m["kv_cache"]["num_layers"] = 4; },
       "manifest.json kv_cache.num_layers is 4 but model.so was compiled for 5"},
      {[](json &m) { m["entry_points"]["decode"] = "hyc_extend_v0"; },
       "manifest.json entry_points.decode is \"hyc_extend_v0\" but model.so was "
       "compiled for \"hyc_decode_v0\""},
      {[](json &m) { std::swap(m["weights"]["tensors"][0], m["weights"]["tensors"][1]); },
       "manifest.json weights.tensors[0].name is \"model.layers.0.input_layernorm."
       "weight\" but model.so was compiled for \"model.embed_tokens.weight\""},
      {[](json &m) { m["variants"][0]["arena_bytes"] = 4096; },
       "manifest.json variants[0].arena_bytes is 4096 but model.so was compiled for "},
      {[](json &m) { m["weights"]["tensors"][2]["shape"] = {32, 128}; },
       ".shape is [32,128] but model.so was compiled for [64,64]"},
  };
  for (const Case &c : cases) {
    const std::string dir = copyOfSmall();
    editManifest(dir, c.edit);
    EXPECT_REFUSED(run(dir), c.message);
  }
}

TEST(ArtifactIntegrity, FlippedWeightByteIsFoundUnlessNoVerify) {
  REQUIRE_SHARED();
  const std::string dir = copyOfSmall();
  const json m = json::parse(readFile(dir + "/manifest.json"));
  const json &t = m["weights"]["tensors"][2];
  {
    std::fstream f(dir + "/weights.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(t["offset"].get<int64_t>() + 7);
    const char c = char(f.get());
    f.seekp(t["offset"].get<int64_t>() + 7);
    f.put(char(c ^ 1));
  }
  EXPECT_REFUSED(run(dir), "/weights.bin: tensor " + t["name"].get<std::string>() +
                               " (offset " + std::to_string(t["offset"].get<int64_t>()) +
                               ", " + std::to_string(t["nbytes"].get<int64_t>()) +
                               " bytes) has xxh3 ");
  EXPECT_REFUSED(run(dir), ", expected " + t["xxh3"].get<std::string>());
  const CommandResult r = run(dir, {"--no-verify"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

/// A step for the small artifact's KV geometry, built by the runtime.
struct Step {
  hyrt::KvCacheManager cache;
  hyrt::StepBatch batch;
  /// Sequences of `lengths` new tokens each, after `prefix` cached ones.
  void build(const std::vector<int64_t> &lengths, int64_t prefix = 0) {
    hyrt::KvCacheConfig c;
    c.num_layers = 5;
    c.num_kv_heads = 4;
    c.k_head_dim = c.v_head_dim = 8;
    c.page_size = 16;
    c.num_pages = 64;
    c.max_pages_per_seq = 16;
    ASSERT_TRUE(cache.init(c).ok());
    std::vector<hyrt::SeqChunk> chunks;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (prefix) {
        ASSERT_TRUE(cache.allocate(int64_t(i), prefix).ok());
        ASSERT_TRUE(cache.advance(int64_t(i), prefix).ok());
      }
      chunks.push_back({int64_t(i), std::vector<int32_t>(size_t(lengths[i]), 5)});
    }
    ASSERT_TRUE(batch.build(cache, chunks, 512, /*all_logits=*/false).ok());
  }
};

TEST(ArtifactIntegrity, EntryPointsRefuseStepsPastTheCompiledBounds) {
  REQUIRE_SHARED();
  std::unique_ptr<hyrt::Artifact> art;
  ASSERT_TRUE(hyrt::Artifact::open(compileOnce(stories(), kSmall), {}, &art).ok());
  std::vector<char> storage(size_t(art->arena_bytes()) + 64);
  void *arena = storage.data() + (64 - uintptr_t(storage.data()) % 64) % 64;
  auto call = [&](Step &s, bool decode) {
    return (decode ? art->decode_fn() : art->extend_fn())(s.batch.abi(), s.cache.view(),
                                                          art->weights(), arena);
  };
  {
    Step s; // at the bounds: fine
    s.build({16});
    EXPECT_EQ(call(s, false), HYRT_STEP_OK);
  }
  {
    Step s; // 17 > max_batch_tokens 16
    s.build({17});
    EXPECT_EQ(call(s, false), HYRT_STEP_TOO_MANY_TOKENS);
  }
  {
    Step s; // 3 sequences > max_seqs 2
    s.build({1, 1, 1});
    EXPECT_EQ(call(s, true), HYRT_STEP_TOO_MANY_SEQS);
  }
  {
    Step s; // positions 60..64, max_seq_len 64
    s.build({5}, 60);
    EXPECT_EQ(call(s, false), HYRT_STEP_POSITION);
  }
  {
    Step s; // a token id past the vocabulary
    s.build({2});
    hyrt_step_v0 step = *s.batch.abi();
    const int32_t tokens[2] = {5, 512};
    step.tokens = tokens;
    EXPECT_EQ(art->extend_fn()(&step, s.cache.view(), art->weights(), arena),
              HYRT_STEP_TOKEN_ID);
  }
}

} // namespace
} // namespace hyc::e2e
