// libFuzzer target: a .safetensors file (8-byte header length, JSON header,
// data) through the reader, reading every tensor it accepts.
#include "models/io/safetensors.h"
#include "test/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  const std::string path = fuzz::writeScratch("model.safetensors", data, size);
  io::Expected<io::SafetensorsModel> model = io::SafetensorsModel::open(path);
  if (!model) {
    fuzz::explain("SafetensorsModel::open", model.error());
    return 0;
  }
  for (const std::string &name : model->tensor_names()) {
    const io::SafetensorsTensorInfo *info = model->find_tensor(name);
    if (info && info->end - info->begin <= uint64_t(fuzz::kMaxFuzzElements))
      (void)model->read_f32(name);
  }
  return 0;
}
