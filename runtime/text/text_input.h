// Text inputs of the hyrt commands (private to libhyrt). Only regular files
// are read: a FIFO would block the command forever and a device such as
// /dev/zero never ends. Files are read in bounded pieces, and a paragraph
// is tokenized only as far as a sequence of the artifact can use it.
#pragma once

#include "hyrt/status.h"
#include "hyrt/text/tokenizer.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace hyrt::cli {

/// Reads the regular file `path` whole. A FIFO, device, directory or socket
/// is refused without waiting on it, and so is a file larger than
/// `max_bytes`; errors name the path and what it is.
Status read_regular_file(const std::string &path, uint64_t max_bytes,
                         std::string *out);

/// Whether `path` can be read as a text input: a regular file (the error
/// names what it is otherwise). Does not open it.
Status check_regular_file(const std::string &path);

/// The first `max_paragraphs` paragraphs of the regular file `path`, split
/// like split_paragraphs (runs of non-blank lines joined by '\n') while the
/// file streams in 64 KiB pieces, so that neither a huge file nor a huge
/// line is held whole: each paragraph keeps at most `max_paragraph_bytes`
/// bytes, the rest of a longer one is skipped.
Status read_paragraphs(const std::string &path, int64_t max_paragraphs,
                       size_t max_paragraph_bytes,
                       std::vector<std::string> *out);

/// The bytes of a paragraph worth keeping for sequences of `max_tokens`
/// ids: far more than any tokenizer's longest piece times the ids, at
/// least 1 MiB.
size_t paragraph_byte_budget(int64_t max_tokens);

/// Reads all of `in`, refusing more than `max_bytes` (standard input may be
/// /dev/zero); `what` names the stream in the error.
Status read_bounded(std::istream &in, uint64_t max_bytes,
                    const std::string &what, std::string *out);

/// The first `max_tokens` ids of tok.encode(text, add_bos). A long text is
/// not tokenized whole (encoding costs grow faster than the text): growing
/// prefixes cut at whitespace are encoded until one yields more ids than
/// needed, with a margin so that the cut cannot change the ids kept.
/// `truncated` (optional) tells whether the text had more ids; `error`
/// (optional) gets the tokenizer's error (a regex past its budget), in
/// which case the ids are incomplete.
std::vector<int32_t> encode_prefix(const Tokenizer &tok, const std::string &text,
                                   bool add_bos, int64_t max_tokens,
                                   bool *truncated = nullptr,
                                   Status *error = nullptr);

} // namespace hyrt::cli
