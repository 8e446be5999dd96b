//===- WeightConversion.h - checkpoint tensors -> artifact bytes -*- C++ -*-===//
//
// What one entry of the artifact's weight table holds, as independent
// pieces of work: each [rows, K] matrix of the entry (one expert's part of a
// stacked [E, N, K] weight, one half of a [gate; up] brace name) is read
// from the checkpoint, derived (bf16, W8A8, FP8 ...) and laid out on its
// own. The artifact writer runs the pieces on every core and writes their
// bytes in order, so that memory holds a few matrices, never the fp32 of a
// whole expert stack.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_WEIGHTCONVERSION_H
#define HYC_COMPILER_WEIGHTCONVERSION_H

#include "compiler/ArtifactWriter.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hyc::compiler {

/// Appends one piece of an entry's bytes; false with `error` on failure.
using ChunkFn = std::function<bool(std::vector<uint8_t> &bytes, std::string &error)>;

/// The pieces of table entry `w`, in storage order (their bytes
/// concatenated are the entry). False with `error` when the entry cannot
/// be planned (a scale entry whose source tensor is missing, a layout that
/// does not fit its rank).
/// Matrices above `sliceElements` (default: 16 Mi, 64 MB as fp32) that the
/// checkpoint stores plainly are planned as row slices of whole 128-row
/// blocks of about that size; the bytes do not depend on it.
constexpr int64_t kSliceElements = int64_t(16) << 20;
bool planEntryChunks(const models::Checkpoint &ckpt, const PlannedWeight &w,
                     std::vector<ChunkFn> &chunks, std::string &error,
                     int64_t sliceElements = kSliceElements);

} // namespace hyc::compiler

#endif // HYC_COMPILER_WEIGHTCONVERSION_H
