// Hugging Face directory loader: config.json -> family -> spec, weights from
// model.safetensors or a sharded index (F32/F16/BF16/F8 converted to fp32,
// DeepSeek-style FP8 with weight_scale_inv dequantized by block, AWQ / GPTQ /
// compressed-tensors int4 layers listed as their `<prefix>.weight` and kept
// as stored codes).
//
// hyc convention: a llama2.c-format `tokenizer.bin` beside config.json (as
// `hyc synth` writes) is loaded as the checkpoint's tokenizer; otherwise a
// tokenizer.json is carried as kind "hf" (the compiler reads it with the
// runtime's reader and stores it in the artifact).
#include "models/checkpoint/family.h"
#include "models/checkpoint/int4_layers.h"
#include "models/checkpoint/weight_source.h"

#include "models/io/safetensors.h"

#include <cstring>
#include <algorithm>
#include <filesystem>
#include <optional>

namespace hyc::models::detail {

namespace {

namespace fs = std::filesystem;

class SafetensorsWeightSource : public ViewWeightSource {
public:
  /// `to_canonical` renames a family's own tensor names (nullptr: the
  /// stored names are canonical). Each packed int4 layer of `int4` is
  /// listed once, as the `<prefix>.weight` [N, K] an unquantized
  /// checkpoint would have, stored as its codes tensor (qweight,
  /// weight_packed); its other tensors are not listed.
  SafetensorsWeightSource(io::SafetensorsModel model, std::string dir,
                          int64_t block_n, int64_t block_k, Int4Layers int4,
                          std::string (*to_canonical)(const std::string &))
      : model_(std::move(model)), dir_(std::move(dir)), block_n_(block_n),
        block_k_(block_k), int4_(std::move(int4)) {
    auto canonical = [&](const std::string &name) {
      return to_canonical ? to_canonical(name) : name;
    };
    const std::string int4Dtype = int4_dtype_name(int4_.scheme);
    for (const std::string &name : model_.tensor_names()) {
      if (auto layer = int4_.by_codes.find(name); layer != int4_.by_codes.end()) {
        add(WeightInfo{canonical(layer->second.prefix + ".weight"),
                       {layer->second.n, layer->second.k}, int4Dtype},
            name);
        continue;
      }
      if (int4_.parts.count(name))
        continue;
      const io::SafetensorsTensorInfo *t = model_.find_tensor(name);
      add(WeightInfo{canonical(name), t->shape, t->dtype_name}, name);
    }
  }
  const std::string &origin() const override { return dir_; }

  std::string stored_codes_format(const std::string &name) const override {
    const Int4Layer *layer = int4Layer(name);
    return layer && int4_.scheme.group % 128 == 0 ? "q4z128" : "";
  }

  bool read_stored_codes(const std::string &name, StoredCodes &out) const override {
    const Int4Layer *layer = int4Layer(name);
    Int4GroupQuant q;
    StoredCodes codes;
    if (!layer || !read_int4_layer(model_, int4_.scheme, *layer, q) ||
        !int4_groups_to_q4z128(q, codes))
      return false;
    out = std::move(codes);
    return true;
  }

protected:
  Expected<io::TensorView> view(const std::string &stored) const override {
    return model_.tensor(stored);
  }

  bool channel_scales(const std::string &stored, int64_t n,
                      std::vector<float> &out) const override {
    return readScales(stored + "_scale", {{n}, {n, 1}}, out);
  }

  // F32 / F16 / BF16 tensors convert element by element (scaled int8 and
  // FP8 storage is not read by rows: read_f32_rows checks the dtype).
  bool plain_rows(const std::string &) const override { return true; }

  void release(const io::TensorView &v) const override {
    io::release_mapped_pages(v.data, v.nbytes);
  }

  bool fp8_block_scales(const std::string &stored, int64_t n, int64_t k,
                        std::vector<float> &out) const override {
    return block_n_ == 128 && block_k_ == 128 &&
           readScales(stored + "_scale_inv", {{(n + 127) / 128, (k + 127) / 128}}, out);
  }

  bool packed(const std::string &stored) const override {
    return int4_.by_codes.count(stored) != 0;
  }

  Status convert(const std::string &stored, const io::TensorView &v,
                 float *out) const override {
    // Packed int4: s * (q - z), exact in fp32.
    if (auto layer = int4_.by_codes.find(stored); layer != int4_.by_codes.end()) {
      Int4GroupQuant q;
      HYC_CKPT_TRY(read_int4_layer(model_, int4_.scheme, layer->second, q));
      dequantize_int4_groups(q, out);
      return Status();
    }
    // Channel-INT8 (w8a8_int8, compressed-tensors int-quantized): int8
    // weights with one f32 scale per output row in `<name>_scale`.
    if (v.dtype == io::DType::I8) {
      const std::string channel_scale = stored + "_scale";
      if (!model_.has(channel_scale))
        return Error(dir_ + ": int8 tensor '" + stored + "' has no '" +
                     channel_scale + "' (expected per-channel scales)");
      Expected<io::TensorView> scale = model_.tensor(channel_scale);
      if (!scale)
        return scale.take_error();
      Expected<std::vector<float>> w = io::dequant_int8_channel(v, *scale);
      if (!w)
        return w.take_error();
      std::memcpy(out, w->data(), w->size() * sizeof(float));
      return Status();
    }
    const std::string scale_name = stored + "_scale_inv";
    if (v.dtype != io::DType::F8_E4M3 || !model_.has(scale_name))
      return io::to_f32(v, out);
    Expected<io::TensorView> scale = model_.tensor(scale_name);
    if (!scale)
      return scale.take_error();
    Expected<std::vector<float>> w =
        io::dequant_fp8_block(v, *scale, block_n_, block_k_);
    if (!w)
      return w.take_error();
    std::memcpy(out, w->data(), w->size() * sizeof(float));
    return Status();
  }

private:
  /// The packed int4 layer behind canonical `name`; nullptr for any other.
  const Int4Layer *int4Layer(const std::string &name) const {
    const std::string *stored = stored_of(name);
    auto it = stored ? int4_.by_codes.find(*stored) : int4_.by_codes.end();
    return it == int4_.by_codes.end() ? nullptr : &it->second;
  }

  /// Tensor `name` as fp32 when the checkpoint has it in one of `shapes`.
  bool readScales(const std::string &name, std::initializer_list<std::vector<int64_t>> shapes,
                  std::vector<float> &out) const {
    if (!model_.has(name))
      return false;
    Expected<io::TensorView> scale = model_.tensor(name);
    if (!scale || std::find(shapes.begin(), shapes.end(), scale->shape) == shapes.end())
      return false;
    Expected<std::vector<float>> f = io::to_f32(*scale);
    if (!f)
      return false;
    out = std::move(*f);
    return true;
  }

  io::SafetensorsModel model_;
  std::string dir_;
  int64_t block_n_;
  int64_t block_k_;
  Int4Layers int4_;
};

/// FP8 block sizes and the int4 scheme (AWQ, GPTQ, compressed-tensors
/// pack-quantized) from quantization_config; other quantization methods are
/// rejected.
Status readQuantization(const io::HfConfig &config, int64_t &block_n,
                        int64_t &block_k, std::optional<Int4Scheme> &int4) {
  block_n = block_k = 128;
  if (!config.has("quantization_config"))
    return Status();
  std::string method;
  HYC_CKPT_ASSIGN(method,
                  config.get_string_or("quantization_config.quant_method", ""));
  if (method == "w8a8_int8")
    return Status(); // int8 weights + per-channel weight_scale
  if (method == "awq") {
    HYC_CKPT_ASSIGN(int4, read_awq_scheme(config));
    return Status();
  }
  if (method == "gptq") {
    HYC_CKPT_ASSIGN(int4, read_gptq_scheme(config));
    return Status();
  }
  if (method == "compressed-tensors") {
    std::string format;
    HYC_CKPT_ASSIGN(format,
                    config.get_string_or("quantization_config.format", ""));
    if (format == "pack-quantized") {
      HYC_CKPT_ASSIGN(int4, read_ct_packed_scheme(config));
      return Status();
    }
    if (format != "int-quantized")
      return Error(config.path() + ": compressed-tensors format '" + format +
                   "' is not supported (supported: int-quantized, i.e. "
                   "unpacked int8 weights with per-channel weight_scale, and "
                   "pack-quantized int4 groups)");
    return Status();
  }
  if (method != "fp8")
    return Error(config.path() + ": quantization_config.quant_method '" +
                 method +
                 "' is not supported yet (supported: fp8, w8a8_int8, "
                 "compressed-tensors int-quantized and pack-quantized, awq, gptq)");
  if (!config.has("quantization_config.weight_block_size"))
    return Status();
  std::vector<int64_t> block;
  HYC_CKPT_ASSIGN(
      block, config.get_int_array("quantization_config.weight_block_size"));
  if (block.size() != 2 || block[0] <= 0 || block[1] <= 0)
    return Error(config.path() +
                 ": quantization_config.weight_block_size must be two "
                 "positive integers");
  block_n = block[0];
  block_k = block[1];
  return Status();
}

} // namespace

Expected<Checkpoint> load_hf(const std::string &dir,
                             const LoadOptions &options) {
  Expected<io::HfConfig> config = io::HfConfig::load(dir);
  if (!config)
    return config.take_error();
  const Family *family = nullptr;
  HYC_CKPT_ASSIGN(family, family_for_hf(*config));

  Checkpoint ckpt;
  ckpt.source = dir;
  ckpt.format = "hf";
  HYC_CKPT_ASSIGN(ckpt.spec, family->from_hf(*config, ckpt.warnings));
  int64_t block_n = 128, block_k = 128;
  std::optional<Int4Scheme> int4Scheme;
  HYC_CKPT_TRY(readQuantization(*config, block_n, block_k, int4Scheme));

  Expected<io::SafetensorsModel> model = io::SafetensorsModel::open(dir);
  if (!model)
    return model.take_error();
  Int4Layers int4;
  if (int4Scheme)
    HYC_CKPT_ASSIGN(int4, find_int4_layers(*model, *int4Scheme, dir));
  auto source = std::make_unique<SafetensorsWeightSource>(
      std::move(*model), dir, block_n, block_k, std::move(int4),
      family->hf_to_canonical);
  SpecFields fields;
  fields.layers = "num_hidden_layers";
  fields.experts = ckpt.spec.arch.rfind("deepseek", 0) == 0 ? "n_routed_experts"
                                                             : "num_experts";
  // DeepSeek-V3 checkpoints carry their multi-token-prediction layers after
  // the decoder's; generation does not use them (transformers skips them).
  HYC_CKPT_ASSIGN(fields.unused_layers,
                  config->get_int_or("num_nextn_predict_layers", 0));
  if (fields.unused_layers < 0 || fields.unused_layers > 64)
    return Error(config->path() + ": num_nextn_predict_layers = " +
                 std::to_string(fields.unused_layers) + ", expected 0..64");
  fields.unused_layers_reason =
      "num_nextn_predict_layers: multi-token prediction, unused here";
  HYC_CKPT_TRY(validate_weights(ckpt.spec, *source, fields, ckpt.warnings));
  ckpt.weights = std::move(source);

  const fs::path tokenizer_bin = fs::path(dir) / "tokenizer.bin";
  HYC_CKPT_TRY(
      attach_llama2c_tokenizer(ckpt, options, {tokenizer_bin.string()}));
  std::error_code ec;
  if (!ckpt.tokenizer && fs::exists(fs::path(dir) / "tokenizer.json", ec)) {
    TokenizerSpec t;
    t.kind = "hf";
    t.hf_dir = dir;
    ckpt.tokenizer = std::move(t);
  }
  return ckpt;
}

} // namespace hyc::models::detail
