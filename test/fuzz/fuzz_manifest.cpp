// libFuzzer target: an artifact's manifest.json through parse_manifest, and
// variant selection over what it accepted.
#include "hyrt/artifact.h"
#include "test/fuzz/fuzz_files.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hyrt::Manifest manifest;
  const std::string text(reinterpret_cast<const char *>(data), size);
  if (hyrt::Status st = hyrt::parse_manifest(text, "manifest.json", &manifest);
      !st.ok()) {
    hyc::fuzz::explain("parse_manifest", st.message());
    return 0;
  }
  int64_t index = -1;
  std::string why;
  (void)hyrt::choose_variant(manifest.variants, {"avx2", "fma", "avx512f"}, "",
                             "", &index, &why);
  for (const hyrt::TensorEntry &t : manifest.tensors)
    (void)hyrt::dtype_size(t.dtype);
  return 0;
}
