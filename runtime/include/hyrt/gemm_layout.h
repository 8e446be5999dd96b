/* Layout of the activations the GEMM drivers convert into scratch (bf16) or
 * quantize (W8A8), shared by the runtime (runtime/cpu/gemm.cpp) and the
 * compiler's memory plan (passes/KernelSchemes.cpp), which reserves the
 * scratch. Header only, no dependencies. */
#ifndef HYRT_GEMM_LAYOUT_H
#define HYRT_GEMM_LAYOUT_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Scheme ids: the drivers of hyrt/cpu_kernels.h and the scratch below. */
enum {
  HYRT_GEMM_F32 = 0,
  HYRT_GEMM_BF16 = 1, /* bf16 x bf16 (vdpbf16ps) */
  HYRT_GEMM_W8A8 = 2,
  HYRT_GEMM_F32_BF16 = 3, /* f32 x bf16 weights on FMA */
  /* W8A8 with one weight scale per 128 K-elements and output channel: the
   * weights packed as ceil(K/128) s8_vnni4 groups of K = 128 per panel (the
   * last zero padded), scales [N][groups]; activations as W8A8 with rows
   * padded to whole groups. */
  HYRT_GEMM_W8A8_G128 = 4,
  /* FP8 weight-only: e4m3 codes in the bf16_vnni2 order (one byte each, K
   * zero padded to whole blocks of 128), one fp32 factor per 128 x 128
   * block ([ceil(N/128)][ceil(K/128)]). The driver widens the codes to bf16
   * (exactly) and runs a K = 128 bf16 kernel per block, scaling its result
   * into C. HYRT_GEMM_FP8: activations converted to bf16 rows padded to
   * whole blocks (native bf16 / AMX kernels); HYRT_GEMM_FP8_F32: fp32
   * activations (FMA kernels), copied to padded rows when K is not a
   * multiple of 128. */
  HYRT_GEMM_FP8 = 5,
  HYRT_GEMM_FP8_F32 = 6,
  /* FP8 as HYRT_GEMM_FP8 (same weights, factors, bf16 activations), run by
   * a bf16 x f8 kernel that widens the codes in registers and applies each
   * block's factor itself: one call per panel and row block over the whole
   * K, for decode-sized steps (the compiler selects it below a row count). */
  HYRT_GEMM_FP8_FUSED = 7,
  /* Integer codes with their scales inside the panels (codegen/pack.h
   * pack_b_grouped): per group of HYRT_GEMM_CODE_GROUP K-elements and
   * output channel one fp16 scale, weight = scale * (code - zero point).
   * HYRT_GEMM_W4A8: 4-bit codes, zero point 8 (GGUF Q4_0 as stored);
   * HYRT_GEMM_W8A8_G32: 8-bit codes, zero point 128 (GGUF Q8_0 as stored).
   * Activations: s8 per token (scale = max|x| / 127) with each group's sum,
   * rows padded (0) to whole groups; one kernel call per panel and row
   * block over the whole K (the kernel folds each group's int32 sum into
   * fp32 with its scale). */
  HYRT_GEMM_W4A8 = 8,
  HYRT_GEMM_W8A8_G32 = 9,
  /* Integer codes as GGUF K-quants, IQ4 and AWQ store them, kept exactly
   * (hyrt_gemm_code_format below; models/checkpoint/model_spec.h
   * StoredCodes): same activations and driver as HYRT_GEMM_W4A8, the
   * panels differ (two-level scales, a codebook). */
  HYRT_GEMM_Q4K = 10,   /* GGUF Q4_K */
  HYRT_GEMM_Q5K = 11,   /* GGUF Q5_K */
  HYRT_GEMM_Q6K = 12,   /* GGUF Q6_K */
  HYRT_GEMM_IQ4XS = 13, /* GGUF IQ4_XS */
  HYRT_GEMM_IQ4NL = 14, /* GGUF IQ4_NL */
  HYRT_GEMM_Q4Z = 15,   /* GGUF Q4_K cut at half a super-block (tensor parallel parts) */
  HYRT_GEMM_Q4_1 = 16,  /* GGUF Q4_1: 4-bit, fp16 scale and min per 32 */
  HYRT_GEMM_Q5_1 = 17,  /* GGUF Q5_1: 5-bit as 8-bit codes, fp16 scale and min per 32 */
  HYRT_GEMM_Q4Z128 = 18, /* AWQ / GPTQ: 4-bit, scale and zero point per 128 */
  /* The last integer-code scheme: the codes are HYRT_GEMM_W4A8 ..
   * HYRT_GEMM_CODES_LAST (a new format goes before it and moves it). */
  HYRT_GEMM_CODES_LAST = HYRT_GEMM_Q4Z128
};

/* K elements per scale group of the integer-code schemes (Q6_K's is 16). */
enum { HYRT_GEMM_CODE_GROUP = 32 };

static inline int hyrt_gemm_is_codes(int32_t scheme) {
  return scheme == HYRT_GEMM_W4A8 || scheme == HYRT_GEMM_W8A8_G32 ||
         (scheme >= HYRT_GEMM_Q4K && scheme <= HYRT_GEMM_CODES_LAST);
}

/* How an integer-code scheme's panels hold a weight (codegen/brgemm.h
 * "Grouped integer kernels", codegen/pack.h): `bits`-wide unsigned codes,
 * one sub-scale (and sub-min) per `group` K elements; `super_group` 0: the
 * scale (and min) are fp16 per group; > 0: fp16 d (and dmin) per
 * super-block, int8 sc (and u8 m) per group, scale = d * sc, min = dmin *
 * m. `codebook` 1: a 4-bit code n stands for kvalues_iq4nl[n] + 128. */
typedef struct hyrt_code_format {
  int32_t bits, group, super_group, asymmetric, codebook;
} hyrt_code_format;

static inline hyrt_code_format hyrt_gemm_code_format(int32_t scheme) {
  hyrt_code_format f = {0, 0, 0, 0, 0};
  switch (scheme) {
  case HYRT_GEMM_W4A8: f.bits = 4, f.group = 32; break;
  case HYRT_GEMM_W8A8_G32: f.bits = 8, f.group = 32; break;
  case HYRT_GEMM_Q4K: f.bits = 4, f.group = 32, f.super_group = 256, f.asymmetric = 1; break;
  case HYRT_GEMM_Q5K: f.bits = 8, f.group = 32, f.super_group = 256, f.asymmetric = 1; break;
  case HYRT_GEMM_Q6K: f.bits = 8, f.group = 16, f.super_group = 256; break;
  case HYRT_GEMM_IQ4XS: f.bits = 4, f.group = 32, f.super_group = 256, f.codebook = 1; break;
  case HYRT_GEMM_IQ4NL: f.bits = 4, f.group = 32, f.codebook = 1; break;
  case HYRT_GEMM_Q4Z: f.bits = 4, f.group = 32, f.super_group = 128, f.asymmetric = 1; break;
  case HYRT_GEMM_Q4_1: f.bits = 4, f.group = 32, f.asymmetric = 1; break;
  case HYRT_GEMM_Q5_1: f.bits = 8, f.group = 32, f.asymmetric = 1; break;
  /* One group per super-block: the int32 sums run over all 128 elements
   * and fold once (sc = 1, m = the zero point; A's scale per 128). */
  case HYRT_GEMM_Q4Z128: f.bits = 4, f.group = 128, f.super_group = 128, f.asymmetric = 1; break;
  default: break;
  }
  return f;
}

/* The packed layout's name of a code scheme (artifact manifests, kernel
 * dispatches): "q4_g32", "q8_g32", "q4k", "q5k", "q6k", "iq4xs", "iq4nl",
 * "q4z", "q4_1", "q5_1", "q4z128"; NULL for other schemes. */
static inline const char *hyrt_gemm_code_layout_name(int32_t scheme) {
  static const char *const names[] = {"q4_g32", "q8_g32", "q4k",  "q5k",  "q6k",   "iq4xs",
                                      "iq4nl",  "q4z",    "q4_1", "q5_1", "q4z128"};
  return hyrt_gemm_is_codes(scheme) ? names[scheme - HYRT_GEMM_W4A8] : NULL;
}

/* The code scheme whose layout is named `name`, or -1. */
static inline int32_t hyrt_gemm_code_scheme_of_layout(const char *name, size_t length) {
  for (int32_t s = HYRT_GEMM_W4A8; s <= HYRT_GEMM_CODES_LAST; ++s)
    if (strlen(hyrt_gemm_code_layout_name(s)) == length &&
        memcmp(hyrt_gemm_code_layout_name(s), name, length) == 0)
      return s;
  return -1;
}

/* K elements a code scheme's panels are whole in (a super-block, else a
 * group): K is padded to it. */
static inline int64_t hyrt_gemm_code_unit(int32_t scheme) {
  hyrt_code_format f = hyrt_gemm_code_format(scheme);
  return f.super_group ? f.super_group : f.group;
}

/* Bytes of one 32-column panel of a code scheme over K (padded to whole
 * units): per group group/4 K quads of 32 x 4 codes (64 bytes for 4-bit
 * codes, 128 for 8-bit); one-level: then fp16 scales[32] (and mins[32]);
 * two-level: then sc[32] int8 and m[32] u8 (64 bytes), each super-block
 * led by fp16 d[32] (and dmin[32]). */
static inline int64_t hyrt_gemm_code_panel_bytes(int32_t scheme, int64_t K) {
  hyrt_code_format f = hyrt_gemm_code_format(scheme);
  const int64_t unit = hyrt_gemm_code_unit(scheme);
  const int64_t units = (K + unit - 1) / unit;
  const int64_t codes = f.group / 4 * (f.bits == 4 ? 64 : 128);
  if (!f.super_group)
    return units * (codes + (f.asymmetric ? 128 : 64));
  return units * ((f.asymmetric ? 128 : 64) + f.super_group / f.group * (codes + 64));
}

/* K elements per weight-scale group of HYRT_GEMM_W8A8_G128, and the K and N
 * extent of an FP8 block. */
enum { HYRT_GEMM_GROUP_K = 128 };

static inline int hyrt_gemm_is_fp8(int32_t scheme) {
  return scheme == HYRT_GEMM_FP8 || scheme == HYRT_GEMM_FP8_F32 ||
         scheme == HYRT_GEMM_FP8_FUSED;
}

/* Elements per row of converted activations of K elements of `elem` bytes
 * read `group` at a time by the kernel (bf16: 2, u8: 4). A row stride that
 * is a multiple of 1 KiB puts the rows of a block (up to 14-28 streams)
 * into 1-4 of the 64 L1 sets and thrashes their 12 ways (measured: the
 * down projection of dense-1b, K = 8192, ran at ~half the speed of the
 * K = 2048 GEMMs); one extra cache line per row spreads them over the sets. */
static inline int64_t hyrt_gemm_activation_lda(int64_t K, int64_t elem, int64_t group) {
  int64_t lda = (K + group - 1) / group * group;
  if ((lda * elem) % 1024 == 0)
    lda += 64 / elem;
  return lda;
}

/* Elements of K the kernels read per activation row: K, or for
 * HYRT_GEMM_W8A8_G128 and FP8 whole groups of 128 (the padding 0). */
static inline int64_t hyrt_gemm_activation_k(int32_t scheme, int64_t K) {
  if (hyrt_gemm_is_codes(scheme))
    return (K + hyrt_gemm_code_unit(scheme) - 1) / hyrt_gemm_code_unit(scheme) *
           hyrt_gemm_code_unit(scheme);
  return scheme == HYRT_GEMM_W8A8_G128 || hyrt_gemm_is_fp8(scheme)
             ? (K + HYRT_GEMM_GROUP_K - 1) / HYRT_GEMM_GROUP_K * HYRT_GEMM_GROUP_K
             : K;
}

/* Integer-code schemes: bytes of the per-token scales and of the group
 * sums that precede the s8 rows in scratch (each block 64-byte aligned). */
static inline int64_t hyrt_gemm_codes_scale_bytes(int64_t M) { return (M * 4 + 63) / 64 * 64; }
/* (Pairs {sum, scale} per 16 K-elements, the smallest group, over K padded
 * to 256: room for every scheme, per-group activation scales included.) */
static inline int64_t hyrt_gemm_codes_sum_bytes(int64_t M, int64_t K) {
  return (M * ((K + 255) / 256 * 16) * 2 * 4 + 63) / 64 * 64;
}

/* Bytes of scratch for M rows: per-token scales (64-byte aligned block) then
 * the u8 rows for W8A8 (scales, group sums, then s8 rows for the
 * integer-code schemes); the bf16 rows for BF16 and FP8; padded fp32 rows for
 * FP8_F32 when K is not whole blocks; none for the f32 kernels. */
static inline int64_t hyrt_gemm_scratch_bytes_for(int32_t scheme, int64_t M, int64_t K) {
  switch (scheme) {
  case HYRT_GEMM_BF16:
    return M * hyrt_gemm_activation_lda(K, 2, 2) * 2;
  case HYRT_GEMM_W8A8:
    return (M * 4 + 63) / 64 * 64 + M * hyrt_gemm_activation_lda(K, 1, 4);
  case HYRT_GEMM_W8A8_G128:
    return (M * 4 + 63) / 64 * 64 +
           M * hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 1, 4);
  case HYRT_GEMM_W4A8:
  case HYRT_GEMM_W8A8_G32:
  case HYRT_GEMM_Q4K:
  case HYRT_GEMM_Q5K:
  case HYRT_GEMM_Q6K:
  case HYRT_GEMM_IQ4XS:
  case HYRT_GEMM_IQ4NL:
  case HYRT_GEMM_Q4Z:
  case HYRT_GEMM_Q4_1:
  case HYRT_GEMM_Q5_1:
  case HYRT_GEMM_Q4Z128:
    return hyrt_gemm_codes_scale_bytes(M) + hyrt_gemm_codes_sum_bytes(M, K) +
           M * hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 1, 4);
  case HYRT_GEMM_FP8:
  case HYRT_GEMM_FP8_FUSED:
    return M * hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 2, 2) * 2;
  case HYRT_GEMM_FP8_F32: /* only used when K is not whole blocks */
    return K % HYRT_GEMM_GROUP_K
               ? M * hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 4, 1) * 4
               : 0;
  default:
    return 0;
  }
}

#ifdef __cplusplus
}
#endif

#endif /* HYRT_GEMM_LAYOUT_H */
