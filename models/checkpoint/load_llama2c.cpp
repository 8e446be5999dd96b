// llama2.c .bin loader (legacy, v1 fp32, v2 Q8 grouped): spec from the
// header, tensors already under canonical names, tokenizer.bin found beside
// the file.
#include "models/checkpoint/family.h"
#include "models/checkpoint/weight_source.h"

#include <filesystem>

namespace hyc::models::detail {

namespace {

class Llama2cWeightSource : public ViewWeightSource {
public:
  explicit Llama2cWeightSource(io::Llama2cModel model)
      : model_(std::move(model)) {
    for (const io::TensorView &t : model_.tensors())
      add(WeightInfo{t.name, t.shape, io::dtype_name(t.dtype)}, t.name);
  }
  const std::string &origin() const override { return model_.path(); }

protected:
  Expected<io::TensorView> view(const std::string &stored) const override {
    return model_.tensor(stored);
  }

private:
  io::Llama2cModel model_;
};

} // namespace

Expected<Checkpoint> load_llama2c(const std::string &path,
                                  const LoadOptions &options) {
  Expected<io::Llama2cModel> opened = io::Llama2cModel::open(path);
  if (!opened)
    return opened.take_error();
  Checkpoint ckpt;
  ckpt.source = path;
  ckpt.format = "llama2c";
  ckpt.spec = llama_spec_from_llama2c(opened->config());
  auto source = std::make_unique<Llama2cWeightSource>(std::move(*opened));
  SpecFields fields;
  fields.layers = "n_layers";
  HYC_CKPT_TRY(validate_weights(ckpt.spec, *source, fields, ckpt.warnings));
  ckpt.weights = std::move(source);

  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  HYC_CKPT_TRY(attach_llama2c_tokenizer(
      ckpt, options,
      {(dir / "tokenizer.bin").string(),
       (dir / ("tok" + std::to_string(ckpt.spec.vocab_size) + ".bin"))
           .string()}));
  return ckpt;
}

} // namespace hyc::models::detail
