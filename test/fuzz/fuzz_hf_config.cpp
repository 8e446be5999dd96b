// libFuzzer target: a Hugging Face config.json, loaded as a checkpoint
// directory beside an empty model.safetensors: the family detection and
// every family's config reader run; weight validation then fails (or, for a
// config with no layers and a zero vocabulary, passes) on the empty file.
#include "test/fuzz/exercise.h"
#include "test/fuzz/fuzz_files.h"

namespace {

/// A valid .safetensors with no tensors: header "{}" padded to 8 bytes.
const uint8_t kEmptySafetensors[16] = {8, 0, 0, 0, 0, 0, 0, 0,
                                       '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  static const bool once = [] {
    fuzz::writeScratch("model.safetensors", kEmptySafetensors,
                       sizeof(kEmptySafetensors));
    return true;
  }();
  (void)once;
  fuzz::writeScratch("config.json", data, size);
  io::Expected<models::Checkpoint> ckpt =
      models::load_checkpoint(fuzz::scratchDir());
  if (ckpt)
    fuzz::exerciseCheckpoint(*ckpt);
  else
    fuzz::explain("load_checkpoint", ckpt.error());
  return 0;
}
