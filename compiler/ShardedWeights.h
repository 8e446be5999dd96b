//===- ShardedWeights.h - a tensor-parallel rank's slice of each weight -*- C++ -*-===//
//
// hyc-global-shard decides which checkpoint tensors a rank reads only part
// of (module attribute `hyc.tensor_parallel`: tensor -> split dim); this
// WeightSource gives the artifact writer rank r's part of each: rows
// [r N/size, (r+1) N/size) of a dim-0 split ([N, K] weight or [N] bias),
// columns [r K/size, (r+1) K/size) of a dim-1 split. Every other tensor
// reads as stored. Names stay the checkpoint's, so the writer's brace and
// derivation syntax resolve as for one rank.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_SHARDEDWEIGHTS_H
#define HYC_COMPILER_SHARDEDWEIGHTS_H

#include "models/checkpoint/model_spec.h"

#include <map>
#include <memory>
#include <string>

namespace hyc::compiler {

/// Wraps `base` so that each tensor of `splits` (name -> dim 0 or 1) reads
/// as rank `rank`'s of `size` equal parts. Null with `error` when a tensor
/// is missing, has another rank, or does not divide.
std::unique_ptr<models::WeightSource>
shardWeights(std::unique_ptr<models::WeightSource> base,
             const std::map<std::string, int64_t> &splits, int64_t rank, int64_t size,
             std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_SHARDEDWEIGHTS_H
