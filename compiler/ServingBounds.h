//===- ServingBounds.h - default bounds sized for serving ------*- C++ -*-===//
//
// An artifact is compiled once for its largest shapes. Left out, those are
// sized for a server: 512 tokens per prefill step, 16 sequences per decode
// step (the option table's defaults) and the model's context up to 8192
// positions, halved while the weights and a KV cache for every sequence at
// full length would not fit in 80% of this machine's memory. The compile
// prints the bounds and the memory they imply.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_SERVINGBOUNDS_H
#define HYC_COMPILER_SERVINGBOUNDS_H

#include <cstdint>
#include <string>

namespace hyc::compiler {

/// The default max_seq_len: min(context, 8192), halved while
/// weightBytes + maxSeqs * maxSeqLen * kvBytesPerToken > 0.8 * memoryBytes,
/// but not below min(context, 2048) (the old default: a model that does not
/// fit even then is the user's call, and the printed estimate says so).
int64_t defaultMaxSeqLen(int64_t context, int64_t weightBytes, int64_t kvBytesPerToken,
                         int64_t maxSeqs, int64_t memoryBytes);

/// Physical memory of this machine (bytes; 0 when unknown).
int64_t machineMemoryBytes();

/// "1.2 GB" / "340 MB".
std::string humanBytes(double bytes);

} // namespace hyc::compiler

#endif // HYC_COMPILER_SERVINGBOUNDS_H
