// libFuzzer target: a GGUF file through the reader (every key, every tensor)
// and then through load_checkpoint (architecture, spec, tokenizer, weights).
#include "models/io/gguf.h"
#include "test/fuzz/exercise.h"
#include "test/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  const std::string path = fuzz::writeScratch("model.gguf", data, size);
  {
    io::Expected<io::GgufFile> file = io::GgufFile::open(path);
    if (!file) {
      fuzz::explain("GgufFile::open", file.error());
      return 0;
    }
    for (const auto &[key, value] : file->metadata()) {
      (void)value.type_string();
      (void)file->get_string_array(key);
      (void)file->get_f32_array(key);
      (void)file->get_i32_array(key);
      (void)file->get_u64(key);
      (void)file->get_f64(key);
    }
    for (const io::GgufTensorInfo &t : file->tensor_infos())
      if (t.nbytes <= uint64_t(fuzz::kMaxFuzzElements))
        (void)file->read_f32(t.name);
  }
  io::Expected<models::Checkpoint> ckpt = models::load_checkpoint(path);
  if (ckpt)
    fuzz::exerciseCheckpoint(*ckpt);
  else
    fuzz::explain("load_checkpoint", ckpt.error());
  return 0;
}
