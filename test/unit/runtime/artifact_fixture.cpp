// Builds stories260K test artifacts (see artifact_fixture.h).
#include "artifact_fixture.h"

#include "hyrt/abi.h"
#include "hyrt/artifact/artifact.h"
#include "hyrt/text/tokenizer.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hyrt_test {

namespace fs = std::filesystem;

std::string stories_dir() {
  return std::string(HYC_SHARED_DIR) + "/models/stories260K";
}

bool have_stories() {
  return fs::exists(stories_dir() + "/stories260K.bin") &&
         fs::exists(stories_dir() + "/tok512.bin");
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fixture_model_library() { return HYRT_TEST_MODEL_SO; }
std::string bad_abi_model_library() { return HYRT_TEST_BAD_ABI_SO; }
std::string no_description_model_library() { return HYRT_TEST_NO_DESC_SO; }
std::string standalone_executable() { return HYRT_TEST_STANDALONE_EXE; }

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") +
                        "/hyrt_engine_test.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()))
    path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty())
    fs::remove_all(path_, ec);
}

namespace {

/// A tensor of the llama2.c file: name, shape, float offset in the file.
struct Source {
  std::string name;
  std::vector<int64_t> shape;
  int64_t first = 0; // index into the float data after the header
};

} // namespace

bool write_stories_artifact(const std::string &dir,
                            const StoriesArtifactOptions &options,
                            std::string *error) {
  const std::string bin = read_file(stories_dir() + "/stories260K.bin");
  if (bin.size() < 28) {
    *error = "cannot read " + stories_dir() + "/stories260K.bin";
    return false;
  }
  int32_t hdr[7];
  std::memcpy(hdr, bin.data(), sizeof(hdr));
  const int64_t D = hdr[0], F = hdr[1], L = hdr[2], H = hdr[3], Hkv = hdr[4],
                V = hdr[5], hd = D / H, kv = Hkv * hd;
  const char *data = bin.data() + 28;

  // Offsets of the stacked llama2.c arrays, in floats.
  int64_t at = 0;
  auto next = [&at](int64_t n) {
    const int64_t first = at;
    at += n;
    return first;
  };
  const int64_t emb = next(V * D), rms_att = next(L * D), wq = next(L * D * D),
                wk = next(L * kv * D), wv = next(L * kv * D),
                wo = next(L * D * D), rms_ffn = next(L * D),
                w1 = next(L * F * D), w2 = next(L * D * F),
                w3 = next(L * F * D), rms_final = next(D);
  if (int64_t(bin.size()) < 28 + at * 4) {
    *error = "stories260K.bin is shorter than its header implies";
    return false;
  }
  std::vector<Source> tensors = {{"model.embed_tokens.weight", {V, D}, emb}};
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    tensors.push_back({p + "input_layernorm.weight", {D}, rms_att + l * D});
    tensors.push_back({p + "self_attn.q_proj.weight", {D, D}, wq + l * D * D});
    tensors.push_back({p + "self_attn.k_proj.weight", {kv, D}, wk + l * kv * D});
    tensors.push_back({p + "self_attn.v_proj.weight", {kv, D}, wv + l * kv * D});
    tensors.push_back({p + "self_attn.o_proj.weight", {D, D}, wo + l * D * D});
    tensors.push_back(
        {p + "post_attention_layernorm.weight", {D}, rms_ffn + l * D});
    tensors.push_back({p + "mlp.gate_proj.weight", {F, D}, w1 + l * F * D});
    tensors.push_back({p + "mlp.down_proj.weight", {D, F}, w2 + l * D * F});
    tensors.push_back({p + "mlp.up_proj.weight", {F, D}, w3 + l * F * D});
  }
  tensors.push_back({"model.norm.weight", {D}, rms_final});

  nlohmann::json list = nlohmann::json::array();
  std::string weights;
  for (const Source &t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    weights.resize((weights.size() + 63) / 64 * 64, '\0');
    list.push_back({{"name", t.name},
                    {"dtype", "f32"},
                    {"shape", t.shape},
                    {"offset", weights.size()},
                    {"nbytes", n * 4},
                    {"xxh3", hyrt::tensor_hash(data + t.first * 4, size_t(n * 4))}});
    weights.append(data + t.first * 4, size_t(n * 4));
  }
  std::ofstream(dir + "/weights.bin", std::ios::binary) << weights;

  nlohmann::json m = {
      {"format", "hyc-artifact"},
      {"abi_version", HYRT_ABI_VERSION},
      {"target", "reference"},
      {"cpu_features", {"sse2"}},
      {"library", "model.so"},
      {"entry_points", {{"extend", "hyc_extend_v0"}, {"decode", "hyc_decode_v0"}}},
      {"arena_bytes", 4096},
      {"limits",
       {{"max_seq_len", options.max_seq_len},
        {"max_batch_tokens", options.max_batch_tokens},
        {"max_seqs", options.max_seqs}}},
      {"model",
       {{"arch", "llama"},
        {"source", stories_dir() + "/stories260K.bin"},
        {"vocab_size", V},
        {"hidden_size", D},
        {"num_layers", L},
        {"num_heads", H},
        {"num_kv_heads", Hkv},
        {"head_dim", hd},
        {"bos_token_id", 1},
        {"eos_token_id", 2}}},
      {"kv_cache",
       {{"num_layers", L},
        {"num_kv_heads", Hkv},
        {"k_head_dim", hd},
        {"v_head_dim", hd},
        {"dtype", "f32"}}},
      {"weights", {{"file", "weights.bin"}, {"tensors", list}}},
  };
  if (options.with_tokenizer) {
    hyrt::TokenizerData td;
    hyrt::Tokenizer tok;
    if (!hyrt::read_llama2c_tokenizer(stories_dir() + "/tok512.bin", V, &td)
             .ok() ||
        !tok.init(td).ok() || !tok.save(dir + "/tokenizer.hytk").ok()) {
      *error = "cannot convert tok512.bin";
      return false;
    }
    m["tokenizer"] = "tokenizer.hytk";
  }
  if (options.edit_manifest)
    options.edit_manifest(m);
  // The description the compiler would link in; a manifest edited past
  // parsing keeps the placeholder (the loader stops at the manifest).
  std::string description = "@@HYRT_FIXTURE_DESCRIPTION@@";
  hyrt::Manifest parsed;
  if (hyrt::parse_manifest(m.dump(), "manifest.json", &parsed).ok())
    description = hyrt::description_json(hyrt::describe_variant(parsed, 0));
  if (options.tamper_manifest)
    options.tamper_manifest(m);
  std::ofstream(dir + "/manifest.json") << m.dump(2);

  const std::string lib = options.library_source.empty()
                              ? fixture_model_library()
                              : options.library_source;
  if (!install_fixture_library(lib, dir + "/model.so", description, error))
    return false;
  return !options.with_standalone ||
         install_fixture_library(standalone_executable(), dir + "/model", description,
                                 error);
}

bool install_fixture_library(const std::string &src, const std::string &dst,
                             const std::string &description, std::string *error) {
  std::string bytes = read_file(src);
  if (bytes.empty()) {
    *error = "cannot read " + src;
    return false;
  }
  // Libraries without the placeholder (bad_abi_model) are copied as they are.
  const std::string marker = "@@HYRT_FIXTURE_DESCRIPTION@@";
  constexpr size_t kCapacity = size_t(1) << 16; // stories_model.cpp
  if (description.size() >= kCapacity) {
    *error = "fixture description of " + std::to_string(description.size()) +
             " bytes does not fit the placeholder";
    return false;
  }
  for (size_t at = bytes.find(marker); at != std::string::npos;
       at = bytes.find(marker, at + 1)) {
    if (bytes.size() - at < kCapacity) {
      *error = src + ": placeholder too close to the end of the file";
      return false;
    }
    std::memset(&bytes[at], 0, kCapacity);
    std::memcpy(&bytes[at], description.data(), description.size());
  }
  {
    std::ofstream out(dst, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out) {
      *error = "cannot write " + dst;
      return false;
    }
  }
  fs::permissions(dst, fs::perms::owner_all | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  return true;
}

} // namespace hyrt_test
