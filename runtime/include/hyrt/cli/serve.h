// hyrt/cli/serve.h - `hyc serve`, the OpenAI-compatible HTTP server, as a
// library function (libhyrt_serve).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

/// `hyc serve ART [flags]`; argv as hyrt_cli_run. Returns the exit code.
extern "C" int hyrt_cli_serve(int argc, char **argv);

namespace hyrt {

/// `serve` with explicit streams; `args` follow the command name:
///   ART [--host H] [--port N] [--api-key K] [--model-name NAME]
///       [--page-size N] [--kv-pages N] [--http-threads N] [--no-mixed-steps]
/// Serves /v1/completions, /v1/chat/completions, /v1/models, /health and
/// /metrics until SIGINT or SIGTERM.
int cli_serve(const std::vector<std::string> &args, std::ostream &out,
              std::ostream &err);

/// Where ART is among `args` (as cli_serve takes them) as its flag parser
/// reads them: the index, or -1 when they do not parse or name no ART (then
/// cli_serve says why). The hyc driver resolves a checkpoint there.
int cli_serve_artifact_index(const std::vector<std::string> &args);

} // namespace hyrt
