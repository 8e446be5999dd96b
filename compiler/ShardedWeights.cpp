// A tensor-parallel rank's slices of the checkpoint (see ShardedWeights.h).
#include "compiler/ShardedWeights.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace hyc::compiler {

namespace {

class ShardedWeightSource : public models::WeightSource {
public:
  explicit ShardedWeightSource(std::unique_ptr<models::WeightSource> base)
      : base_(std::move(base)), infos_(base_->weights()) {}

  /// Shrinks `name`'s dim to its part; false with `error` when it cannot.
  bool split(const std::string &name, ShardSpec spec, std::string &error) {
    for (size_t i = 0; i < infos_.size(); ++i) {
      models::WeightInfo &w = infos_[i];
      if (w.name != name)
        continue;
      const int64_t rank = int64_t(w.shape.size());
      const int64_t stored = spec.dim < rank && spec.dim >= 0 ? w.shape[size_t(spec.dim)] : 0;
      if (spec.whole == 0)
        spec.whole = stored; // not padded
      if (rank < 1 || rank > 2 || spec.dim < 0 || spec.dim >= rank || spec.parts < 1 ||
          spec.index < 0 || spec.index >= spec.parts || spec.whole < stored ||
          spec.whole % spec.parts != 0) {
        error = "tensor parallel: " + name + " cannot be split along dim " +
                std::to_string(spec.dim) + " into " + std::to_string(spec.parts) +
                " equal parts of " + std::to_string(spec.whole) + " (stored " +
                std::to_string(stored) + ")";
        return false;
      }
      splits_[name] = {spec, w.shape};
      w.shape[size_t(spec.dim)] = spec.whole / spec.parts;
      index_[name] = i;
      return true;
    }
    error = "tensor parallel: the checkpoint has no tensor " + name;
    return false;
  }

  const std::vector<models::WeightInfo> &weights() const override { return infos_; }
  const models::WeightInfo *find(const std::string &name) const override {
    if (auto it = index_.find(name); it != index_.end())
      return &infos_[it->second];
    return base_->find(name);
  }
  models::Status read_f32(const std::string &name, float *out) const override {
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_f32(name, out);
    const Split &s = it->second;
    const int64_t rows = s.shape[0], cols = s.shape.size() > 1 ? s.shape[1] : 1;
    const int64_t part = s.spec.whole / s.spec.parts, first = s.spec.index * part;
    // A row part reads by rows where the source can (padding included).
    if (s.spec.dim == 0 && read_f32_rows(name, 0, part, out))
      return {};
    // The stored rows / columns of [first, first + part); the rest is padding.
    const int64_t stored = std::max<int64_t>(0, std::min(part, (s.spec.dim == 0 ? rows : cols) -
                                                                   first));
    if (s.spec.dim == 0)
      std::fill(out + stored * cols, out + part * cols, 0.0f);
    std::vector<float> whole(size_t(rows * cols));
    if (models::Status st = base_->read_f32(name, whole.data()); !st.ok())
      return st;
    if (s.spec.dim == 0) {
      std::memcpy(out, whole.data() + first * cols, sizeof(float) * size_t(stored * cols));
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(out + r * part, whole.data() + r * cols + first,
                    sizeof(float) * size_t(stored));
        std::fill(out + r * part + stored, out + (r + 1) * part, 0.0f);
      }
    }
    return {};
  }
  bool read_f32_rows(const std::string &name, int64_t row0, int64_t rows,
                     float *out) const override {
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_f32_rows(name, row0, rows, out);
    // Rows of a dim-0 split are rows of the whole tensor, offset; rows past
    // the stored ones are padding (zeros).
    const Split &s = it->second;
    if (s.spec.dim != 0 || row0 < 0 || rows < 0)
      return false;
    const int64_t first = s.spec.index * (s.spec.whole / s.spec.parts) + row0;
    const int64_t cols = s.shape.size() > 1 ? s.shape[1] : 1;
    const int64_t stored = std::max<int64_t>(0, std::min(rows, s.shape[0] - first));
    std::fill(out + stored * cols, out + rows * cols, 0.0f);
    return stored == 0 || base_->read_f32_rows(name, first, stored, out);
  }
  bool read_int8_channel(const std::string &name, int8_t *q, float *scale) const override {
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_int8_channel(name, q, scale);
    // An unpadded row split keeps each row's int8 values and scale; a
    // column split would need each part's own scale, and padding rows have
    // none: re-quantized from fp32 instead.
    const Split &s = it->second;
    if (s.spec.dim != 0 || s.shape.size() != 2 || s.spec.whole != s.shape[0])
      return false;
    const int64_t n = s.shape[0], k = s.shape[1], part = n / s.spec.parts,
                  first = s.spec.index * part;
    std::vector<int8_t> wq(size_t(n * k));
    std::vector<float> ws(static_cast<size_t>(n));
    if (!base_->read_int8_channel(name, wq.data(), ws.data()))
      return false;
    std::memcpy(q, wq.data() + first * k, size_t(part * k));
    std::memcpy(scale, ws.data() + first, sizeof(float) * size_t(part));
    return true;
  }
  bool read_codes_g32(const std::string &name, int bits, uint8_t *codes,
                      uint16_t *scales) const override {
    // A split tensor's codes would need their groups cut and padded:
    // quantized from fp32 instead.
    return !splits_.count(name) && base_->read_codes_g32(name, bits, codes, scales);
  }
  std::string stored_codes_format(const std::string &name) const override {
    // As read_codes_g32: a split tensor is quantized from fp32 instead.
    return !splits_.count(name) ? base_->stored_codes_format(name) : "";
  }
  bool read_stored_codes(const std::string &name, models::StoredCodes &out) const override {
    return !splits_.count(name) && base_->read_stored_codes(name, out);
  }
  bool read_fp8_block(const std::string &name, uint8_t *codes,
                      float *scale_inv) const override {
    // 128 x 128 blocks cut by a split would need new factors: quantized
    // from fp32 instead.
    if (splits_.count(name))
      return false;
    return base_->read_fp8_block(name, codes, scale_inv);
  }

private:
  struct Split {
    ShardSpec spec;
    std::vector<int64_t> shape; ///< the stored tensor's
  };
  std::unique_ptr<models::WeightSource> base_;
  std::vector<models::WeightInfo> infos_;
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<std::string, Split> splits_;
};

} // namespace

std::unique_ptr<models::WeightSource>
shardWeights(std::unique_ptr<models::WeightSource> base,
             const std::map<std::string, ShardSpec> &splits, std::string &error) {
  auto source = std::make_unique<ShardedWeightSource>(std::move(base));
  for (const auto &[name, spec] : splits)
    if (!source->split(name, spec, error))
      return nullptr;
  return source;
}

} // namespace hyc::compiler
