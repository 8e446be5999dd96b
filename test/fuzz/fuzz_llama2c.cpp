// libFuzzer target: a llama2.c checkpoint (.bin, versions 0, 1 and 2) through
// the reader and load_checkpoint (spec, weights; no tokenizer beside it).
#include "models/io/llama2c.h"
#include "test/fuzz/exercise.h"
#include "test/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  const std::string path = fuzz::writeScratch("model.bin", data, size);
  {
    io::Expected<io::Llama2cModel> model = io::Llama2cModel::open(path);
    if (!model) {
      fuzz::explain("Llama2cModel::open", model.error());
      return 0;
    }
    (void)model->config().to_string();
    for (const io::TensorView &t : model->tensors())
      if (t.numel() <= fuzz::kMaxFuzzElements)
        (void)model->read_f32(t.name);
  }
  io::Expected<models::Checkpoint> ckpt = models::load_checkpoint(path);
  if (ckpt)
    fuzz::exerciseCheckpoint(*ckpt);
  else
    fuzz::explain("load_checkpoint", ckpt.error());
  return 0;
}
