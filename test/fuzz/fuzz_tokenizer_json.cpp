// libFuzzer target: a Hugging Face tokenizer.json (+ tokenizer_config.json
// after a "\n--config--\n" line) through the runtime's reader, then the
// tokenizer built from it encoding and decoding a fixed text. (The chat
// template it reads is only carried here; rendering one is not fuzzed yet.)
#include "hyrt/text/tokenizer.h"
#include "test/fuzz/fuzz_files.h"

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  auto [tokenizer, config] = fuzz::splitAt(data, size, "\n--config--\n");
  fuzz::writeScratch("tokenizer.json",
                     reinterpret_cast<const uint8_t *>(tokenizer.data()),
                     tokenizer.size());
  const std::string config_path = fuzz::scratchDir() + "/tokenizer_config.json";
  if (config.empty())
    unlink(config_path.c_str());
  else
    fuzz::writeScratch("tokenizer_config.json",
                       reinterpret_cast<const uint8_t *>(config.data()),
                       config.size());
  hyrt::TokenizerData tokenizer_data;
  if (hyrt::Status st = hyrt::read_hf_tokenizer(fuzz::scratchDir(), &tokenizer_data); !st.ok()) {
    fuzz::explain("read", st.message());
    return 0;
  }
  hyrt::Tokenizer tok;
  if (hyrt::Status st = tok.init(std::move(tokenizer_data)); !st.ok()) {
    fuzz::explain("Tokenizer::init", st.message());
    return 0;
  }
  std::vector<int32_t> ids =
      tok.encode("Hello, world!  It's 2024\n\t\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80<|im_end|>", true);
  (void)tok.decode_text(ids, true);
  (void)tok.decode_text(ids, false);
  return 0;
}
