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
  /// Last-minute changes to the manifest before it is written.
  std::function<void(nlohmann::json &)> edit_manifest;
};

/// Writes a stories260K artifact into `dir`; false with `error` set when
/// the shared model files cannot be read.
bool write_stories_artifact(const std::string &dir,
                            const StoriesArtifactOptions &options,
                            std::string *error);

/// The fixture library paths (set by CMake).
std::string fixture_model_library();
std::string bad_abi_model_library();
std::string standalone_executable();

} // namespace hyrt_test
