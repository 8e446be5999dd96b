// WeightSource implementations over the models/io readers (GGUF, llama2.c,
// safetensors), the weight validation every loader runs, and tokenizer
// discovery. Internal to hyc_checkpoint.
#ifndef HYC_MODELS_CHECKPOINT_WEIGHT_SOURCE_H
#define HYC_MODELS_CHECKPOINT_WEIGHT_SOURCE_H

#include "models/checkpoint/model_spec.h"
#include "models/io/tensor.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace hyc::models::detail {

/// A WeightSource whose tensors are zero-copy views of mapped files, each
/// listed under its canonical name and the name it has in the file.
class ViewWeightSource : public WeightSource {
public:
  const std::vector<WeightInfo> &weights() const override { return infos_; }
  const WeightInfo *find(const std::string &name) const override;
  Status read_f32(const std::string &name, float *out) const override;
  bool read_f32_rows(const std::string &name, int64_t row0, int64_t rows,
                     float *out) const override;
  bool read_int8_channel(const std::string &name, int8_t *q,
                         float *scale) const override;
  bool read_fp8_block(const std::string &name, uint8_t *codes,
                      float *scale_inv) const override;
  bool read_codes_g32(const std::string &name, int bits, uint8_t *codes,
                      uint16_t *scales) const override;
  std::string stored_codes_format(const std::string &name) const override;
  bool read_stored_codes(const std::string &name, StoredCodes &out) const override;

  /// The stored tensor behind canonical `name`, checked to be convertible
  /// to fp32; errors name the file and tensor.
  Status check_readable(const std::string &name) const;
  /// The file (or directory) the weights come from, for messages.
  virtual const std::string &origin() const = 0;

protected:
  /// Lists a tensor; later entries with the same canonical name are ignored.
  void add(WeightInfo info, std::string stored_name);
  /// The stored name behind canonical `name`; nullptr when absent.
  const std::string *stored_of(const std::string &name) const;
  /// Whether `stored` is a packed layer the source checked when it opened
  /// and converts itself (an int4 layer's int32 codes): check_readable
  /// accepts it.
  virtual bool packed(const std::string &stored) const {
    (void)stored;
    return false;
  }
  /// View of a tensor by its stored name.
  virtual Expected<io::TensorView> view(const std::string &stored) const = 0;
  /// fp32 conversion of a view; sources with scaled formats override it.
  virtual Status convert(const std::string &stored, const io::TensorView &v,
                         float *out) const;
  /// The per-channel scales of an int8 tensor stored as `stored`, as fp32
  /// (N of them); false when the source keeps none (the default).
  virtual bool channel_scales(const std::string &stored, int64_t n,
                              std::vector<float> &out) const {
    (void)stored, (void)n, (void)out;
    return false;
  }
  /// Whether `stored`'s fp32 values are its view's elements converted one
  /// for one (no scales, no reassembly), so that a row range can be read
  /// alone. Default: false (read whole).
  virtual bool plain_rows(const std::string &stored) const {
    (void)stored;
    return false;
  }
  /// Called once a read has consumed `v`: a source whose views are file
  /// mappings drops their pages (the page cache keeps them), so that
  /// converting a checkpoint larger than memory holds a few tensors
  /// resident, not every tensor read so far. Default: nothing.
  virtual void release(const io::TensorView &v) const { (void)v; }
  /// The 128 x 128 block factors of an e4m3 tensor [n, k] stored as
  /// `stored`, as fp32 ([ceil(n/128)][ceil(k/128)]); false when the source
  /// keeps none or uses another block size (the default).
  virtual bool fp8_block_scales(const std::string &stored, int64_t n, int64_t k,
                                std::vector<float> &out) const {
    (void)stored, (void)n, (void)k, (void)out;
    return false;
  }

private:
  Expected<io::TensorView> viewOf(const std::string &name,
                                  const std::string **stored) const;

  std::vector<WeightInfo> infos_;
  std::vector<std::string> stored_;
  std::unordered_map<std::string, size_t> index_;
};

/// How a format names the counts validate_weights checks, for its messages,
/// and the layers past the last one a checkpoint may carry unused.
struct SpecFields {
  std::string layers = "num_layers";        ///< "num_hidden_layers", "llama.block_count"
  std::string experts = "num_experts";      ///< "n_routed_experts", "qwen3moe.expert_count"
  int64_t unused_layers = 0;                ///< DeepSeek's num_nextn_predict_layers
  std::string unused_layers_reason;         ///< why they are there, for the warning
};

/// Checks the spec's layer and expert counts against the tensors present
/// (before building the required list, so that an absurd count fails at
/// once), then that every weight of required_weights(spec) is present with
/// the exact shape and a readable floating-point storage. Tensors of layers
/// or experts past the counts are an error; other tensors the spec does not
/// use are reported in `warnings`. Errors name the source, the field or
/// each offending tensor (up to 8), and expected versus found.
Status validate_weights(const ModelSpec &spec, const ViewWeightSource &source,
                        const SpecFields &fields,
                        std::vector<std::string> &warnings);

/// Sets checkpoint.tokenizer from a llama2.c tokenizer.bin:
/// options.tokenizer_path when given (a failure is an error), else the
/// first of `implicit` (paths) that exists and reads with
/// spec.vocab_size entries (failures become warnings). Leaves the tokenizer
/// unset when nothing is found.
Status attach_llama2c_tokenizer(Checkpoint &checkpoint,
                                const LoadOptions &options,
                                const std::vector<std::string> &implicit);

// The format loaders (one file each). They detect nothing: load_checkpoint
// has picked the format already.
Expected<Checkpoint> load_gguf(const std::string &path,
                               const LoadOptions &options);
Expected<Checkpoint> load_llama2c(const std::string &path,
                                  const LoadOptions &options);
Expected<Checkpoint> load_hf(const std::string &dir,
                             const LoadOptions &options);

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_WEIGHT_SOURCE_H
