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
  std::string name;
  std::vector<int64_t> shape;
};

/// What the manifest records besides the weights.
struct ArtifactInfo {
  std::string target = "reference";
  std::vector<std::string> cpuFeatures;
  int64_t arenaBytes = 0;
  int64_t maxSeqLen = 0, maxBatchTokens = 0, maxSeqs = 0;
  std::string source;
};

/// Writes `dir`/weights.bin (fp32, each tensor 64-byte aligned, in table
/// order), `dir`/tokenizer.hytk when the checkpoint has a tokenizer, and
/// `dir`/manifest.json (docs/artifact.md). False with `error` on failure.
bool writeArtifactFiles(const std::string &dir, const models::Checkpoint &ckpt,
                        const std::vector<PlannedWeight> &weights,
                        const ArtifactInfo &info, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_ARTIFACTWRITER_H
