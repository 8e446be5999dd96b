// Pieces shared by the hyrt commands (private to libhyrt): loading an
// artifact plus engine, and the exit-code convention.
#pragma once

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/engine.h"

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace hyrt::cli {

constexpr int kExitOk = 0;
constexpr int kExitError = 1; ///< runtime error, message on stderr
constexpr int kExitUsage = 2; ///< bad flags or values, usage on stderr

/// An opened artifact and an engine over it.
struct Session {
  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Engine> engine;
};

/// Opens the artifact in `dir` and creates its engine. With sequences > 0
/// and engine.num_pages == 0 the KV pool is sized for that many sequences
/// of max_seq_len (instead of max_seqs).
Status open_session(const std::string &dir, const ArtifactOptions &artifact,
                    EngineOptions engine, int64_t sequences, Session *out);

/// Paragraphs of `text`: runs of non-blank lines joined by '\n' (what
/// `hyc perplexity` scores and `hyc calibrate` samples).
std::vector<std::string> split_paragraphs(const std::string &text);

/// argv[1..argc) as strings (argv[0], the command name, is skipped).
std::vector<std::string> args_after_command(int argc, char **argv);

/// Prints "<command>: <message>" and the usage text; returns kExitUsage.
int usage_error(std::ostream &err, const std::string &command,
                const std::string &message, const std::string &usage);

/// Prints "<command>: <message>"; returns kExitError.
int runtime_error(std::ostream &err, const std::string &command,
                  const std::string &message);

} // namespace hyrt::cli
