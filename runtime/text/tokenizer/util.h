// Internal helpers shared by the tokenizer sources: UTF-8 and the GPT-2
// byte <-> unicode mapping.
#pragma once

#include <cstdint>
#include <string>

namespace hyrt::detail {

/// Length of the well-formed UTF-8 sequence starting at s[i] (1..4), or 0
/// when the bytes there are not valid UTF-8.
int utf8_length(const std::string &s, size_t i);

/// UTF-8 encoding of code point `cp`.
std::string utf8_encode(uint32_t cp);

/// Decodes the code point of a well-formed sequence of `len` bytes at s[i].
uint32_t utf8_decode(const std::string &s, size_t i, int len);

/// GPT-2 bytes_to_unicode: the code point byte `b` is shown as.
uint32_t gpt2_byte_to_codepoint(unsigned char b);

/// Inverse of gpt2_byte_to_codepoint; -1 for code points outside the map.
int gpt2_codepoint_to_byte(uint32_t cp);

/// Parses "<0xXX>" into its byte value; -1 when `piece` is not of that form.
int parse_byte_piece(const std::string &piece);

} // namespace hyrt::detail
