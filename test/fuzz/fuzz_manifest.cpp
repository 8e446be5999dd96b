// libFuzzer target: an artifact's manifest.json through parse_manifest, and
// variant selection over what it accepted; when the input also carries a
// library description after a NUL byte (manifest.json \0 the text of
// hyc_artifact_desc_v0), that description through parse_description and
// check_description against every variant of the manifest.
#include "hyrt/artifact/artifact.h"
#include "test/fuzz/fuzz_files.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t nul = input.find('\0');
  const std::string text = input.substr(0, nul);
  hyrt::Manifest manifest;
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
  if (nul == std::string::npos)
    return 0;
  hyrt::ArtifactDescription desc;
  if (hyrt::Status st =
          hyrt::parse_description(input.substr(nul + 1), "model.so", &desc);
      !st.ok()) {
    hyc::fuzz::explain("parse_description", st.message());
    return 0;
  }
  for (size_t v = 0; v < manifest.variants.size(); ++v)
    if (hyrt::Status st = hyrt::check_description(desc, manifest, v, "model.so");
        !st.ok())
      hyc::fuzz::explain("check_description", st.message());
  return 0;
}
