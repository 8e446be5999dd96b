// Pieces shared by the hyrt commands (see cli_common.h).
#include "common.h"

#include <cctype>
#include <ostream>
#include <sstream>

namespace hyrt::cli {

Status open_session(const std::string &dir, const ArtifactOptions &artifact,
                    EngineOptions engine, int64_t sequences, Session *out) {
  if (Status s = Artifact::open(dir, artifact, &out->artifact); !s.ok())
    return s;
  if (sequences > 0 && engine.num_pages == 0 && engine.page_size > 0) {
    const int64_t len = out->artifact->manifest().limits.max_seq_len;
    engine.num_pages =
        sequences * ((len + engine.page_size - 1) / engine.page_size);
  }
  return Engine::create(out->artifact.get(), engine, &out->engine);
}

namespace {

bool is_blank(const std::string &line) {
  for (char c : line)
    if (!std::isspace(static_cast<unsigned char>(c)))
      return false;
  return true;
}

} // namespace

std::vector<std::string> split_paragraphs(const std::string &text) {
  std::vector<std::string> paragraphs;
  std::istringstream in(text);
  std::string line, current;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (is_blank(line)) {
      if (!current.empty())
        paragraphs.push_back(std::move(current));
      current.clear();
    } else {
      current += (current.empty() ? "" : "\n") + line;
    }
  }
  if (!current.empty())
    paragraphs.push_back(std::move(current));
  return paragraphs;
}

std::vector<std::string> args_after_command(int argc, char **argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  return args;
}

int usage_error(std::ostream &err, const std::string &command,
                const std::string &message, const std::string &usage) {
  err << command << ": " << message << "\n" << usage;
  err.flush();
  return kExitUsage;
}

int runtime_error(std::ostream &err, const std::string &command,
                  const std::string &message) {
  err << command << ": " << message << "\n";
  err.flush();
  return kExitError;
}

} // namespace hyrt::cli
