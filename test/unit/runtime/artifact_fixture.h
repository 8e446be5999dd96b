// Test helpers that build hyc artifact directories without the compiler:
// stories260K weights (llama2.c checkpoint) re-laid out as weights.bin with
// a manifest.json, tok512 as tokenizer.hytk, and the fixture model library
// (fixtures/stories_model.cpp) as model.so.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hyrt_test {

/// ../shared/models/stories260K (from HYC_SHARED_DIR).
std::string stories_dir();
/// True when the stories260K checkpoint and tokenizer are present.
bool have_stories();
/// Contents of a whole file ("" when unreadable).
std::string read_file(const std::string &path);

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents on
/// destruction.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

/// What write_stories_artifact writes.
struct StoriesArtifactOptions {
  int64_t max_seq_len = 512;
  int64_t max_batch_tokens = 64;
  int64_t max_seqs = 8;
  bool with_tokenizer = true;
  /// Library copied in as model.so (default: the fixture model).
  std::string library_source;
  /// Changes to the manifest the library's description follows (as if
  /// the artifact had been compiled that way).
  std::function<void(nlohmann::json &)> edit_manifest;
  /// Changes to manifest.json after the library got its description (an
  /// edited manifest, which the loader must refuse).
  std::function<void(nlohmann::json &)> tamper_manifest;
  /// Also write the standalone executable as `model`, with the description.
  bool with_standalone = false;
};

/// Writes a stories260K artifact into `dir`; false with `error` set when
/// the shared model files cannot be read.
bool write_stories_artifact(const std::string &dir,
                            const StoriesArtifactOptions &options,
                            std::string *error);

/// Copies library `src` to `dst` with `description` written over the
/// fixture's placeholder hyc_artifact_desc_v0; false with `error` when the
/// placeholder is missing or too small.
bool install_fixture_library(const std::string &src, const std::string &dst,
                             const std::string &description, std::string *error);

/// The fixture library paths (set by CMake).
std::string fixture_model_library();
std::string bad_abi_model_library();
std::string no_description_model_library();
std::string standalone_executable();

} // namespace hyrt_test
