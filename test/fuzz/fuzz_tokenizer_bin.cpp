// libFuzzer target: a llama2.c tokenizer.bin through both readers (the
// checkpoint side's and the runtime's), then the tokenizer built from it.
// The first input byte picks the vocabulary size the readers are told
// (-1: read to the end of the file, as the runtime does without a model).
#include "hyrt/text/tokenizer.h"
#include "models/io/llama2c.h"
#include "test/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  if (size < 1)
    return 0;
  const int vocab = data[0] == 0xff ? -1 : int(data[0]);
  const std::string path = fuzz::writeScratch("tokenizer.bin", data + 1, size - 1);
  if (vocab >= 0)
    (void)io::read_llama2c_tokenizer(path, vocab);
  hyrt::TokenizerData tokenizer_data;
  if (hyrt::Status st = hyrt::read_llama2c_tokenizer(path, vocab, &tokenizer_data); !st.ok()) {
    fuzz::explain("read", st.message());
    return 0;
  }
  hyrt::Tokenizer tok;
  if (hyrt::Status st = tok.init(std::move(tokenizer_data)); !st.ok()) {
    fuzz::explain("Tokenizer::init", st.message());
    return 0;
  }
  std::vector<int32_t> ids = tok.encode("Once upon a time, \xe2\x96\x81 x\xff", true);
  (void)tok.decode_all(ids);
  (void)tok.decode_text(ids, true);
  return 0;
}
