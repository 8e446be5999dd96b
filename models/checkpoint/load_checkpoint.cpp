// load_checkpoint: detects the checkpoint format (Hugging Face directory,
// GGUF, llama2.c .bin) and hands the path to that format's loader.
#include "models/checkpoint/model_spec.h"
#include "models/checkpoint/weight_source.h"
#include "models/io/mapped_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

namespace hyc::models {

namespace {

namespace fs = std::filesystem;

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool hasGgufMagic(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

} // namespace

Expected<Checkpoint> load_checkpoint(const std::string &path,
                                     const LoadOptions &options) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec))
    return Error(path + ": no such file or directory");
  if (fs::is_directory(p, ec)) {
    if (!fs::exists(p / "config.json", ec))
      return Error(path + ": directory has no config.json (expected a "
                          "Hugging Face checkpoint directory)");
    return detail::load_hf(path, options);
  }
  // Reading the magic of a FIFO would wait for a writer forever, and a
  // device such as /dev/zero never ends: only regular files are read.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error(path + ": is " + io::non_regular_kind(st.st_mode) +
                 ", expected a regular file (GGUF or llama2.c .bin) or a "
                 "Hugging Face checkpoint directory");
  if (hasGgufMagic(path))
    return detail::load_gguf(path, options);
  const std::string name = p.filename().string();
  if (name == "config.json" || endsWith(name, ".safetensors") ||
      endsWith(name, ".safetensors.index.json")) {
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    return detail::load_hf(dir.string(), options);
  }
  Expected<Checkpoint> ckpt = detail::load_llama2c(path, options);
  if (!ckpt)
    return Error(ckpt.error() +
                 " (read as a llama2.c .bin: the file is neither GGUF nor "
                 "part of a Hugging Face directory)");
  return ckpt;
}

} // namespace hyc::models
