//===- ShardedWeights.h - a tensor-parallel rank's slice of each weight -*- C++ -*-===//
//
// hyc-global-shard decides which checkpoint tensors a rank reads only part
// of (module attribute `hyc.tensor_parallel`: tensor -> split); this
// WeightSource gives the artifact writer the rank's part of each: part i of
// `parts` equal parts along dim 0 (rows of an [N, K] weight or an [N] bias)
// or dim 1 (columns), of the tensor padded with zeros to `whole` along that
// dim. Usually parts = the rank count and i = the rank; kv projections
// with fewer kv heads than ranks have parts = kv heads (ranks share one);
// an ffn width that does not divide is padded (zero rows of gate/up, zero
// columns of down: exact). Integer codes stored with their scales (GGUF
// blocks, AWQ) keep them where the part holds whole scale blocks: any row
// part, a column part of whole super-blocks (Q4_K halves as q4z, whose
// d / dmin cover 128); a cut block reads as fp32 only.
// Every other tensor reads as stored. Names stay
// the checkpoint's, so the writer's brace and derivation syntax resolve as
// for one rank.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_SHARDEDWEIGHTS_H
#define HYC_COMPILER_SHARDEDWEIGHTS_H

#include "models/checkpoint/model_spec.h"

#include <map>
#include <memory>
#include <string>

namespace hyc::compiler {

struct ShardSpec {
  int64_t dim = 0;   ///< 0: rows, 1: columns
  int64_t parts = 1; ///< equal parts of the padded dim
  int64_t index = 0; ///< the part this rank reads
  int64_t whole = 0; ///< the dim padded with zeros (>= the stored size; 0: as stored)
};

/// Wraps `base` so that each tensor of `splits` reads as its part. Null
/// with `error` when a tensor is missing, has another rank, or its padded
/// dim does not divide into the parts.
std::unique_ptr<models::WeightSource>
shardWeights(std::unique_ptr<models::WeightSource> base,
             const std::map<std::string, ShardSpec> &splits, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_SHARDEDWEIGHTS_H
