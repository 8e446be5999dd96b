// A tensor-parallel rank's slices of the checkpoint (see ShardedWeights.h).
#include "compiler/ShardedWeights.h"

#include <cstring>
#include <unordered_map>
#include <vector>

namespace hyc::compiler {

namespace {

class ShardedWeightSource : public models::WeightSource {
public:
  ShardedWeightSource(std::unique_ptr<models::WeightSource> base, int64_t rank, int64_t size)
      : base_(std::move(base)), rank_(rank), size_(size), infos_(base_->weights()) {}

  /// Shrinks `name`'s dim; false with `error` when it cannot.
  bool split(const std::string &name, int64_t dim, std::string &error) {
    for (size_t i = 0; i < infos_.size(); ++i) {
      models::WeightInfo &w = infos_[i];
      if (w.name != name)
        continue;
      const int64_t rank = int64_t(w.shape.size());
      if (rank < 1 || rank > 2 || dim >= rank || w.shape[size_t(dim)] % size_ != 0) {
        error = "tensor parallel: " + name + " cannot be split along dim " +
                std::to_string(dim) + " into " + std::to_string(size_) + " equal parts";
        return false;
      }
      splits_[name] = {dim, w.shape};
      w.shape[size_t(dim)] /= size_;
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
    if (s.dim == 0 && base_->read_f32_rows(name, rank_ * rows / size_, rows / size_, out))
      return {};
    std::vector<float> whole(size_t(rows * cols));
    if (models::Status st = base_->read_f32(name, whole.data()); !st.ok())
      return st;
    if (s.dim == 0) {
      const int64_t part = rows / size_;
      std::memcpy(out, whole.data() + rank_ * part * cols, sizeof(float) * size_t(part * cols));
    } else {
      const int64_t part = cols / size_;
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(out + r * part, whole.data() + r * cols + rank_ * part,
                    sizeof(float) * size_t(part));
    }
    return {};
  }
  bool read_f32_rows(const std::string &name, int64_t row0, int64_t rows,
                     float *out) const override {
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_f32_rows(name, row0, rows, out);
    // Rows of a dim-0 split are rows of the whole tensor, offset.
    return it->second.dim == 0 &&
           base_->read_f32_rows(name, rank_ * it->second.shape[0] / size_ + row0, rows, out);
  }
  bool read_int8_channel(const std::string &name, int8_t *q, float *scale) const override {
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_int8_channel(name, q, scale);
    // A row split keeps each row's int8 values and scale; a column split
    // would need each part's own scale: re-quantized from fp32 instead.
    const Split &s = it->second;
    if (s.dim != 0 || s.shape.size() != 2)
      return false;
    const int64_t n = s.shape[0], k = s.shape[1], part = n / size_;
    std::vector<int8_t> wq(size_t(n * k));
    std::vector<float> ws(static_cast<size_t>(n));
    if (!base_->read_int8_channel(name, wq.data(), ws.data()))
      return false;
    std::memcpy(q, wq.data() + rank_ * part * k, size_t(part * k));
    std::memcpy(scale, ws.data() + rank_ * part, sizeof(float) * size_t(part));
    return true;
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
    int64_t dim;
    std::vector<int64_t> shape; ///< the whole tensor's
  };
  std::unique_ptr<models::WeightSource> base_;
  int64_t rank_, size_;
  std::vector<models::WeightInfo> infos_;
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<std::string, Split> splits_;
};

} // namespace

std::unique_ptr<models::WeightSource>
shardWeights(std::unique_ptr<models::WeightSource> base,
             const std::map<std::string, int64_t> &splits, int64_t rank, int64_t size,
             std::string &error) {
  if (size < 1 || rank < 0 || rank >= size) {
    error = "tensor parallel: rank " + std::to_string(rank) + " of " + std::to_string(size);
    return nullptr;
  }
  auto source = std::make_unique<ShardedWeightSource>(std::move(base), rank, size);
  for (const auto &[name, dim] : splits)
    if (!source->split(name, dim, error))
      return nullptr;
  return source;
}

} // namespace hyc::compiler
