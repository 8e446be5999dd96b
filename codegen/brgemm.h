// Brgemm microkernels: the descriptor a schedule fills in, the generated
// kernel object (machine code + entry point) and the generator entry point.
//
// A kernel computes one N block of C for up to M_max rows:
//   C[m][0:N] (=|+=) A[m][0:K] . B_panel[0:K][0:N]  (+ epilogue)
// with B packed by codegen/pack.h. Life cycle (oneDNN, tpp-mlir): describe ->
// generate once -> execute many. Generated code allocates nothing, calls
// nothing and touches no globals; it is position independent, so its bytes
// can be embedded in an artifact as an ordinary function.
#pragma once

#include "codegen/cpu_isa.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace Xbyak {
class CodeGenerator;
}

namespace hyc::codegen {

/// Element types of A, B and C. u4 is an unsigned 4-bit weight code, two
/// per byte (grouped layouts only).
enum class DataType { f32, bf16, u8, s8, s32, f8, u4 };

/// Spelling in kernel names: "f32", "bf16", "u8", "s8", "s32", "f8" (e4m3fn),
/// "u4".
const char *data_type_name(DataType t);
/// Bytes per element (1 for u4: sizes here address whole bytes).
int data_type_size(DataType t);

/// How B is packed (codegen/pack.h); one panel holds 32 columns, K-major.
enum class BLayout {
  f32_k1,     ///< [ceil(N/32)][K][32] fp32
  bf16_vnni2, ///< [ceil(N/32)][ceil(K/2)][32][2] bf16
  s8_vnni4,   ///< [ceil(N/32)][ceil(K/4)][32][4] s8, then int32 comp[32]
  f8_vnni2,   ///< [ceil(N/32)][ceil(K/128) * 64][32][2] e4m3 (K padded to 128)
  /// Unsigned codes with per-group fp16 scales (and mins), see "Grouped
  /// integer kernels" below: per group, [group/4][32][4] u8 codes, then
  /// scales[32] fp16, then (asymmetric) mins[32] fp16. Two-level scales
  /// (BrgemmDesc::super_group > 0), per super-block: d[32] fp16, then
  /// (asymmetric) dmin[32] fp16, then per group its code quads followed by
  /// sc[32] int8 and m[32] uint8 (zeros when symmetric). Every part is a
  /// whole number of 64-byte lines, so the quads stay aligned.
  u8_grouped,
  /// As u8_grouped with 64-byte K quads: byte 4c+e (c < 16) holds
  /// code[4q+e][c] in its low nibble and code[4q+e][16+c] in its high one.
  u4_grouped,
};

/// Spelling of a B layout in kernel tables and messages: "f32_k1",
/// "bf16_vnni2", "s8_vnni4", "f8_vnni2", "u8_grouped", "u4_grouped".
const char *b_layout_name(BLayout layout);

/// What happens to the accumulators before they are stored.
enum class Epilogue {
  none,
  bias, ///< C[m][n] += bias[n] (fp32), after any dequantization
};

/// Weight value tables a grouped u4 kernel can look its codes up in.
enum class Codebook {
  none,  ///< the code itself is the value
  iq4nl, ///< GGUF IQ4_NL / IQ4_XS: code c stands for hyrt::kIq4nlU8[c]
         ///< (hyrt/support/iq4nl.h, kvalues_iq4nl + 128), zero point 128
};

/// Spelling in kernel tables and messages: "none", "iq4nl".
const char *codebook_name(Codebook c);
/// The code book codebook_name() spells as `name`; false for other text.
bool codebook_from_name(const std::string &name, Codebook *out);

/// Everything that determines a kernel's machine code. Generators exist for
/// (see codegen/tiles.cpp): avx512_bf16 bf16 x bf16; avx512_vnni u8 x s8
/// (-> s32 or f32); avx512_core f32 x f32 and f32 x bf16; avx2 f32 x f32,
/// f32 x bf16 and u8 x s8 (-> s32 or f32); amx bf16 x bf16 and u8 x s8;
/// avx512_bf16 bf16 x f8 (FP8 weights, K a multiple of 128, decode-sized M:
/// each 128-K block's sum is scaled by post->b_scale[block]; needs VBMI);
/// avx512_vnni, avx2 and amx s8 x u4 and s8 x u8 grouped (-> f32, below).
///
/// Grouped integer kernels (W4A8, GGUF Q4_0/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_NL/
/// IQ4_XS and AWQ kept exactly): A is s8 per token, B unsigned codes with
/// one scale (and min when asymmetric) per `group` K elements and column,
/// post->a_sum[m][g] the sum of row m's A over group g (row stride
/// k / group). A group's scale and min are either fp16 values (one-level,
/// super_group = 0) or, with two-level scales, products of a super-block
/// factor and the group's 8-bit sub-scale / sub-min:
///   scale_g[n] = float(d[n]) * float(sc_g[n])     (sc int8, d fp16)
///   min_g[n]   = float(dmin[n]) * float(m_g[n])   (m uint8, dmin fp16)
/// (exact in fp32: 11-bit by 8-bit significands). With Codebook::iq4nl a
/// u4 code c enters the dot product as kIq4nlU8[c] and the zero point is
/// 128. Each element follows exactly (float ops round once each, fma is
/// fused):
///   acc = +0
///   for g = 0, 1, ..., k/group - 1:
///     dot = sum_{k in g} a[m][k] * code[k][n]              (exact int32)
///     symmetric:  acc = fma(float(dot - zp * a_sum[m][g]), scale_g[n], acc)
///                 (int32 subtract; zp = 8 for u4, 128 for u8 and iq4nl)
///     asymmetric: acc = fma(float(dot), scale_g[n], acc)
///                 acc = fma(-min_g[n], float(a_sum[m][g]), acc)
///   C = acc * a_scale[m];  C = C_old + C (accumulate);  C = C + bias[n]
/// so weight = scale * (code - zp), or scale * code - min.
///
/// Two-level kernels also quantize A per group rather than per row (the
/// formats GGUF K-quants and AWQ store; llama.cpp quantizes activations per
/// 256-block for them, and per-row scales lose the small groups of a row
/// with outliers): post->a_sum[m] holds pairs {int32 sum, fp32 scale as_g}
/// per group (row stride 2 * k / group), post->a_scale is not read, and
///     symmetric:  acc = fma(float(dot - zp * a_sum) * as_g, scale_g[n], acc)
///     asymmetric: acc = fma(float(dot) * as_g, scale_g[n], acc)
///                 acc = fma(-min_g[n], float(a_sum) * as_g, acc)
///   C = acc;  C = C_old + C (accumulate);  C = C + bias[n]
/// (each product rounded once before its fma). The order of the groups
/// never depends on m, so a row's result does not depend on the batch. The
/// amx kernels (tdpbsud, x86/amx_grouped.cpp) form the same int32 group
/// sums and fold them in the same order, so they give the same bits.
struct BrgemmDesc {
  Isa isa = Isa::avx512_bf16;
  int m_max = 0;    ///< block rows; the kernel serves every m in 1..m_max
  int n_block = 32; ///< columns: 32 (one panel) or 64 (two adjacent panels)
  int k = 0;        ///< reduction length (unpadded); B is packed for this K
  DataType a_type = DataType::bf16;
  DataType b_type = DataType::bf16;
  DataType c_type = DataType::f32;
  BLayout b_layout = BLayout::bf16_vnni2;
  /// false: C = A.B; true: C = C + A.B. Float kernels start accumulating
  /// from C, so splitting K over calls (B offset by whole K steps) gives
  /// the same sums as one call; u8 x s8 kernels add C after the epilogue
  /// math (their comp covers the whole packed K, so K is never split).
  bool accumulate = false;
  Epilogue epilogue = Epilogue::none;
  /// Grouped layouts only: K elements per scale group (a positive multiple
  /// of 16 dividing k; the driver pads K). 0 for every other layout.
  int group = 0;
  /// Grouped layouts only: panels carry mins (weight = scale*code - min).
  bool asymmetric = false;
  /// Grouped layouts only: 0 for one-level fp16 scales per group; else K
  /// elements per super-block of two-level scales (a multiple of group
  /// dividing k: 256 for GGUF K-quants and IQ4_XS, 128 for AWQ).
  int super_group = 0;
  /// Grouped u4 layouts only (symmetric): the value table of the codes.
  Codebook codebook = Codebook::none;
  /// Store C with non-temporal stores (vmovntps): the lines go to memory
  /// without being read for ownership or displacing the caches, for outputs
  /// larger than the caches that are read once afterwards (a prefill's MoE
  /// down projection writes 32 MB per layer on moe-small). AVX-512 families
  /// with f32 C, C = A.B without bias; every C row must start 64-byte
  /// aligned (c and ldc * 4 multiples of 64). The kernel ends with an
  /// sfence, so its stores are ordered before anything the caller does
  /// after it returns (a barrier, another thread reading C).
  bool stream_c = false;
};

/// The weight format of a grouped layout, shared by descriptors
/// (make_grouped_brgemm_desc) and the packer (codegen/pack.h).
struct GroupedFormat {
  int bits = 4;            ///< 4: u4 codes, 8: u8 codes
  int64_t group = 32;      ///< K elements per scale (and min)
  int64_t super_group = 0; ///< 0: one-level scales; else see BrgemmDesc
  bool asymmetric = false; ///< mins: weight = scale * code - min
  Codebook codebook = Codebook::none;
};

/// The format a grouped descriptor reads.
GroupedFormat grouped_format(const BrgemmDesc &desc);

/// Checks a grouped format for a reduction length k; returns an empty
/// string when kernels and packers take it, else what is wrong (expected
/// vs found).
std::string validate_grouped_format(const GroupedFormat &f, int64_t k);

/// Operands an epilogue reads; pointers are already offset to the block
/// (bias and b_scale to the block's first column, a_scale to its first row).
struct BrgemmPostArgs {
  const float *bias = nullptr;    ///< [n_block], Epilogue::bias
  const float *a_scale = nullptr; ///< [m], u8 x s8 -> f32 kernels
  const float *b_scale = nullptr; ///< [n_block], u8 x s8 -> f32 kernels;
                                  ///< [K / 128] block factors, bf16 x f8
  /// Grouped kernels: [m][k / group] sums of each row's s8 A per group;
  /// two-level ones [m][k / group] pairs {sum, scale bits} (see above).
  /// Appended last: generated code reads the fields by offset.
  const int32_t *a_sum = nullptr;
  /// Weight streams per thread in the few-row bodies of kernels that have
  /// both forms (tiles.h BrgemmTile::k_streams): 2 takes the two-stream
  /// loop, anything else (and a null post) the one-stream loop. The host
  /// decides (hyrt::cpu::decodeStreams): two streams read 1.09-1.15x
  /// faster on AMD Zen 5 and 0.8-0.96x as fast on Zen 4. The results are
  /// the same bits either way (the forms exist only for int32 sums).
  int64_t k_streams = 0;
};

/// Every generated brgemm kernel has this signature. lda and ldc count
/// elements of A and C; b points at the block's first panel; m is in
/// 1..m_max (other values return without touching C). post may be null when
/// the kernel needs no epilogue operands.
///
/// For u8 x s8 kernels, A holds u8 = q + 128 and the panel's comp row is
/// subtracted: s32 C receives the exact signed dot product sum_k q_a*q_b;
/// f32 C receives a_scale[m] * b_scale[n] * (acc - comp[n]). AVX2 kernels
/// compute the same signed sum directly (bit-identical results) and need B
/// in [-127, 127], as the quantizers in codegen/pack.h produce.
using BrgemmFn = void (*)(const void *a, int64_t lda, const void *b, void *c,
                          int64_t ldc, int64_t m, const BrgemmPostArgs *post);

/// Executable machine code produced by a generator (owns the pages).
class JitCode {
public:
  /// text_size: bytes of instructions at the start; embedded data (jump
  /// tables, tile configurations) follows them.
  JitCode(std::unique_ptr<Xbyak::CodeGenerator> gen, size_t text_size);
  JitCode(JitCode &&) noexcept;
  JitCode &operator=(JitCode &&) noexcept;
  ~JitCode();
  /// First byte of the code; the entry point is at offset 0.
  const uint8_t *data() const;
  size_t size() const;
  size_t text_size() const { return text_size_; }
  /// The entry point as a function pointer of type F.
  template <class F> F entry() const { return reinterpret_cast<F>(data()); }

private:
  std::unique_ptr<Xbyak::CodeGenerator> gen_;
  size_t text_size_ = 0;
};

/// A generated kernel: owns its executable code.
class BrgemmKernel {
public:
  BrgemmKernel(const BrgemmDesc &desc, std::string name, JitCode code);
  BrgemmKernel(const BrgemmKernel &) = delete;
  BrgemmKernel &operator=(const BrgemmKernel &) = delete;

  const BrgemmDesc &desc() const { return desc_; }
  /// `<op>_<types>[_g<group>[s<super>][a][_iq4]]_<M>x<N>x<K>_<isa>` then
  /// `[_acc][_bias]`, e.g. brgemm_bf16bf16f32_14x32x4096_avx512bf16,
  /// (asymmetric groups of 128) brgemm_s8u4f32_g128a_6x32x4096_avx512vnni or
  /// (Q4_K) brgemm_s8u4f32_g32s256a_6x32x4096_avx512vnni.
  const std::string &name() const { return name_; }
  /// The entry point. Only call it when host_supports(desc().isa).
  BrgemmFn fn() const { return fn_; }
  /// The machine code (position independent; entry at offset 0).
  const uint8_t *code() const { return code_.data(); }
  size_t code_size() const { return code_.size(); }
  /// Bytes of instructions at the start of code(); data follows.
  size_t text_size() const { return code_.text_size(); }

  void operator()(const void *a, int64_t lda, const void *b, void *c,
                  int64_t ldc, int64_t m,
                  const BrgemmPostArgs *post = nullptr) const {
    fn_(a, lda, b, c, ldc, m, post);
  }

private:
  BrgemmDesc desc_;
  std::string name_;
  JitCode code_;
  BrgemmFn fn_ = nullptr;
};

/// Result of generation: a kernel, or a message saying what was wrong with
/// the descriptor (expected vs found).
struct BrgemmGenResult {
  std::unique_ptr<BrgemmKernel> kernel;
  std::string error;
  explicit operator bool() const { return kernel != nullptr; }
};

/// The name a descriptor's kernel gets (valid descriptors only).
std::string brgemm_name(const BrgemmDesc &desc);

/// Checks a descriptor; returns an empty string when it can be generated.
std::string validate_brgemm(const BrgemmDesc &desc);

/// Generates the kernel for `desc`. Generation works for every ISA on any
/// x86-64 host (AMX code can be generated and disassembled where it cannot
/// run).
BrgemmGenResult generate_brgemm(const BrgemmDesc &desc);

/// AMX only: a function `void release()` that executes tilerelease. Kernels
/// load their own tile configuration; a thread calls this when it is done
/// with AMX.
using TileReleaseFn = void (*)();
JitCode generate_amx_tile_release();

} // namespace hyc::codegen
