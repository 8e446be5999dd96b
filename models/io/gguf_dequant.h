// ggml's block-quantized tensor types (the ones llama.cpp's quantizer
// writes: Q4_0 .. Q8_0, the k-quants Q2_K .. Q6_K, IQ4_NL, IQ4_XS, MXFP4):
// block geometry and exact dequantization to fp32, value for value what
// ggml's dequantize_row_* computes (fp16 scales widened exactly, every
// product and difference a single fp32 operation in ggml's order).
#ifndef HYC_MODELS_IO_GGUF_DEQUANT_H
#define HYC_MODELS_IO_GGUF_DEQUANT_H

#include "models/io/expected.h"
#include "models/io/tensor.h"

#include <cstdint>

namespace hyc::io {

/// The storage unit of a block-quantized type: `elements` consecutive values
/// of a row in `bytes` bytes.
struct QuantBlock {
  int64_t elements = 0;
  int64_t bytes = 0;
};

/// Whether `dtype` is one of ggml's block-quantized types (Q8_0 included);
/// if so, sets `*block` (when non-null).
bool quant_block(DType dtype, QuantBlock *block = nullptr);

/// Dequantizes `n` values (a multiple of the block size) of block type
/// `dtype` stored as consecutive blocks at `blocks` into `out`. The caller
/// has checked that `n / block.elements * block.bytes` bytes are readable;
/// fails, naming the type, for an `n` that is not whole blocks or a
/// `dtype` that is not a block type.
Status dequantize(DType dtype, const uint8_t *blocks, int64_t n, float *out);

} // namespace hyc::io

#endif // HYC_MODELS_IO_GGUF_DEQUANT_H
