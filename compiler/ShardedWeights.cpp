// A tensor-parallel rank's slices of the checkpoint (see ShardedWeights.h).
#include "compiler/ShardedWeights.h"

#include "hyrt/gemm_layout.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
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
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_codes_g32(name, bits, codes, scales);
    // The part's rows (padding rows: scale 0, so zero weights), or its
    // columns when they are whole groups of 32.
    const Split &s = it->second;
    Window w;
    if (!window(s, kCodeGroup, w))
      return false;
    const int64_t n = s.shape[0], k = s.shape[1];
    std::vector<uint8_t> wc(size_t(n * k));
    std::vector<uint16_t> ws(size_t(n * k / kCodeGroup));
    if (!base_->read_codes_g32(name, bits, wc.data(), ws.data()))
      return false;
    for (int64_t r = 0; r < w.rows; ++r) {
      const int64_t from = w.row0 + r;
      uint8_t *c = codes + r * w.cols;
      uint16_t *sc = scales + r * (w.cols / kCodeGroup);
      if (from >= n) {
        std::fill(c, c + w.cols, uint8_t(0));
        std::fill(sc, sc + w.cols / kCodeGroup, uint16_t(0));
        continue;
      }
      std::memcpy(c, wc.data() + from * k + w.col0, size_t(w.cols));
      std::memcpy(sc, ws.data() + (from * k + w.col0) / kCodeGroup,
                  sizeof(uint16_t) * size_t(w.cols / kCodeGroup));
    }
    return true;
  }
  std::string stored_codes_format(const std::string &name) const override {
    std::string format = base_->stored_codes_format(name);
    auto it = splits_.find(name);
    if (it == splits_.end() || format.empty())
      return format;
    Window w;
    if (window(it->second, unitOf(format), w))
      return format;
    return format == "q4k" && window(it->second, kHalfSuper, w) ? "q4z" : "";
  }
  bool read_stored_codes(const std::string &name, models::StoredCodes &out) const override {
    auto it = splits_.find(name);
    if (it == splits_.end())
      return base_->read_stored_codes(name, out);
    models::StoredCodes whole;
    Window w;
    const Split &s = it->second;
    if (!base_->read_stored_codes(name, whole) || s.shape.size() != 2 ||
        whole.n != s.shape[0] || whole.k != s.shape[1] ||
        whole.codes.size() != size_t(whole.n * whole.k))
      return false; // not the matrix the split was planned on
    if (window(it->second, unitOf(whole.format), w)) {
      slice(whole, w, out);
      return true;
    }
    if (whole.format != "q4k" || !window(it->second, kHalfSuper, w))
      return false;
    // Q4_K cut at a half super-block: q4z (d, dmin per 128; sc, m per 32)
    // holds each half with its super-block's d and dmin, exactly.
    for (std::vector<uint16_t> *f : {&whole.d, &whole.dmin}) {
      std::vector<uint16_t> halves(f->size() * 2);
      for (size_t i = 0; i < halves.size(); ++i)
        halves[i] = (*f)[i / 2];
      *f = std::move(halves);
    }
    whole.format = "q4z";
    slice(whole, w, out);
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
    ShardSpec spec;
    std::vector<int64_t> shape; ///< the stored tensor's
  };
  /// The part of a split [N, K] matrix: rows [row0, row0 + rows) (those
  /// past N are padding) and columns [col0, col0 + cols).
  struct Window {
    int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  };
  static constexpr int64_t kCodeGroup = HYRT_GEMM_CODE_GROUP;
  static constexpr int64_t kHalfSuper = 128; ///< q4z's d / dmin block

  /// K elements a stored-codes format's scales are whole in (its
  /// super-block, else its group), 0 for an unknown format.
  static int64_t unitOf(const std::string &format) {
    const int32_t scheme = hyrt_gemm_code_scheme_of_layout(format.data(), format.size());
    return scheme < 0 ? 0 : hyrt_gemm_code_unit(scheme);
  }

  /// The window of a split matrix whose codes keep their scales: any row
  /// part (padding rows are zero weights), a column part only when it is
  /// whole `unit`s of stored columns (a cut super-block would need new
  /// scales, padding columns codes of their own). False otherwise.
  static bool window(const Split &s, int64_t unit, Window &w) {
    if (s.shape.size() != 2 || unit <= 0)
      return false;
    const int64_t part = s.spec.whole / s.spec.parts, first = s.spec.index * part;
    w = {0, s.shape[0], 0, s.shape[1]};
    if (s.spec.dim == 0) {
      w.row0 = first, w.rows = part;
      return s.shape[1] % unit == 0;
    }
    w.col0 = first, w.cols = part;
    return s.spec.whole == s.shape[1] && part % unit == 0;
  }

  /// `out` = window `w` of `in`, scales and all (padding rows all zero).
  static void slice(const models::StoredCodes &in, const Window &w, models::StoredCodes &out) {
    const int32_t scheme = hyrt_gemm_code_scheme_of_layout(in.format.data(), in.format.size());
    const hyrt_code_format f = hyrt_gemm_code_format(scheme);
    const int64_t group = f.group, super = hyrt_gemm_code_unit(scheme);
    out = models::StoredCodes();
    out.format = in.format;
    out.n = w.rows, out.k = w.cols;
    // Each [N][K / step] field: the window's columns of its stored rows.
    auto rowsOf = [&](const auto &src, auto &dst, int64_t step) {
      using T = typename std::decay_t<decltype(src)>::value_type;
      if (src.empty())
        return;
      const int64_t perRow = in.k / step, take = w.cols / step;
      dst.assign(size_t(w.rows * take), T(0));
      for (int64_t r = 0; r < w.rows && w.row0 + r < in.n; ++r)
        std::copy_n(src.begin() + (w.row0 + r) * perRow + w.col0 / step, take,
                    dst.begin() + r * take);
    };
    rowsOf(in.codes, out.codes, 1);
    rowsOf(in.sub_scales, out.sub_scales, group);
    rowsOf(in.sub_mins, out.sub_mins, group);
    rowsOf(in.d, out.d, super);
    rowsOf(in.dmin, out.dmin, super);
  }

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
