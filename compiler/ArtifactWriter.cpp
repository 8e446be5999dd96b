//===- ArtifactWriter.cpp - weights.bin, manifest.json, tokenizer ---------===//

#include "compiler/ArtifactWriter.h"

#include "hyrt/abi.h"
#include "hyrt/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
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

/// A weight of the table: a checkpoint tensor, or experts stacked into
/// [E, N, K] when the name has the form `<prefix>experts.*.<proj>`.
bool readWeight(const models::Checkpoint &ckpt, const PlannedWeight &w,
                float *out, std::string &error) {
  const std::string marker = "experts.*.";
  size_t at = w.name.find(marker);
  if (at == std::string::npos)
    return readTensor(ckpt, w.name, numelOf(w.shape), out, error);
  std::string prefix = w.name.substr(0, at) + "experts.";
  std::string suffix = w.name.substr(at + marker.size());
  int64_t experts = w.shape.front();
  int64_t perExpert = numelOf(w.shape) / experts;
  for (int64_t e = 0; e < experts; ++e)
    if (!readTensor(ckpt, prefix + std::to_string(e) + "." + suffix, perExpert,
                    out + e * perExpert, error))
      return false;
  return true;
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
  std::vector<float> buffer;
  static const char zeros[kAlign] = {};
  for (const PlannedWeight &w : weights) {
    int64_t numel = 1;
    for (int64_t d : w.shape)
      numel *= d;
    buffer.assign(numel, 0.0f);
    if (!readWeight(ckpt, w, buffer.data(), error))
      return false;
    int64_t pad = (kAlign - offset % kAlign) % kAlign;
    if (pad && std::fwrite(zeros, 1, pad, f.get()) != size_t(pad)) {
      error = "short write to " + path;
      return false;
    }
    offset += pad;
    int64_t bytes = numel * int64_t(sizeof(float));
    if (std::fwrite(buffer.data(), 1, bytes, f.get()) != size_t(bytes)) {
      error = "short write to " + path;
      return false;
    }
    tensors.push_back({{"name", w.name},
                       {"dtype", "f32"},
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
      {"cpu_features", info.cpuFeatures},
      {"library", "model.so"},
      {"entry_points", {{"extend", "hyc_extend_v0"}, {"decode", "hyc_decode_v0"}}},
      {"arena_bytes", info.arenaBytes},
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
        {"bos_token_id", s.bos_token_id},
        {"eos_token_id", s.eos_token_id}}},
      {"kv_cache",
       {{"num_layers", s.num_layers},
        {"num_kv_heads", s.mla ? 1 : s.num_kv_heads},
        {"k_head_dim", s.mla ? s.mla->kv_lora_rank + s.mla->qk_rope_head_dim
                             : s.head_dim},
        {"v_head_dim", s.mla ? 0 : s.head_dim},
        {"dtype", "f32"}}},
      {"weights", {{"file", "weights.bin"}, {"tensors", tensors}}},
  };
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
