//===- Families.h - decoder building blocks for every family ----*- C++ -*-===//
//
// One pre-norm decoder covers Llama, Qwen2/3, Qwen3-MoE, DeepSeek-V2/V3 and
// Hunyuan-MoE: attention is GQA (optional q/k/v bias, q/k RMSNorm before or
// after RoPE) or MLA; the MLP is SwiGLU or MoE (routed experts + optional
// shared experts), per layer.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_MODELS_IR_FAMILIES_H
#define HYC_MODELS_IR_FAMILIES_H

#include "models/ir/GraphBuilder.h"

namespace hyc::models {

enum class EntryKind { Extend, Decode };

/// Whole forward pass: logits [T, vocab]; threads the KV cache through
/// `cache`.
mlir::Value emitDecoderForward(GraphBuilder &g, const ModelSpec &s,
                               mlir::Value tokens, mlir::Value positions,
                               mlir::Value &cache, EntryKind entry);

/// GQA attention of one layer (returns the o_proj output).
mlir::Value emitGqaAttention(GraphBuilder &g, const ModelSpec &s, int64_t layer,
                             mlir::Value h, mlir::Value positions,
                             mlir::Value &cache, EntryKind entry);

/// DeepSeek multi-head latent attention of one layer (plain form over the
/// latent cache; returns the o_proj output).
mlir::Value emitMlaAttention(GraphBuilder &g, const ModelSpec &s, int64_t layer,
                             mlir::Value h, mlir::Value positions,
                             mlir::Value &cache);

/// gate/up/down SwiGLU MLP with weights under `prefix`.
mlir::Value emitSwiGLU(GraphBuilder &g, const std::string &prefix,
                       mlir::Value h, int64_t hidden, int64_t intermediate);

/// Routed experts (+ shared experts) of one MoE layer.
mlir::Value emitMoe(GraphBuilder &g, const ModelSpec &s, int64_t layer,
                    mlir::Value h);

/// Softmax scale of attention: head_dim^-0.5, times DeepSeek's YaRN mscale².
float attentionScale(const ModelSpec &s, int64_t qkHeadDim);

/// Name of a stacked expert weight [E, N, K]: the artifact writer assembles
/// it from `<prefix>experts.<e>.<proj>` tensors.
std::string stackedExpertName(const std::string &prefix, const std::string &proj);

} // namespace hyc::models

#endif // HYC_MODELS_IR_FAMILIES_H
