// The packings int4_layers.cpp reads, one file each (int4_awq.cpp,
// int4_gptq.cpp, int4_ct_packed.cpp): which tensors make a layer, their
// checks, and their unpacking into Int4GroupQuant. Internal to
// hyc_checkpoint.
#ifndef HYC_MODELS_CHECKPOINT_INT4_FORMATS_H
#define HYC_MODELS_CHECKPOINT_INT4_FORMATS_H

#include "models/checkpoint/int4_layers.h"

#include <string>
#include <vector>

namespace hyc::models::detail {

/// One packing of int4 layers.
struct Int4Format {
  /// For messages: "AWQ", "GPTQ", "compressed-tensors pack-quantized".
  const char *name = "";
  /// The suffix whose tensor names a layer (`.qweight`, `.weight_packed`).
  std::string codes;
  /// The suffixes every layer has, codes first; "what a layer stores" in
  /// messages lists them.
  std::vector<std::string> parts;
  /// Suffixes a layer may have besides (GPTQ's g_idx).
  std::vector<std::string> optional_parts;
  /// Suffixes that exist only beside the codes (a `.qzeros` alone is an
  /// error; a `.weight_scale` alone may be channel-INT8's).
  std::vector<std::string> only_with_codes;
  /// Checks the layer named by `<prefix><codes>` (present); `where` starts
  /// every message.
  Expected<Int4Layer> (*check)(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                               const std::string &prefix, const std::string &where);
  /// Unpacks a checked layer.
  Status (*read)(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                 const Int4Layer &layer, Int4GroupQuant &out) = nullptr;
};

const Int4Format &awq_format();
const Int4Format &gptq_format();
const Int4Format &ct_packed_format();

/// Checks that tensor `name` of a `format` layer is present with `dtype`
/// and `shape`; `shapeWhy` says where the expected shape comes from.
Status check_int4_part(const io::SafetensorsModel &model, const Int4Format &format,
                       const std::string &where, const std::string &name, const std::string &dtype,
                       const std::vector<int64_t> &shape, const std::string &shapeWhy);

/// Views of a layer's tensors, checked to hold `bytes` each (the checks
/// ran when the checkpoint opened; this keeps a stale layer from reading
/// past a view).
Status int4_views(const io::SafetensorsModel &model, const Int4Layer &layer,
                  const std::vector<std::pair<std::string, size_t>> &namesAndBytes,
                  std::vector<io::TensorView> &views);

/// Drops the views' pages once a layer is unpacked (the page cache keeps
/// them), as the weight source does for the tensors it converts.
void release_int4_views(const std::vector<io::TensorView> &views);

/// Where a format's codes tensor (I32, 8 int4 codes per word) keeps K and
/// N: `kDim` is K's dimension (0 or 1), `kPacked` whether the words pack
/// along K (else along N); `shape` spells it, e.g. "[K, N / 8]".
struct Int4Packing {
  int kDim;
  bool kPacked;
  const char *shape;
};

/// The layer of `prefix` whose codes are `codes`: I32, 2-D and positive,
/// K and N read through `packing`, K a multiple of `group`; errors name the
/// tensor, what was found and what was expected.
Expected<Int4Layer> int4_packed_layer(const io::SafetensorsModel &model, const std::string &where,
                                      const std::string &prefix, const std::string &codes,
                                      const Int4Packing &packing, int64_t group);

/// "K=4096, N=11008 from '<codes>', group_size 128": where a part's
/// expected shape comes from.
std::string int4_dims(const Int4Layer &layer, const std::string &codes, int64_t group);

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_INT4_FORMATS_H
