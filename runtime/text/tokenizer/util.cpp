// UTF-8 and GPT-2 byte-mapping helpers for the tokenizers.
#include "util.h"

namespace hyrt::detail {

int utf8_length(const std::string &s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3
                         : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size())
    return 0;
  for (int k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
      return 0;
  return len;
}

std::string utf8_encode(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
  return out;
}

uint32_t utf8_decode(const std::string &s, size_t i, int len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (len == 1)
    return c;
  uint32_t cp = c & (0x7F >> len);
  for (int k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

namespace {
// Bytes GPT-2 shows as themselves: '!'..'~', 0xA1..0xAC, 0xAE..0xFF. The
// other 68 bytes map, in increasing order, to 256, 257, ...
bool printable(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
         (b >= 0xAE && b <= 0xFF);
}
} // namespace

uint32_t gpt2_byte_to_codepoint(unsigned char b) {
  if (printable(b))
    return b;
  uint32_t n = 0;
  for (unsigned x = 0; x < b; ++x)
    if (!printable(x))
      ++n;
  return 256 + n;
}

int gpt2_codepoint_to_byte(uint32_t cp) {
  if (cp < 256)
    return printable(cp) ? int(cp) : -1;
  uint32_t n = 256;
  for (unsigned x = 0; x < 256; ++x)
    if (!printable(x) && n++ == cp)
      return int(x);
  return -1;
}

int parse_byte_piece(const std::string &piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>')
    return -1;
  int value = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = piece[k];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                         : -1;
    if (d < 0)
      return -1;
    value = value * 16 + d;
  }
  return value;
}

} // namespace hyrt::detail
