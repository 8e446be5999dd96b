// Tests for the GPT-2 byte-level BPE tokenizer: byte mapping, pre-tokenizer
// boundaries, merge ranks and byte-exact round trips.
#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>

using hyrt::Tokenizer;
using hyrt::TokenizerData;
using hyrt::TokenizerKind;

namespace {

// UTF-8 of the GPT-2 display character of a few bytes.
const std::string kG = "\xC4\xA0"; // U+0120 'Ġ' = byte 0x20 (space)
const std::string kC = "\xC4\x8A"; // U+010A 'Ċ' = byte 0x0A (newline)

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

/// 256 single-byte tokens in GPT-2 order (printable bytes as themselves,
/// the rest from U+0100), then merged tokens, plus an end-of-text control.
struct Gpt2Fixture {
  Tokenizer tok;
  std::vector<std::string> extra = {"he", "ll", "hell", "hello", kG + "t",
                                    kG + "the", "th", "'s", kG + "w", "or",
                                    kG + "wor", "ld", kG + "world", "12"};
  Gpt2Fixture() {
    TokenizerData d;
    d.kind = TokenizerKind::kGpt2;
    uint32_t next = 256;
    std::vector<std::string> bytes(256);
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) ||
                             (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      bytes[b] = utf8(printable ? uint32_t(b) : next++);
    }
    d.tokens = bytes;
    for (const std::string &e : extra)
      d.tokens.push_back(e);
    d.tokens.push_back("<|endoftext|>");
    d.types.assign(d.tokens.size(), hyrt::kTokenNormal);
    d.types.back() = hyrt::kTokenControl;
    d.bos_id = d.eos_id = int32_t(d.tokens.size() - 1);
    // Ranks: lower merges first. "t h" exists but " t" + "he" wins in " the".
    d.merges = {"h e", "l l", "he ll", "hell o", kG + " t", kG + "t he",
                "t h", "' s", kG + " w", "o r", kG + "w or", "l d",
                kG + "wor ld", "1 2", "o " + kG};
    EXPECT_TRUE(tok.init(d).ok());
  }
  int32_t id(const std::string &piece) const {
    for (int64_t i = 0; i < tok.vocab_size(); ++i)
      if (tok.data().tokens[i] == piece)
        return int32_t(i);
    return -1;
  }
};

} // namespace

TEST(TokenizerGpt2, EncodesWithRanksAndWordBoundaries) {
  Gpt2Fixture f;
  // "hello the world": words "hello", " the", " world".
  EXPECT_EQ(f.tok.encode("hello the world", false),
            (std::vector<int32_t>{f.id("hello"), f.id(kG + "the"),
                                  f.id(kG + "world")}));
  // The merge "o Ġ" would join across a word boundary; it must not apply.
  const auto ids = f.tok.encode("hello the", false);
  EXPECT_EQ(ids.size(), 2u);
  // add_bos puts the BOS id first.
  EXPECT_EQ(f.tok.encode("he", true),
            (std::vector<int32_t>{f.tok.bos_id(), f.id("he")}));
}

TEST(TokenizerGpt2, ContractionsDigitsAndSpaces) {
  Gpt2Fixture f;
  // "it's": "it" + "'s".
  const auto ids = f.tok.encode("it's", false);
  EXPECT_EQ(ids, (std::vector<int32_t>{'i', 't', f.id("'s")}));
  // Digits form their own word: "a12" -> "a", "12".
  EXPECT_EQ(f.tok.encode("a12", false),
            (std::vector<int32_t>{'a', f.id("12")}));
  // Two spaces before a word: the first stands alone, the second joins.
  EXPECT_EQ(f.tok.encode("he  the", false),
            (std::vector<int32_t>{f.id("he"), f.id(kG), f.id(kG + "the")}));
  // Newline is mapped to U+010A.
  EXPECT_EQ(f.tok.encode("\n", false), (std::vector<int32_t>{f.id(kC)}));
}

TEST(TokenizerGpt2, ByteMappingMatchesGpt2Table) {
  Gpt2Fixture f;
  EXPECT_EQ(f.tok.data().tokens[' '], kG);
  EXPECT_EQ(f.tok.data().tokens['\n'], kC);
  EXPECT_EQ(f.tok.data().tokens[0xAD], "\xC5\x83"); // U+0143
  EXPECT_EQ(f.tok.data().tokens[0], "\xC4\x80");    // U+0100
  // Encoding a byte gives the token at that byte's index in this vocab.
  EXPECT_EQ(f.tok.encode("\xAD", false), (std::vector<int32_t>{0xAD}));
}

TEST(TokenizerGpt2, RoundTripIsByteExact) {
  Gpt2Fixture f;
  const std::string texts[] = {
      "hello the world", "  leading and trailing  ", "tabs\tand\nnewlines\n\n",
      "it's 2024, isn't it?", "caf\xC3\xA9 \xE2\x96\x81 \xF0\x9F\x98\x80 ok",
      std::string("nul\0byte", 8)};
  for (const std::string &t : texts)
    EXPECT_EQ(f.tok.decode_all(f.tok.encode(t, true)), t) << t;
  EXPECT_EQ(f.tok.decode(f.tok.bos_id()), "");
  // No leading-space stripping for GPT-2 pieces after BOS.
  EXPECT_EQ(f.tok.decode(f.tok.bos_id(), f.id(kG + "the")), " the");
}
