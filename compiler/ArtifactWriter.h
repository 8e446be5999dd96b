//===- ArtifactWriter.h - weights.bin, manifest.json, tokenizer -*- C++ -*-===//
#ifndef HYC_COMPILER_ARTIFACTWRITER_H
#define HYC_COMPILER_ARTIFACTWRITER_H

#include "models/checkpoint/model_spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyc::compiler {

/// One weight of the artifact's table, in table order.
struct PlannedWeight {
  /// Checkpoint tensor name, optionally with "#<derivation>" for tensors the
  /// compiler derives from it ("#w8a8": per-channel int8 weights, "#w8a8.scale":
  /// their scales).
  std::string name;
  std::vector<int64_t> shape;
  /// "f32" (row-major) or a kernel layout: "f32_k1", "bf16_vnni2", "s8_vnni4".
  std::string layout = "f32";
};

/// One ISA variant's library (manifest `variants`, docs/artifact.md).
struct VariantInfo {
  std::string name, library;
  std::vector<std::string> cpuFeatures;
  int64_t arenaBytes = 0;
  std::vector<int64_t> weights; ///< its entry points' table: indices of the weights
};

/// What the manifest records besides the weights.
struct ArtifactInfo {
  std::string target = "reference"; ///< --target as given
  std::vector<VariantInfo> variants; ///< lowest ISA first
  std::string executableVariant;     ///< linked into OUT/model (--emit=exe)
  int64_t maxSeqLen = 0, maxBatchTokens = 0, maxSeqs = 0;
  std::string kvCacheDtype = "f32"; ///< the strategy pass's decision
  std::string source;
  /// Tensor parallel (hyc-global-shard): this artifact is rank tpRank of
  /// tpSize; its KV cache holds kvCacheHeads of the model's kv heads (the
  /// shard pass's decision: num_kv_heads / tpSize, or one shared kv head
  /// when there are fewer than ranks; 0: the model's).
  int64_t tpRank = 0, tpSize = 1, kvCacheHeads = 0;
  /// With tpSize > 1: compileIdentity() of the command line, the same in
  /// every rank's manifest (tensor_parallel.compile_id).
  std::string compileId;
};

/// Writes `dir`/weights.bin (fp32, each tensor 64-byte aligned, in table
/// order), `dir`/tokenizer.hytk when the checkpoint has a tokenizer, and
/// `dir`/manifest.json (docs/artifact.md). False with `error` on failure.
bool writeArtifactFiles(const std::string &dir, const models::Checkpoint &ckpt,
                        const std::vector<PlannedWeight> &weights,
                        const ArtifactInfo &info, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_ARTIFACTWRITER_H
