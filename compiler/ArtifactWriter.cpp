//===- ArtifactWriter.cpp - weights.bin, manifest.json, tokenizer ---------===//

#include "compiler/ArtifactWriter.h"

#include "compiler/WeightConversion.h"
#include "hyrt/abi.h"
#include "hyrt/artifact/artifact.h"
#include "hyrt/text/tokenizer.h"
#include "models/checkpoint/tokenizer_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace hyc::compiler {

namespace {
constexpr int64_t kAlign = 64;

/// Runs the chunks of every entry on `threads` threads, in order of
/// hand-out, at most `window` ahead of the one being written, and writes
/// their bytes in table order: each entry 64-byte aligned, its `tensors`
/// record (offset, nbytes) appended. Memory holds the chunks in flight (a
/// few matrices), not whole entries.
class ChunkPipeline {
public:
  ChunkPipeline(std::vector<ChunkFn> chunks, unsigned threads)
      : chunks_(std::move(chunks)), results_(chunks_.size()), done_(chunks_.size(), 0),
        window_(8 * size_t(threads)) {
    for (unsigned t = 0; t < threads; ++t)
      workers_.emplace_back([this] { work(); });
  }
  ~ChunkPipeline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }
  /// Chunk i's bytes, once computed (false with `error` when it failed).
  bool take(size_t i, std::vector<uint8_t> &bytes, std::string &error) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_[i] != 0; });
    if (done_[i] < 0) {
      error = errors_[i];
      return false;
    }
    bytes = std::move(results_[i]);
    results_[i] = {};
    taken_ = i + 1;
    cv_.notify_all();
    return true;
  }

private:
  void work() {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] {
          return stop_ || (next_ < chunks_.size() && next_ < taken_ + window_);
        });
        if (stop_)
          return;
        i = next_++;
      }
      std::vector<uint8_t> bytes;
      std::string error;
      const bool ok = chunks_[i](bytes, error);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        results_[i] = std::move(bytes);
        if (!ok)
          errors_[i] = error;
        done_[i] = ok ? 1 : -1;
      }
      cv_.notify_all();
    }
  }

  std::vector<ChunkFn> chunks_;
  std::vector<std::vector<uint8_t>> results_;
  std::vector<int> done_; // 0 pending, 1 done, -1 failed
  std::map<size_t, std::string> errors_;
  size_t window_, next_ = 0, taken_ = 0;
  bool stop_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
};

bool writeWeights(const std::string &path, const models::Checkpoint &ckpt,
                  const std::vector<PlannedWeight> &weights,
                  nlohmann::json &tensors, std::string &error) {
  std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "wb"),
                                           &std::fclose);
  if (!f) {
    error = "cannot write " + path;
    return false;
  }
  // Every entry's chunks, flattened in table order.
  std::vector<ChunkFn> chunks;
  std::vector<size_t> firstChunk;
  for (const PlannedWeight &w : weights) {
    std::vector<ChunkFn> entry;
    if (!planEntryChunks(ckpt, w, entry, error))
      return false;
    firstChunk.push_back(chunks.size());
    for (ChunkFn &c : entry)
      chunks.push_back(std::move(c));
  }
  firstChunk.push_back(chunks.size());
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  ChunkPipeline pipeline(std::move(chunks), threads);
  int64_t offset = 0;
  std::vector<uint8_t> buffer;
  static const char zeros[kAlign] = {};
  auto write = [&](const void *p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) {
      error = "short write to " + path;
      return false;
    }
    offset += int64_t(n);
    return true;
  };
  for (size_t e = 0; e < weights.size(); ++e) {
    if (!write(zeros, size_t((kAlign - offset % kAlign) % kAlign)))
      return false;
    const int64_t start = offset;
    // Its checksum, verified at load (docs/artifact.md).
    hyrt::TensorHasher hash;
    for (size_t c = firstChunk[e]; c < firstChunk[e + 1]; ++c) {
      if (!pipeline.take(c, buffer, error) || !write(buffer.data(), buffer.size()))
        return false;
      hash.update(buffer.data(), buffer.size());
    }
    const PlannedWeight &w = weights[e];
    tensors.push_back({{"name", w.name},
                       {"dtype", w.layout == "bf16_as_f32" ? "f32" : w.layout},
                       {"shape", w.shape},
                       {"offset", start},
                       {"nbytes", offset - start},
                       {"xxh3", hash.hex()}});
  }
  return true;
}

bool writeTokenizer(const std::string &path, const models::TokenizerSpec &t,
                    int64_t vocabSize, std::string &error) {
  hyrt::TokenizerData data;
  if (hyrt::Status st = models::to_tokenizer_data(t, &data); !st.ok()) {
    error = st.message();
    return false;
  }
  // Ids past the embedding table would make the model read garbage.
  if (t.kind == "hf" && int64_t(data.tokens.size()) > vocabSize) {
    error = "tokenizer.json has " + std::to_string(data.tokens.size()) +
            " tokens, the model's vocab_size is " + std::to_string(vocabSize);
    return false;
  }
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
        {"num_kv_heads", s.mla ? 1 : info.kvCacheHeads ? info.kvCacheHeads : s.num_kv_heads},
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
  if (info.tpSize > 1)
    manifest["tensor_parallel"] = {
        {"rank", info.tpRank}, {"size", info.tpSize}, {"compile_id", info.compileId}};
  if (!info.executableVariant.empty())
    manifest["executable_variant"] = info.executableVariant;
  if (ckpt.tokenizer) {
    std::string why;
    if (writeTokenizer(dir + "/tokenizer.hytk", *ckpt.tokenizer, s.vocab_size, why)) {
      manifest["tokenizer"] = "tokenizer.hytk";
    } else if (ckpt.tokenizer->kind == "hf") {
      // The weights are still a model to run on token ids: say why text
      // will not work instead of refusing the whole compile.
      std::fprintf(stderr,
                   "hyc compile: warning: %s/tokenizer.json not carried (the artifact "
                   "takes token ids only): %s\n",
                   ckpt.tokenizer->hf_dir.c_str(), why.c_str());
    } else {
      error = why;
      return false;
    }
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
