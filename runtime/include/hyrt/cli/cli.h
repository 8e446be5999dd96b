// hyrt/cli/cli.h - the `hyc run` and `hyc perplexity` commands as library
// functions, shared by the hyc driver and standalone `--emit=exe` binaries.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

/// `hyc run ART [flags]`. argv[0] is the command name (skipped), then the
/// artifact directory and flags; see hyrt::cli_run. Writes to stdout/stderr
/// and returns the exit code.
extern "C" int hyrt_cli_run(int argc, char **argv);

/// `hyc perplexity ART --text FILE [flags]`, argv as hyrt_cli_run.
extern "C" int hyrt_cli_perplexity(int argc, char **argv);

/// `hyc calibrate ART --text FILE [--samples N] [--skip N] [-o OUT]`:
/// per-channel activation maxima of a calibration build, as JSON.
extern "C" int hyrt_cli_calibrate(int argc, char **argv);

/// `hyc tokenize DIR [--add-special] [--decode] [--chat FILE.json]`: text
/// <-> ids with a checkpoint's tokenizer, or a rendered chat's ids.
extern "C" int hyrt_cli_tokenize(int argc, char **argv);

namespace hyrt {

/// `tokenize` with explicit streams; `args` follow the command name. Reads
/// stdin byte for byte: text to encode, or ids with --decode. Returns 0, 1
/// on bad input or files (message on `err`), 2 on a usage error.
int cli_tokenize(const std::vector<std::string> &args, std::istream &in,
                 std::ostream &out, std::ostream &err);

/// `calibrate` with explicit streams; `args` follow the command name.
int cli_calibrate(const std::vector<std::string> &args, std::ostream &out,
                  std::ostream &err);

/// `run` with explicit streams. `args` are the arguments after the command
/// name:
///   ART [--prompt TEXT] [-n N] [--temperature T] [--top-k K] [--top-p P]
///       [--seed S] [--prompt-ids 1,417,93] [--logits-out FILE.npy]
///       [--mmap] [--no-verify] [--ignore-eos] [--page-size N] [--no-stats]
/// Prints the prompt's decoded pieces and the generated text to `out` as
/// tokens arrive (llama2.c style: the BOS piece is empty and the leading
/// space after it is dropped), then a newline; a stats line goes to `err`.
/// Generation stops at -n tokens (default 256), at EOS or BOS unless
/// --ignore-eos, or at the artifact's max_seq_len. Returns 0, 1 on a runtime
/// error (message on `err`), 2 on a usage error.
int cli_run(const std::vector<std::string> &args, std::ostream &out,
            std::ostream &err);

/// Where ART is among `args` (as cli_run takes them) as its flag parser
/// reads them: the index, or -1 when they do not parse or name no ART (then
/// cli_run says why). The hyc driver resolves a checkpoint there.
int cli_run_artifact_index(const std::vector<std::string> &args);

/// `run` for a standalone executable: the model is linked into the running
/// program (library "self") and the artifact files lie in `artifact_dir`;
/// `args` are the flags only (no ART).
int cli_run_standalone(const std::string &artifact_dir,
                       const std::vector<std::string> &args, std::ostream &out,
                       std::ostream &err);

/// `perplexity` with explicit streams. `args`:
///   ART --text FILE [--max-paragraphs N] [--mmap] [--no-verify]
/// Splits FILE into paragraphs at blank lines, scores each from BOS (the
/// NLL of every token given those before it; paragraphs longer than
/// max_seq_len are truncated, with a note), packing paragraphs into extend
/// steps of up to max_batch_tokens tokens, and prints the paragraph and
/// token counts, the mean NLL in nats per token and the perplexity.
int cli_perplexity(const std::vector<std::string> &args, std::ostream &out,
                   std::ostream &err);

} // namespace hyrt
