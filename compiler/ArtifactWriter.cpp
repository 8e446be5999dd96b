//===- ArtifactWriter.cpp - weights.bin, manifest.json, tokenizer ---------===//

#include "compiler/ArtifactWriter.h"

#include "codegen/pack.h"
#include "models/checkpoint/fp8.h"
#include "hyrt/abi.h"
#include "hyrt/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace hyc::compiler {

namespace {
constexpr int64_t kAlign = 64;

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

/// A weight of the table: a checkpoint tensor (or a brace concatenation),
/// or experts stacked into [E, N, K] when the name has the form
/// `<prefix>experts.*.<proj>`.
bool readWeight(const models::Checkpoint &ckpt, const PlannedWeight &w,
                float *out, std::string &error) {
  const std::string marker = "experts.*.";
  size_t at = w.name.find(marker);
  if (at == std::string::npos)
    return readMatrix(ckpt, w.name, numelOf(w.shape), out, error);
  std::string prefix = w.name.substr(0, at) + "experts.";
  std::string suffix = w.name.substr(at + marker.size());
  int64_t experts = w.shape.front();
  int64_t perExpert = numelOf(w.shape) / experts;
  for (int64_t e = 0; e < experts; ++e)
    if (!readMatrix(ckpt, prefix + std::to_string(e) + "." + suffix, perExpert,
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

/// A W8A8 weight [.., N, K] (expert stacks included) as the checkpoint
/// stores it in channel-INT8: its int8 values and scales kept bit for bit
/// rather than re-quantized from their fp32 product (which changes every
/// row whose largest |q| is not 127). False when it is stored otherwise.
bool readStoredInt8(const models::Checkpoint &ckpt, const std::string &name,
                    const std::vector<int64_t> &shape, std::vector<int8_t> &q,
                    std::vector<float> &scale) {
  if (shape.size() < 2)
    return false;
  const int64_t n = shape[shape.size() - 2], k = shape.back();
  const int64_t experts = shape.size() == 3 ? shape[0] : 1;
  q.resize(size_t(experts * n * k));
  scale.resize(size_t(experts * n));
  const std::string marker = "experts.*.";
  const size_t at = name.find(marker);
  if (at == std::string::npos)
    return experts == 1 && readStoredInt8Matrix(ckpt, name, n, k, q.data(), scale.data());
  for (int64_t e = 0; e < experts; ++e)
    if (!readStoredInt8Matrix(ckpt,
                              name.substr(0, at) + "experts." + std::to_string(e) + "." +
                                  name.substr(at + marker.size()),
                              n, k, q.data() + e * n * k, scale.data() + e * n))
      return false;
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
  if (size_t at = name.find("experts.*."); at != std::string::npos)
    name.replace(at, 10, "experts." + std::to_string(e) + ".");
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

/// The bytes of one table entry: the checkpoint tensor (or the tensor
/// derived from it) in its layout. [E][N][K] expert stacks are converted
/// expert by expert and concatenated.
bool weightBytes(const models::Checkpoint &ckpt, const PlannedWeight &w,
                 std::vector<uint8_t> &bytes, std::string &error) {
  bytes.clear();
  std::string base = w.name, derivation;
  if (size_t hash = w.name.find('#'); hash != std::string::npos) {
    base = w.name.substr(0, hash);
    derivation = w.name.substr(hash + 1);
  }
  // Scales are [..., N]: the source matrix has one more dim, K, which the
  // checkpoint (or, for stacked experts, its expert 0) tells.
  std::vector<int64_t> shape = w.shape;
  if (derivation == "w8a8.scale" || derivation == "w8a8g128.scale" ||
      derivation == "fp8.scale") {
    std::string probe = base;
    if (size_t at = probe.find("experts.*."); at != std::string::npos)
      probe.replace(at, 10, "experts.0.");
    if (std::vector<std::string> parts = braceAlternatives(probe); !parts.empty())
      probe = parts.front();
    const models::WeightInfo *info = ckpt.weights->find(probe);
    if (!info || info->shape.size() != 2) {
      error = "checkpoint has no 2-D tensor '" + probe + "' for the scales of " + base;
      return false;
    }
    if (derivation == "w8a8g128.scale") {
      shape.back() = info->shape[1]; // [.., N, groups] -> [.., N, K]
    } else if (derivation == "fp8.scale") {
      // [.., row blocks, K blocks] -> [.., N, K]: parts of n rows each.
      const int64_t parts = std::max<size_t>(1, braceAlternatives(base).size());
      shape.end()[-2] = parts * info->shape[0];
      shape.back() = info->shape[1];
    } else {
      shape.push_back(info->shape[1]);
    }
  }
  // Every [rows, K] matrix the entry converts, in storage order: expert by
  // expert, and a brace name's parts one after the other, each in the
  // layout on its own (a packed [gate; up] weight is two packed matrices).
  // `row` is the matrix's first row in the [.., N, K] tensor.
  const int64_t n = shape.size() >= 2 ? shape[shape.size() - 2] : 0;
  const int64_t k = shape.empty() ? 0 : shape.back();
  const int64_t experts = shape.size() == 3 ? shape[0] : 1;
  const int64_t parts = std::max<int64_t>(1, int64_t(braceAlternatives(base).size()));
  auto eachMatrix = [&](auto &&fn) {
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t i = 0; i < parts; ++i)
        if (!fn(e * n + i * (n / parts), n / parts))
          return false;
    return true;
  };
  // FP8: each matrix's codes and block factors, as stored or quantized.
  if (derivation == "fp8" || derivation == "fp8.scale") {
    const int64_t rowsPerPart = n / parts;
    return eachMatrix([&](int64_t row, int64_t rows) {
      models::Fp8BlockQuant q;
      const int64_t e = row / n, i = (row % n) / rowsPerPart;
      return fp8Matrix(ckpt, matrixName(base, e, i), rows, k, q, error) &&
             fp8MatrixBytes(q, rows, k, w.layout, derivation == "fp8.scale", bytes, error);
    });
  }
  // Channel-INT8 checkpoints under per-channel W8A8: their own numbers.
  if (derivation == "w8a8" || derivation == "w8a8.scale") {
    std::vector<int8_t> q;
    std::vector<float> scale;
    if (readStoredInt8(ckpt, base, shape, q, scale))
      return eachMatrix([&](int64_t row, int64_t rows) {
        int8MatrixBytes(q.data() + row * k, scale.data() + row, rows, k, 0, w.layout,
                        derivation == "w8a8.scale", bytes);
        return true;
      });
  }
  std::vector<float> f32(size_t(numelOf(shape)));
  if (!readWeight(ckpt, PlannedWeight{base, shape, "f32"}, f32.data(), error))
    return false;
  // "copy": the same tensor stored again for another reader (a tied
  // embedding table used as the lm_head gets its own packed copy).
  if (derivation == "copy")
    derivation.clear();
  if (w.layout == "f32" && derivation.empty()) {
    bytes.resize(f32.size() * 4);
    std::memcpy(bytes.data(), f32.data(), bytes.size());
    return true;
  }
  if (shape.size() != 2 && shape.size() != 3) {
    error = "weight '" + w.name + "' of rank " + std::to_string(shape.size()) +
            " cannot take layout " + w.layout;
    return false;
  }
  return eachMatrix([&](int64_t row, int64_t rows) {
    return matrixBytes(f32.data() + row * k, rows, k, w.layout, derivation, bytes, error);
  });
}

bool writeWeights(const std::string &path, const models::Checkpoint &ckpt,
                  const std::vector<PlannedWeight> &weights,
                  nlohmann::json &tensors, std::string &error) {
  std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "wb"),
                                           &std::fclose);
  if (!f) {
    error = "cannot write " + path;
    return false;
  }
  int64_t offset = 0;
  std::vector<uint8_t> buffer;
  static const char zeros[kAlign] = {};
  for (const PlannedWeight &w : weights) {
    if (!weightBytes(ckpt, w, buffer, error))
      return false;
    int64_t pad = (kAlign - offset % kAlign) % kAlign;
    if (pad && std::fwrite(zeros, 1, pad, f.get()) != size_t(pad)) {
      error = "short write to " + path;
      return false;
    }
    offset += pad;
    int64_t bytes = int64_t(buffer.size());
    if (std::fwrite(buffer.data(), 1, bytes, f.get()) != size_t(bytes)) {
      error = "short write to " + path;
      return false;
    }
    tensors.push_back({{"name", w.name},
                       {"dtype", w.layout == "bf16_as_f32" ? "f32" : w.layout},
                       {"shape", w.shape},
                       {"offset", offset},
                       {"nbytes", bytes}});
    offset += bytes;
  }
  return true;
}

bool writeTokenizer(const std::string &path, const models::TokenizerSpec &t,
                    std::string &error) {
  hyrt::TokenizerData data;
  if (t.kind == "llama2c")
    data.kind = hyrt::TokenizerKind::kLlama2c;
  else if (t.kind == "sentencepiece")
    data.kind = hyrt::TokenizerKind::kSentencePiece;
  else if (t.kind == "gpt2")
    data.kind = hyrt::TokenizerKind::kGpt2;
  else {
    error = "unknown tokenizer kind '" + t.kind + "'";
    return false;
  }
  data.tokens = t.tokens;
  data.scores = t.scores;
  data.types = t.types;
  data.merges = t.merges;
  data.bos_id = t.bos_id;
  data.eos_id = t.eos_id;
  data.unk_id = t.unk_id;
  hyrt::Tokenizer tok;
  auto st = tok.init(std::move(data));
  if (!st.ok()) {
    error = "tokenizer: " + st.message();
    return false;
  }
  st = tok.save(path);
  if (!st.ok()) {
    error = st.message();
    return false;
  }
  return true;
}
} // namespace

bool writeArtifactFiles(const std::string &dir, const models::Checkpoint &ckpt,
                        const std::vector<PlannedWeight> &weights,
                        const ArtifactInfo &info, std::string &error) {
  const models::ModelSpec &s = ckpt.spec;
  nlohmann::json tensors = nlohmann::json::array();
  if (!writeWeights(dir + "/weights.bin", ckpt, weights, tensors, error))
    return false;

  nlohmann::json manifest = {
      {"format", "hyc-artifact"},
      {"abi_version", HYRT_ABI_VERSION},
      {"target", info.target},
      {"entry_points", {{"extend", "hyc_extend_v0"}, {"decode", "hyc_decode_v0"}}},
      {"limits",
       {{"max_seq_len", info.maxSeqLen},
        {"max_batch_tokens", info.maxBatchTokens},
        {"max_seqs", info.maxSeqs}}},
      {"model",
       {{"arch", s.arch},
        {"source", info.source},
        {"vocab_size", s.vocab_size},
        {"hidden_size", s.hidden_size},
        {"num_layers", s.num_layers},
        {"num_heads", s.num_heads},
        {"num_kv_heads", s.num_kv_heads},
        {"head_dim", s.head_dim},
        {"num_experts", s.moe ? s.moe->num_experts : 0},
        {"num_experts_per_tok", s.moe ? s.moe->top_k : 0},
        {"bos_token_id", s.bos_token_id},
        {"eos_token_id", s.eos_token_id}}},
      {"kv_cache",
       {{"num_layers", s.num_layers},
        {"num_kv_heads", s.mla ? 1 : s.num_kv_heads},
        {"k_head_dim", s.mla ? s.mla->kv_lora_rank + s.mla->qk_rope_head_dim
                             : s.head_dim},
        {"v_head_dim", s.mla ? 0 : s.head_dim},
        {"dtype", info.kvCacheDtype}}},
      {"weights", {{"file", "weights.bin"}, {"tensors", tensors}}},
  };
  nlohmann::json variants = nlohmann::json::array();
  for (const VariantInfo &v : info.variants)
    variants.push_back({{"name", v.name},
                        {"library", v.library},
                        {"cpu_features", v.cpuFeatures},
                        {"arena_bytes", v.arenaBytes},
                        {"weights", v.weights}});
  manifest["variants"] = variants;
  if (!info.executableVariant.empty())
    manifest["executable_variant"] = info.executableVariant;
  if (ckpt.tokenizer) {
    if (!writeTokenizer(dir + "/tokenizer.hytk", *ckpt.tokenizer, error))
      return false;
    manifest["tokenizer"] = "tokenizer.hytk";
  }
  std::ofstream out(dir + "/manifest.json");
  if (!out) {
    error = "cannot write " + dir + "/manifest.json";
    return false;
  }
  out << manifest.dump(2) << "\n";
  return bool(out);
}

} // namespace hyc::compiler
