// hyrt/support/json.h - the one entry point for JSON that hyc did not write
// itself (requests, config.json, manifest.json, tokenizer files, chat files,
// calibration): nesting depth bounded before the parser sees the text.
//
// nlohmann::json parses iteratively and destroys iteratively, but copying a
// value, dumping it into a message and every recursive walk of ours recurse
// once per level: a request of a few hundred KB of '[' overflowed the stack.
// 64 levels are far above any real file (tokenizer.json and chat templates'
// tool schemas stay under 10) and far below what the stack can hold.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace hyrt {

/// Deepest nesting of arrays and objects hyc accepts in a JSON document.
constexpr int kJsonMaxDepth = 64;

/// Follows JSON text byte by byte and says which bytes are structure:
/// strings (with their escapes) are skipped, so a '[' or ';' inside a
/// string is not taken for one.
class JsonStringSkipper {
public:
  /// Whether `c`, the next byte, lies outside every string and is not a
  /// string's quote.
  bool structural(char c) {
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
      return false;
    }
    if (c == '"') {
      in_string_ = true;
      return false;
    }
    return true;
  }
  /// Whether the text so far ends inside a string.
  bool in_string() const { return in_string_; }

private:
  bool in_string_ = false, escaped_ = false;
};

/// Empty when the arrays and objects of `text` nest at most `max_depth`
/// deep; otherwise a message naming the limit and the byte offset where it
/// was passed. Strings (with their escapes) are skipped, so a '[' inside a
/// string does not count. Linear in the text, no recursion.
inline std::string json_depth_error(std::string_view text,
                                    int max_depth = kJsonMaxDepth) {
  int depth = 0;
  JsonStringSkipper skip;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!skip.structural(c))
      continue;
    if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return "JSON nests deeper than " + std::to_string(max_depth) +
               " levels (at byte " + std::to_string(i) + ")";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return {};
}

/// Parses `text` into `*out` after the depth check. Returns an empty string
/// on success, else the reason (depth, or the parser's message).
template <class Json>
std::string parse_json(std::string_view text, Json *out,
                       int max_depth = kJsonMaxDepth) {
  if (std::string e = json_depth_error(text, max_depth); !e.empty())
    return e;
  try { // the parser's own message names the position and the token
    *out = Json::parse(text.begin(), text.end());
  } catch (const typename Json::exception &e) {
    return std::string("invalid JSON: ") + e.what();
  }
  return {};
}

} // namespace hyrt
