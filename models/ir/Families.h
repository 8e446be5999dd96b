//===- Families.h - per-family forward emitters -----------------*- C++ -*-===//
#ifndef HYC_MODELS_IR_FAMILIES_H
#define HYC_MODELS_IR_FAMILIES_H

#include "models/ir/GraphBuilder.h"

namespace hyc::models {

enum class EntryKind { Extend, Decode };

/// Emits the whole forward pass; returns logits [T, vocab] and threads the
/// KV cache value through `cache`.
mlir::Value emitLlamaForward(GraphBuilder &g, const ModelSpec &s,
                             mlir::Value tokens, mlir::Value positions,
                             mlir::Value &cache, EntryKind entry);

/// GQA attention block of one layer (returns the o_proj output).
mlir::Value emitLlamaAttention(GraphBuilder &g, const ModelSpec &s,
                               int64_t layer, mlir::Value h,
                               mlir::Value positions, mlir::Value &cache,
                               EntryKind entry);

/// gate/up/down SwiGLU MLP with weights under `prefix`.
mlir::Value emitSwiGLU(GraphBuilder &g, const std::string &prefix,
                       mlir::Value h, int64_t hidden, int64_t intermediate);

} // namespace hyc::models

#endif // HYC_MODELS_IR_FAMILIES_H
