// libFuzzer target: the tokenizer an artifact carries (hyrt's own "HYTK"
// format, written by Tokenizer::save) through Tokenizer::load, then used.
#include "hyrt/text/tokenizer.h"
#include "test/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  const std::string path = fuzz::writeScratch("tokenizer.hytk", data, size);
  hyrt::Tokenizer tok;
  if (hyrt::Status st = hyrt::Tokenizer::load(path, &tok); !st.ok()) {
    fuzz::explain("Tokenizer::load", st.message());
    return 0;
  }
  std::vector<int32_t> ids = tok.encode("Hello, world! \xc3\xa9 12", true);
  (void)tok.decode_text(ids, true);
  (void)tok.decode_all(ids);
  return 0;
}
