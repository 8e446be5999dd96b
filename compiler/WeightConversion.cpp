//===- WeightConversion.cpp - checkpoint tensors -> artifact bytes --------===//

#include "compiler/WeightConversion.h"

#include "codegen/pack.h"
#include "hyrt/gemm_layout.h"
#include "models/checkpoint/fp8.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace hyc::compiler {

namespace {

int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Reads one checkpoint tensor as fp32, checking its size.
bool readTensor(const models::Checkpoint &ckpt, const std::string &name,
                int64_t numel, float *out, std::string &error) {
  const models::WeightInfo *info = ckpt.weights->find(name);
  if (!info) {
    error = "checkpoint " + ckpt.source + " has no tensor '" + name +
            "' that the model definition uses";
    return false;
  }
  if (numelOf(info->shape) != numel) {
    error = "tensor '" + name + "' has " + std::to_string(numelOf(info->shape)) +
            " elements in " + ckpt.source + ", the model uses " +
            std::to_string(numel);
    return false;
  }
  auto status = ckpt.weights->read_f32(name, out);
  if (!status.ok()) {
    error = status.error();
    return false;
  }
  return true;
}

/// The tensors a `<prefix>{a,b,...}<suffix>` name concatenates along rows
/// (hyc-global-fuse-gate-up-silu names its [gate; up] weight this way);
/// empty for a plain name.
std::vector<std::string> braceAlternatives(const std::string &name) {
  size_t open = name.find('{'), close = name.find('}', open);
  if (open == std::string::npos || close == std::string::npos)
    return {};
  std::vector<std::string> out;
  std::string body = name.substr(open + 1, close - open - 1);
  for (size_t begin = 0;;) {
    size_t comma = body.find(',', begin);
    out.push_back(name.substr(0, open) + body.substr(begin, comma - begin) +
                  name.substr(close + 1));
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  return out;
}

/// One matrix: a checkpoint tensor, or the row concatenation of the tensors
/// of a brace name (equal parts).
bool readMatrix(const models::Checkpoint &ckpt, const std::string &name,
                int64_t numel, float *out, std::string &error) {
  std::vector<std::string> parts = braceAlternatives(name);
  if (parts.empty())
    return readTensor(ckpt, name, numel, out, error);
  const int64_t each = numel / int64_t(parts.size());
  for (size_t i = 0; i < parts.size(); ++i)
    if (!readTensor(ckpt, parts[i], each, out + int64_t(i) * each, error))
      return false;
  return true;
}

/// An expert stack's name: `<prefix>experts.*.<proj>` (experts 0, 1, ...)
/// or `<prefix>experts.*+F.<proj>` (an expert-parallel rank's experts F,
/// F + 1, ...; hyc-global-shard names them so). Returns where the marker
/// starts and its length, and F; npos for any other name.
size_t expertMarker(const std::string &name, size_t &length, int64_t &first) {
  const size_t at = name.find("experts.*");
  if (at == std::string::npos)
    return at;
  size_t p = at + 9;
  first = 0;
  if (p < name.size() && name[p] == '+') {
    size_t digits = ++p;
    while (p < name.size() && std::isdigit(static_cast<unsigned char>(name[p])))
      ++p;
    if (p == digits)
      return std::string::npos;
    first = std::stoll(name.substr(digits, p - digits));
  }
  if (p >= name.size() || name[p] != '.')
    return std::string::npos;
  length = p + 1 - at;
  return at;
}

/// A weight of the table: a checkpoint tensor (or a brace concatenation),
/// or experts stacked into [E, N, K] when the name has an expert marker
/// (expertMarker).
bool readWeight(const models::Checkpoint &ckpt, const PlannedWeight &w,
                float *out, std::string &error) {
  size_t length = 0;
  int64_t first = 0;
  size_t at = expertMarker(w.name, length, first);
  if (at == std::string::npos)
    return readMatrix(ckpt, w.name, numelOf(w.shape), out, error);
  std::string prefix = w.name.substr(0, at) + "experts.";
  std::string suffix = w.name.substr(at + length);
  int64_t experts = w.shape.front();
  int64_t perExpert = numelOf(w.shape) / experts;
  for (int64_t e = 0; e < experts; ++e)
    if (!readMatrix(ckpt, prefix + std::to_string(first + e) + "." + suffix, perExpert,
                    out + e * perExpert, error))
      return false;
  return true;
}

/// One [n, k] matrix as the checkpoint stores it in channel-INT8 (a brace
/// name: each part); false when any part is stored otherwise.
bool readStoredInt8Matrix(const models::Checkpoint &ckpt, const std::string &name,
                          int64_t n, int64_t k, int8_t *q, float *scale) {
  std::vector<std::string> parts = braceAlternatives(name);
  if (parts.empty())
    parts.push_back(name);
  const int64_t rows = n / int64_t(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const models::WeightInfo *info = ckpt.weights->find(parts[i]);
    if (!info || info->shape != std::vector<int64_t>{rows, k} ||
        !ckpt.weights->read_int8_channel(parts[i], q + int64_t(i) * rows * k,
                                         scale + int64_t(i) * rows))
      return false;
  }
  return true;
}

/// The bytes of one int8 [n][k] matrix with its scales ([n][groups]; group
/// 0: one per row) as a W8A8 entry stores them: the scales for a ".scale"
/// entry, else the int8 values in the entry's layout.
void int8MatrixBytes(const int8_t *q, const float *scale, int64_t n, int64_t k, int64_t group,
                     const std::string &layout, bool scaleEntry, std::vector<uint8_t> &bytes) {
  auto append = [&](const void *p, size_t size) {
    bytes.insert(bytes.end(), static_cast<const uint8_t *>(p),
                 static_cast<const uint8_t *>(p) + size);
  };
  auto appendPacked = [&](const codegen::PackedB &p) {
    append(p.data.data(), size_t(p.n_panels * p.panel_bytes));
  };
  if (scaleEntry)
    append(scale, size_t(n * (group ? (k + group - 1) / group : 1)) * sizeof(float));
  else if (layout == "s8_vnni4")
    appendPacked(codegen::pack_b_s8(q, n, k, k));
  else if (layout == "s8_vnni4_g128")
    appendPacked(codegen::pack_b_s8_grouped(q, n, k, k, group));
  else
    append(q, size_t(n * k));
}

/// The checkpoint name of matrix (expert e, part i) of a table entry: the
/// expert-stack and brace syntax resolved.
std::string matrixName(const std::string &base, int64_t e, int64_t i) {
  std::string name = base;
  size_t length = 0;
  int64_t first = 0;
  if (size_t at = expertMarker(name, length, first); at != std::string::npos)
    name.replace(at, length, "experts." + std::to_string(first + e) + ".");
  if (std::vector<std::string> parts = braceAlternatives(name); !parts.empty())
    name = parts[size_t(i)];
  return name;
}

/// One [n, k] FP8 matrix: e4m3 codes and 128 x 128 block factors as the
/// checkpoint stores them (DeepSeek FP8, kept bit for bit), else quantized
/// from its fp32 values.
bool fp8Matrix(const models::Checkpoint &ckpt, const std::string &name, int64_t n, int64_t k,
               models::Fp8BlockQuant &q, std::string &error) {
  const int64_t blocks = ((n + 127) / 128) * ((k + 127) / 128);
  const models::WeightInfo *info = ckpt.weights->find(name);
  if (info && info->shape == std::vector<int64_t>{n, k}) {
    q.codes.resize(size_t(n * k));
    q.scale_inv.resize(size_t(blocks));
    if (ckpt.weights->read_fp8_block(name, q.codes.data(), q.scale_inv.data()))
      return true;
  }
  std::vector<float> f32(size_t(n * k));
  if (!readTensor(ckpt, name, n * k, f32.data(), error))
    return false;
  q = models::quantize_fp8_block(f32.data(), n, k, 128, 128);
  return true;
}

/// The bytes of one FP8 matrix: its block factors for a ".scale" entry,
/// else its codes packed ("f8_vnni2") or row-major ("f8e4m3").
bool fp8MatrixBytes(const models::Fp8BlockQuant &q, int64_t n, int64_t k,
                    const std::string &layout, bool scaleEntry, std::vector<uint8_t> &bytes,
                    std::string &error) {
  auto append = [&](const void *p, size_t size) {
    bytes.insert(bytes.end(), static_cast<const uint8_t *>(p),
                 static_cast<const uint8_t *>(p) + size);
  };
  if (scaleEntry) {
    append(q.scale_inv.data(), q.scale_inv.size() * sizeof(float));
  } else if (layout == "f8_vnni2") {
    const codegen::PackedB p = codegen::pack_b_f8(q.codes.data(), n, k, k);
    append(p.data.data(), size_t(p.n_panels * p.panel_bytes));
  } else if (layout == "f8e4m3") {
    append(q.codes.data(), q.codes.size());
  } else {
    error = "unknown fp8 weight layout '" + layout + "'";
    return false;
  }
  return true;
}

/// Integer codes ("q4g32", "q8g32"): the bits of a derivation, else 0.
int codeBits(const std::string &derivation) {
  return derivation == "q4g32" ? 4 : derivation == "q8g32" ? 8 : 0;
}

/// One [n, k] matrix as packed integer codes with their fp16 scales per 32
/// K-elements (codegen/pack.h pack_b_grouped): the checkpoint's own codes
/// where it stores them (GGUF Q4_0 / Q8_0, bit for bit), else quantized
/// from fp32 `w` (read here when null). K is padded to whole groups with
/// zero weights.
bool codesMatrixBytes(const models::Checkpoint *ckpt, const std::string &name, const float *w,
                      int64_t n, int64_t k, int bits, std::vector<uint8_t> &bytes,
                      std::string &error) {
  constexpr int64_t kGroup = 32;
  const int64_t kp = (k + kGroup - 1) / kGroup * kGroup, groups = kp / kGroup;
  std::vector<uint8_t> codes(size_t(n * kp));
  std::vector<uint16_t> scales(size_t(n * groups));
  const models::WeightInfo *info = ckpt ? ckpt->weights->find(name) : nullptr;
  const bool stored = info && info->shape == std::vector<int64_t>{n, k} && kp == k &&
                      ckpt->weights->read_codes_g32(name, bits, codes.data(), scales.data());
  if (!stored) {
    std::vector<float> f32(size_t(n * kp), 0.0f);
    std::vector<float> read;
    if (!w) {
      read.resize(size_t(n * k));
      if (!readTensor(*ckpt, name, n * k, read.data(), error))
        return false;
      w = read.data();
    }
    for (int64_t r = 0; r < n; ++r)
      std::copy(w + r * k, w + (r + 1) * k, f32.begin() + r * kp);
    codegen::quantize_grouped(f32.data(), n, kp, kp, bits, kGroup, /*asymmetric=*/false,
                              codes.data(), scales.data(), nullptr);
  }
  const codegen::PackedB p =
      codegen::pack_b_grouped(codes.data(), n, kp, kp, bits, kGroup, scales.data(), nullptr);
  bytes.insert(bytes.end(), p.data.data(), p.data.data() + size_t(p.n_panels * p.panel_bytes));
  return true;
}

/// Stored integer-code formats ("q4k", "q5k", "q6k", "iq4xs", "iq4nl",
/// "q4z", "q4_1", "q5_1", "q4z128": the layout names of hyrt/gemm_layout.h): their
/// scheme id, else -1.
int32_t storedCodesScheme(const std::string &derivation) {
  const int32_t s = hyrt_gemm_code_scheme_of_layout(derivation.data(), derivation.size());
  return s > HYRT_GEMM_W8A8_G32 ? s : -1;
}

/// One [n, k] matrix the checkpoint stores as integer codes, packed with
/// its scales exactly as stored (models/checkpoint/model_spec.h
/// StoredCodes, codegen/pack.h). There is no fallback: a format is only
/// chosen for weights that store it (a tensor-parallel rank's part in it
/// when the policy saw that the part keeps whole scale blocks:
/// ShardedWeights.h), so a mismatch is an internal error, said by name.
bool storedCodesMatrixBytes(const models::Checkpoint &ckpt, const std::string &name,
                            int64_t n, int64_t k, const std::string &format,
                            std::vector<uint8_t> &bytes, std::string &error) {
  models::StoredCodes c;
  if (!ckpt.weights->read_stored_codes(name, c) || c.format != format || c.n != n ||
      c.k != k) {
    error = "weight '" + name + "': the artifact keeps it as stored " + format +
            " codes, but the checkpoint gives " +
            (c.format.empty() ? std::string("none") : c.format + " codes") +
            (c.format.empty() ? "" : " of [" + std::to_string(c.n) + ", " +
                                         std::to_string(c.k) + "]") +
            " for [" + std::to_string(n) + ", " + std::to_string(k) + "]";
    return false;
  }
  const hyrt_code_format f = hyrt_gemm_code_format(storedCodesScheme(format));
  try {
    codegen::PackedB p =
        f.super_group
            ? codegen::pack_b_grouped_two_level(
                  c.codes.data(), n, k, k,
                  codegen::GroupedFormat{f.bits, f.group, f.super_group, bool(f.asymmetric),
                                         f.codebook ? codegen::Codebook::iq4nl
                                                    : codegen::Codebook::none},
                  c.sub_scales.data(), f.asymmetric ? c.sub_mins.data() : nullptr,
                  c.d.data(), f.asymmetric ? c.dmin.data() : nullptr)
            // One-level: d per group (IQ4_NL through its codebook; Q4_1 /
            // Q5_1 with dmin = -m, their min per group).
            : codegen::pack_b_grouped(
                  c.codes.data(), n, k, k,
                  codegen::GroupedFormat{f.bits, f.group, 0, bool(f.asymmetric),
                                         f.codebook ? codegen::Codebook::iq4nl
                                                    : codegen::Codebook::none},
                  c.d.data(), f.asymmetric ? c.dmin.data() : nullptr);
    bytes.insert(bytes.end(), p.data.data(), p.data.data() + size_t(p.n_panels * p.panel_bytes));
  } catch (const std::invalid_argument &e) {
    error = "weight '" + name + "': " + e.what();
    return false;
  }
  return true;
}

/// The bytes of one [N][K] matrix (or, for "#w8a8.scale", its scales) in
/// the entry's layout, appended to `bytes`.
bool matrixBytes(const float *w, int64_t n, int64_t k, const std::string &layout,
                 const std::string &derivation, std::vector<uint8_t> &bytes,
                 std::string &error) {
  auto append = [&](const uint8_t *p, size_t size) {
    bytes.insert(bytes.end(), p, p + size);
  };
  auto appendPacked = [&](const codegen::PackedB &p) {
    append(p.data.data(), size_t(p.n_panels * p.panel_bytes));
  };
  // W8A8: symmetric int8 per row ("w8a8") or per row and group of 128
  // K-elements ("w8a8g128"); ".scale" entries hold the scales.
  if (derivation.rfind("w8a8", 0) == 0) {
    const bool scaleEntry = derivation.size() > 6 &&
                            derivation.compare(derivation.size() - 6, 6, ".scale") == 0;
    const std::string scheme = scaleEntry ? derivation.substr(0, derivation.size() - 6)
                                          : derivation;
    if (scheme != "w8a8" && scheme != "w8a8g128") {
      error = "unknown weight derivation '" + derivation + "'";
      return false;
    }
    const int64_t group = scheme == "w8a8g128" ? 128 : 0;
    const int64_t width = group ? group : k;
    std::vector<int8_t> q(size_t(n * k));
    std::vector<float> scale(size_t(n * ((k + width - 1) / width)));
    codegen::quantize_s8_per_group(w, n, k, k, width, q.data(), scale.data());
    int8MatrixBytes(q.data(), scale.data(), n, k, group, layout, scaleEntry, bytes);
    return true;
  }
  // "bf16": the tensor rounded to bf16, stored as the layout says.
  if (!derivation.empty() && derivation != "bf16") {
    error = "unknown weight derivation '" + derivation + "'";
    return false;
  }
  if (layout == "bf16_as_f32") {
    for (int64_t i = 0; i < n * k; ++i) {
      float r = codegen::bf16_to_f32(codegen::f32_to_bf16(w[i]));
      append(reinterpret_cast<const uint8_t *>(&r), 4);
    }
  } else if (layout == "bf16") { // row-major bf16 (MLA's kv_b on kernels)
    for (int64_t i = 0; i < n * k; ++i) {
      const uint16_t h = codegen::f32_to_bf16(w[i]);
      append(reinterpret_cast<const uint8_t *>(&h), 2);
    }
  } else if (layout == "f32_k1")
    appendPacked(codegen::pack_b_f32(w, n, k, k));
  else if (layout == "bf16_vnni2")
    appendPacked(codegen::pack_b_bf16_from_f32(w, n, k, k));
  else {
    error = "unknown weight layout '" + layout + "'";
    return false;
  }
  return true;
}

/// An entry's name split at '#': the checkpoint tensor and the derivation.
void splitName(const std::string &name, std::string &base, std::string &derivation) {
  base = name;
  derivation.clear();
  if (size_t hash = name.find('#'); hash != std::string::npos) {
    base = name.substr(0, hash);
    derivation = name.substr(hash + 1);
  }
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The bytes of an fp32 [rows, k] matrix as entry `layout` / `derivation`
/// stores it: FP8 or W8A8 quantized here, or the values rounded / packed by
/// the layout.
bool convertF32Matrix(const float *w, int64_t rows, int64_t k, const std::string &layout,
                      const std::string &derivation, std::vector<uint8_t> &bytes,
                      std::string &error) {
  if (derivation == "fp8" || derivation == "fp8.scale")
    return fp8MatrixBytes(models::quantize_fp8_block(w, rows, k, 128, 128), rows, k, layout,
                          derivation == "fp8.scale", bytes, error);
  if (int bits = codeBits(derivation))
    return codesMatrixBytes(nullptr, "", w, rows, k, bits, bytes, error);
  if (layout == "f32" && derivation.empty()) {
    const auto *p = reinterpret_cast<const uint8_t *>(w);
    bytes.insert(bytes.end(), p, p + size_t(rows * k) * sizeof(float));
    return true;
  }
  return matrixBytes(w, rows, k, layout, derivation, bytes, error);
}

/// The bytes of checkpoint matrix `name` ([rows, k]) as the entry stores
/// it: an FP8 or channel-INT8 checkpoint's own numbers where the scheme
/// keeps them, else its fp32 values converted.
bool matrixChunk(const models::Checkpoint &ckpt, const std::string &name, int64_t rows,
                 int64_t k, const std::string &layout, const std::string &derivation,
                 std::vector<uint8_t> &bytes, std::string &error) {
  if (derivation == "fp8" || derivation == "fp8.scale") {
    models::Fp8BlockQuant q;
    return fp8Matrix(ckpt, name, rows, k, q, error) &&
           fp8MatrixBytes(q, rows, k, layout, derivation == "fp8.scale", bytes, error);
  }
  if (int bits = codeBits(derivation))
    return codesMatrixBytes(&ckpt, name, nullptr, rows, k, bits, bytes, error);
  if (storedCodesScheme(derivation) >= 0)
    return storedCodesMatrixBytes(ckpt, name, rows, k, derivation, bytes, error);
  if (derivation == "w8a8" || derivation == "w8a8.scale") {
    std::vector<int8_t> q(size_t(rows * k));
    std::vector<float> scale(static_cast<size_t>(rows));
    if (readStoredInt8Matrix(ckpt, name, rows, k, q.data(), scale.data())) {
      int8MatrixBytes(q.data(), scale.data(), rows, k, 0, layout, derivation == "w8a8.scale",
                      bytes);
      return true;
    }
  }
  std::vector<float> f32(size_t(rows * k));
  return readTensor(ckpt, name, rows * k, f32.data(), error) &&
         convertF32Matrix(f32.data(), rows, k, layout, derivation, bytes, error);
}

} // namespace

bool planEntryChunks(const models::Checkpoint &ckpt, const PlannedWeight &w,
                     std::vector<ChunkFn> &chunks, std::string &error,
                     int64_t sliceElements) {
  chunks.clear();
  std::string base, derivation;
  splitName(w.name, base, derivation);
  // "copy": the same tensor stored again for another reader (a tied
  // embedding table used as the lm_head gets its own packed copy).
  if (derivation == "copy")
    derivation.clear();
  // Scales are [..., N] (per channel), [..., N, groups] (per group) or
  // [..., row blocks, K blocks] (FP8): the matrices they come from are
  // [..., N, K], which the checkpoint (or, for stacked experts, its expert
  // 0; for a brace name, its first part) tells.
  std::vector<int64_t> shape = w.shape;
  const int64_t parts = std::max<int64_t>(1, int64_t(braceAlternatives(base).size()));
  if (endsWith(derivation, ".scale")) {
    const std::string probe = matrixName(base, 0, 0);
    const models::WeightInfo *info = ckpt.weights->find(probe);
    if (!info || info->shape.size() != 2) {
      error = "checkpoint has no 2-D tensor '" + probe + "' for the scales of " + base;
      return false;
    }
    if (derivation == "w8a8.scale")
      shape.push_back(info->shape[1]);
    else
      shape.end()[-2] = parts * info->shape[0], shape.back() = info->shape[1];
    if (derivation != "w8a8.scale" && derivation != "w8a8g128.scale" &&
        derivation != "fp8.scale") {
      error = "unknown weight derivation '" + derivation + "'";
      return false;
    }
  }
  size_t markerLength = 0;
  int64_t firstExpert = 0;
  const bool stacked = expertMarker(base, markerLength, firstExpert) != std::string::npos;
  const bool plainF32 = w.layout == "f32" && derivation.empty();
  // Rank-2 matrices and expert stacks go matrix by matrix; anything else
  // (norm vectors, rank-3 tensors of one checkpoint tensor) whole.
  if ((shape.size() == 2 && !stacked) || (shape.size() == 3 && stacked)) {
    const int64_t experts = shape.size() == 3 ? shape[0] : 1;
    const int64_t n = shape[shape.size() - 2], k = shape.back(), rows = n / parts;
    const std::string layout = w.layout, d = derivation;
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t i = 0; i < parts; ++i) {
        const std::string name = matrixName(base, e, i);
        // A large matrix stored plainly (an embedding table or lm_head of
        // a big vocabulary) in slices of whole 128-row blocks, so that
        // every core converts a part of it: each derivation works row by
        // row, per 32-row panel or per 128-row FP8 block.
        // Integer codes are converted whole: a stored Q4_0 / Q8_0 tensor
        // keeps its own codes (a row slice would re-quantize its values).
        float probe = 0;
        if (rows * k > sliceElements && !codeBits(d) && storedCodesScheme(d) < 0 &&
            ckpt.weights->read_f32_rows(name, 0, 0, &probe)) {
          const int64_t slice = std::max<int64_t>(128, sliceElements / k / 128 * 128);
          for (int64_t r0 = 0; r0 < rows; r0 += slice)
            chunks.push_back([&ckpt, name, r0, n = std::min(slice, rows - r0), k, layout,
                              d](std::vector<uint8_t> &bytes, std::string &err) {
              std::vector<float> f32(size_t(n * k));
              if (!ckpt.weights->read_f32_rows(name, r0, n, f32.data())) {
                err = "cannot read rows " + std::to_string(r0) + ".." +
                      std::to_string(r0 + n) + " of '" + name + "'";
                return false;
              }
              return convertF32Matrix(f32.data(), n, k, layout, d, bytes, err);
            });
          continue;
        }
        chunks.push_back([&ckpt, name, rows, k, layout, d](std::vector<uint8_t> &bytes,
                                                           std::string &err) {
          return matrixChunk(ckpt, name, rows, k, layout, d, bytes, err);
        });
      }
    return true;
  }
  if (!plainF32 && shape.size() != 3) {
    error = "weight '" + w.name + "' of rank " + std::to_string(shape.size()) +
            " cannot take layout " + w.layout +
            (derivation.empty() ? "" : " with derivation '" + derivation + "'");
    return false;
  }
  // One checkpoint tensor, read whole; a rank-3 one converted matrix by
  // matrix.
  chunks.push_back([&ckpt, base, shape, layout = w.layout, derivation](
                       std::vector<uint8_t> &bytes, std::string &err) {
    std::vector<float> f32(size_t(numelOf(shape)));
    if (!readWeight(ckpt, PlannedWeight{base, shape, "f32"}, f32.data(), err))
      return false;
    if (shape.size() != 3)
      return convertF32Matrix(f32.data(), 1, int64_t(f32.size()), layout, derivation, bytes,
                              err);
    const int64_t n = shape[1], k = shape[2];
    for (int64_t e = 0; e < shape[0]; ++e)
      if (!convertF32Matrix(f32.data() + e * n * k, n, k, layout, derivation, bytes, err))
        return false;
    return true;
  });
  return true;
}

} // namespace hyc::compiler
