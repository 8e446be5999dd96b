/* hyrt/cpu_kernels.h - drivers around compile-time generated microkernels.
 *
 * Optimized targets embed Xbyak-generated brgemm block kernels in the
 * artifact (codegen/) and call these drivers with the kernel's address; a
 * driver converts / quantizes the activations once, then walks 32-column
 * weight panels (split across threads, so each thread streams its own slice
 * of the weights) and row blocks of at most m_max rows. Linked into the
 * artifact next to the reference kernels. Plain C ABI.
 *
 * Every driver computes out[M][N] = x[M][K] . W[N][K]^T (+ bias[N]) with W
 * packed in the kernel's layout (codegen/pack.h, zero padded to 32-column
 * panels) and needs hyrt_gemm_scratch_bytes_for(scheme, M, K) of scratch (hyrt/gemm_layout.h).
 */
#ifndef HYRT_CPU_KERNELS_H
#define HYRT_CPU_KERNELS_H

#include <stdint.h>

#include "hyrt/abi.h"
#include "hyrt/gemm_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A generated brgemm block kernel (codegen/brgemm.h BrgemmFn): C[m][32] =
 * A[m][K] . B_panel for m <= its m_max; lda / ldc in elements; `post` points
 * at {bias, a_scale, b_scale} (three const float *). */
typedef void (*hyrt_brgemm_fn)(const void *a, int64_t lda, const void *b,
                               void *c, int64_t ldc, int64_t m,
                               const void *post);

/* fp32 weights in [ceil(N/32)][K][32] panels; fp32 FMA kernels. */
void hyrt_cpu_gemm_f32(const float *x, int64_t M, int64_t K,
                       const void *w_packed, int64_t N, const float *bias,
                       float *out, void *scratch, hyrt_brgemm_fn kernel,
                       int64_t m_max, int64_t parallel_min_macs);

/* bf16 VNNI2 weights; activations rounded to bf16 (nearest even). */
void hyrt_cpu_gemm_bf16(const float *x, int64_t M, int64_t K,
                        const void *w_packed, int64_t N, const float *bias,
                        float *out, void *scratch, hyrt_brgemm_fn kernel,
                        int64_t m_max, int64_t parallel_min_macs);

/* bf16 VNNI2 weights with fp32 activations on plain AVX-512 FMA: half the
 * weight bytes of f32, no avx512_bf16 needed, activations not rounded. */
void hyrt_cpu_gemm_f32_bf16(const float *x, int64_t M, int64_t K,
                            const void *w_packed, int64_t N, const float *bias,
                            float *out, void *scratch, hyrt_brgemm_fn kernel,
                            int64_t m_max, int64_t parallel_min_macs);

/* W8A8: s8 VNNI4 weights with their per-panel compensation and per-channel
 * scales w_scale[N]; activations quantized per token (scale = max|x| / 127,
 * stored as u8 = q + 128); out = a_scale * w_scale * (acc - comp). */
void hyrt_cpu_gemm_w8a8(const float *x, int64_t M, int64_t K,
                        const void *w_packed, const float *w_scale, int64_t N,
                        const float *bias, float *out, void *scratch,
                        hyrt_brgemm_fn kernel, int64_t m_max,
                        int64_t parallel_min_macs);

/* W8A8 with one weight scale per 128 K-elements (HYRT_GEMM_W8A8_G128):
 * w_packed holds ceil(K/128) zero-padded K = 128 groups per panel,
 * w_scale[N][groups]; `kernel` is the K = 128 u8 x s8 -> f32 accumulating
 * kernel: out = sum_g a_scale * w_scale[n][g] * (int32 sum of group g).
 * The scheme-taking drivers below accept HYRT_GEMM_W8A8_G128 too (scales
 * [E][N][groups] for experts, [gate; up] halves N x groups apart). */
void hyrt_cpu_gemm_w8a8_g128(const float *x, int64_t M, int64_t K,
                             const void *w_packed, const float *w_scale, int64_t N,
                             const float *bias, float *out, void *scratch,
                             hyrt_brgemm_fn kernel, int64_t m_max,
                             int64_t parallel_min_macs);

/* Integer codes with in-panel fp16 group scales (HYRT_GEMM_W4A8: 4-bit,
 * HYRT_GEMM_W8A8_G32: 8-bit; hyrt/gemm_layout.h): activations quantized
 * per token with group sums (hyrt_cpu_quantize_rows_s8_sums), then one
 * call of `kernel` per panel and row block over the whole K padded to
 * whole groups. The scheme-taking drivers below accept both schemes too
 * (w_scale null: the scales are in the panels). */
void hyrt_cpu_gemm_codes(int32_t scheme, const float *x, int64_t M, int64_t K,
                         const void *w_packed, int64_t N, const float *bias, float *out,
                         void *scratch, hyrt_brgemm_fn kernel, int64_t m_max,
                         int64_t parallel_min_macs);

/* FP8 weight-only (HYRT_GEMM_FP8 / HYRT_GEMM_FP8_F32): w_packed holds e4m3
 * codes packed by pack_b_f8, w_scale the [ceil(N/128)][ceil(K/128)] block
 * factors; `kernel` is the K = 128 bf16 kernel (not accumulating) of the
 * scheme's activations. Each thread widens its weight panel to bf16 once
 * (kept in L2 and reused by every row block; per block in L1 when one row
 * block covers M) and adds factor * (its K = 128 product) into out. The
 * scheme-taking drivers below accept both FP8 schemes too (factors
 * [E][row blocks][K blocks] for experts; [gate; up] halves each with their
 * own row blocks). */
void hyrt_cpu_gemm_fp8(int32_t scheme, const float *x, int64_t M, int64_t K,
                       const void *w_packed, const float *w_scale, int64_t N,
                       const float *bias, float *out, void *scratch,
                       hyrt_brgemm_fn kernel, int64_t m_max, int64_t parallel_min_macs);

/* e4m3fn codes -> bf16 bits, exactly: every finite e4m3 value (zero,
 * subnormals, normals) is a bf16 value; S.1111.111 (NaN) becomes the quiet
 * NaN 0x7FC0 with the code's sign. */
void hyrt_cpu_f8_to_bf16(const uint8_t *in, uint16_t *out, int64_t n);

/* hyrt_ref_paged_attention's semantics (token t at position p attends to
 * cached positions [0, p] of its sequence) in fp32, threads over (token,
 * head). Also serves extend attention when the step's keys and values were
 * appended to the cache before it (the compiler checks that). A decode
 * token's positions may be split into up to kv_splits ranges (flash
 * decoding; the schedule's `kv_splits`), each at least 256 positions, whose
 * partial results are merged; 1 = no split. */
void hyrt_cpu_paged_attention(const hyrt_kv_cache_v0 *kv,
                              const hyrt_step_v0 *step, int64_t layer,
                              const float *q, int64_t num_heads, float scale,
                              float *out, int64_t kv_splits);

/* The W8A8 drivers' activation quantization on its own (hyc.quant.quantize
 * on kernel targets): per token scale = max|x| / 127 into a_scale[M], rows
 * of u8 = q + 128 (VNNI's unsigned operand) with `lda` >= K bytes, padded
 * with 128 (zero). A row with NaN or Inf gets scale NaN. */
void hyrt_cpu_quantize_rows_u8(const float *x, int64_t M, int64_t K,
                               int64_t lda, uint8_t *a, float *a_scale);

/* The integer-code schemes' activations (HYRT_GEMM_W4A8, HYRT_GEMM_W8A8_G32):
 * per token q = the value hyrt_cpu_quantize_rows_u8 stores minus 128, kept
 * as s8 (the signed operand of the code kernels), rows of `lda` >= K bytes
 * padded with 0; a_sum[m][g] = sum of row m's q over K-elements
 * [g * group, (g + 1) * group) for g < ceil(K / group). */
void hyrt_cpu_quantize_rows_s8_sums(const float *x, int64_t M, int64_t K, int64_t lda,
                                    int64_t group, int8_t *a, float *a_scale,
                                    int32_t *a_sum);

/* The two-level code schemes' activations (hyrt_code_format.super_group >
 * 0: GGUF K-quants, IQ4_XS, AWQ): each group of `group` K-elements of a row
 * quantized on its own as hyrt_cpu_quantize_rows_u8 quantizes a row (scale
 * = max|x| / 127 over the group), kept as s8; rows of `lda` >= groups *
 * group bytes padded with 0; a_sum[m][2g] = the group's sum of q,
 * a_sum[m][2g+1] = its scale's fp32 bits (codegen/brgemm.h two-level
 * kernels), for every g < groups (those wholly past K: sum 0, scale 1). */
void hyrt_cpu_quantize_groups_s8_sums(const float *x, int64_t M, int64_t K, int64_t lda,
                                      int64_t group, int64_t groups, int8_t *a,
                                      int32_t *a_sum);

/* hyrt_ref_rms_norm (or hyrt_ref_silu_mul) with its fp32 rows quantized by
 * hyrt_cpu_quantize_rows_u8 (lda = dim) instead of stored: the producer
 * of W8A8 activations writing them in the drivers' layout. residual_out
 * (the norm's sum) is still written when given. */
void hyrt_cpu_rms_norm_quantize_u8(const float *x, const float *residual,
                                   const float *w, int64_t rows, int64_t dim,
                                   float eps, uint8_t *a, float *a_scale,
                                   float *residual_out);
void hyrt_cpu_silu_mul_quantize_u8(const float *gate, const float *up,
                                   int64_t rows, int64_t dim, uint8_t *a,
                                   float *a_scale);

/* hyrt_cpu_gemm_w8a8 on activations already quantized by
 * hyrt_cpu_quantize_rows_u8 with lda = K (K a multiple of 4): no scratch,
 * no second quantization when several GEMMs read the same activations. */
void hyrt_cpu_gemm_w8a8_quantized(const uint8_t *a, const float *a_scale,
                                  int64_t M, int64_t K, const void *w_packed,
                                  const float *w_scale, int64_t N,
                                  const float *bias, float *out,
                                  hyrt_brgemm_fn kernel, int64_t m_max,
                                  int64_t parallel_min_macs);

/* SwiGLU on a [gate; up] weight (hyc-global-fuse-gate-up-silu): w_packed
 * holds the packed [N][K] gate matrix followed by the packed [N][K] up
 * matrix in `scheme`'s layout (W8A8: w_scale[2N], gate scales first);
 * out[M][N] = silu(x Wg^T) * (x Wu^T), equal to the two GEMMs followed by
 * hyrt_ref_silu_mul. Scratch as for one GEMM of M rows. */
void hyrt_cpu_gemm_silu_mul(int32_t scheme, const float *x, int64_t M,
                            int64_t K, const void *w_packed,
                            const float *w_scale, int64_t N, float *out,
                            void *scratch, hyrt_brgemm_fn kernel,
                            int64_t m_max, int64_t parallel_min_macs);

/* hyrt_cpu_gemm_silu_mul per expert over expert-grouped rows; expert e's
 * [gate; up] packed pair follows expert e-1's, scales are [E][2N]. */
void hyrt_cpu_grouped_gemm_silu_mul(int32_t scheme, const float *x,
                                    int64_t rows, int64_t K,
                                    const int32_t *offsets, int64_t num_experts,
                                    const void *w_packed, const float *w_scale,
                                    int64_t N, float *out, void *scratch,
                                    hyrt_brgemm_fn kernel, int64_t m_max,
                                    int64_t parallel_min_macs);

/* hyrt_ref_kv_cache_append followed by hyrt_cpu_paged_attention, in one
 * kernel (one parallel region: the threads write the step's key/value rows,
 * then attend over (token, query head)). Same results as the two calls. */
void hyrt_cpu_paged_attention_append(const hyrt_kv_cache_v0 *kv,
                                     const hyrt_step_v0 *step, int64_t layer,
                                     const float *k, const float *v,
                                     const float *q, int64_t num_heads,
                                     float scale, float *out, int64_t kv_splits);

/* hyrt_ref_kv_cache_append on its own (extend's KV writes, MLA's latent
 * rows; v may be NULL): the rows the fused append writes, the same codes
 * and scales, with (token, KV head) rows split across threads. */
void hyrt_cpu_kv_cache_append(hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                              int64_t layer, const float *k, const float *v);

/* Row gathers and last-dim copies, the reference kernels' results bit for
 * bit (hyrt_ref_embedding: ids outside [0, vocab) give zero rows;
 * hyrt_ref_gather_rows; hyrt_ref_copy_columns), rows split across threads. */
void hyrt_cpu_embedding(const float *table, int64_t vocab, int64_t dim,
                        const int32_t *ids, int64_t num_tokens, float *out);
void hyrt_cpu_gather_rows(const float *x, const int32_t *rows, int64_t num_rows,
                          int64_t dim, float *out);
void hyrt_cpu_copy_columns(const float *src, int64_t src_stride, int64_t src_offset,
                           int64_t rows, int64_t cols, float *dst, int64_t dst_stride,
                           int64_t dst_offset);

/* Tensor- and expert-parallel exchanges through the registered collectives
 * (abi.h hyrt_collectives_v0): hyrt_ref_all_reduce_sum / _all_gather_cols /
 * _moe_dispatch / _moe_undispatch (reference.h) with the same results bit
 * for bit and the same failure marking; rows packed and unpacked with
 * memcpy across threads, the returned expert rows summed per token, and
 * the gathers (the columns, undispatch's token rows) through the
 * registered all_gather instead of an all-reduce of zeros. */
void hyrt_cpu_all_reduce_sum(float *data, int64_t n, int64_t group_size);
void hyrt_cpu_all_gather_cols(const float *in, int64_t rows, int64_t cols, float *out,
                              int64_t group_size, int64_t rank);
void hyrt_cpu_moe_dispatch(const float *x, const int32_t *ids, const float *weights,
                           int64_t num_tokens, int64_t dim, int64_t top_k,
                           int64_t experts_per_rank, int64_t group_size, int64_t rank,
                           float *out_rows, int32_t *out_ids, float *out_weights,
                           int32_t *sent, int32_t *counts);
void hyrt_cpu_moe_undispatch(const float *results, const int32_t *sent, const int32_t *counts,
                             int64_t num_tokens, int64_t dim, int64_t group_size, int64_t rank,
                             float *out);

/* RMSNorm of rows of `dim` (x + residual when residual is non-null, that
 * sum stored to residual_out when non-null; in place allowed) and
 * out = SiLU(gate) * up over rows of n: hyrt_ref_rms_norm /
 * hyrt_ref_silu_mul vectorized (16-lane exp; the norm's double sum in
 * another order) and split across threads by rows. The fused kernels
 * (norm / SiLU + quantize, the gate/up GEMM epilogue) use the same row
 * arithmetic, so fused and unfused artifacts agree bit for bit. */
void hyrt_cpu_rms_norm(const float *x, const float *residual, const float *w,
                       int64_t rows, int64_t dim, float eps, float *out,
                       float *residual_out);
void hyrt_cpu_silu_mul(const float *gate, const float *up, int64_t rows, int64_t n,
                       float *out);
/* out = a + b over n floats (hyrt_ref_add bit for bit; out may alias a or
 * b), split across threads from 2^15 elements: the residual add that
 * hyc-global-fuse-residual-norm did not fold into a norm. */
void hyrt_cpu_add(const float *a, const float *b, int64_t n, float *out);

/* hyrt_ref_rope bit for bit (same expressions, in the same order per
 * element), with each token's cos/sin computed once for all its heads and
 * tokens split across threads. */
void hyrt_cpu_rope(const float *x, const int32_t *positions, int64_t num_tokens,
                   int64_t heads, int64_t head_dim, int64_t rotary_dim, int32_t neox,
                   const float *inv_freq, float mscale, float *out);

/* hyrt_ref_mla_attention in the absorbed form (W_UK folded into the query,
 * W_UV into the output; multi-query attention over the latent cache rows,
 * each read once per block for all heads), fp32 online softmax, the cache
 * in fp32 or bf16; kv_b [heads][nope + v][rank] in fp32, or bf16 rows when
 * kv_b_bf16 != 0. Decode tokens split their positions into up to
 * kv_splits ranges (>= 256 positions each), merged after. An extend step of
 * one sequence (consecutive new tokens) may run the plain form instead:
 * every latent it sees expanded once into per-head keys and values, then
 * multi-head attention. plain_form 0: never; > 0: where it costs less, the
 * expansion's multiply-adds weighted by plain_form / 100 against the
 * attention's it saves (the schedule's choice; plain_form_fp32 in its place
 * where the plain form would run on fp32 kernels instead of bf16 dot
 * products: the host or the cache lacks bf16); < 0: always (tests,
 * benchmarks). */
void hyrt_cpu_mla_attention(const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                            int64_t layer, const float *q_nope, const float *q_pe,
                            const void *w_kv_b, int32_t kv_b_bf16, int64_t num_heads,
                            int64_t nope_dim,
                            int64_t rope_dim, int64_t v_dim, int64_t kv_lora_rank,
                            float scale, float *out, int64_t kv_splits,
                            int64_t plain_form, int64_t plain_form_fp32);

/* hyrt_cpu_grouped_gemm (silu_mul = 0) or _silu_mul (1) reading the rows of
 * a hyrt_cpu_moe_permute through its row map instead of its fp32 copies:
 * x is the [num_tokens][K] token rows, rows[r] = t * top_k + j for grouped
 * row r. Each token is converted / quantized once and its u8 / bf16 row
 * copied to its grouped rows: the same activations (bit for bit) as the
 * permuted call. BF16 and W8A8 schemes; scratch:
 * hyrt_gemm_scratch_bytes_for(num_tokens) rounded up to 64, then
 * hyrt_gemm_scratch_bytes_for(rows). */
void hyrt_cpu_grouped_gemm_tokens(int32_t scheme, const float *x, int64_t num_tokens,
                                  int64_t top_k, const int32_t *rows, int64_t K,
                                  const int32_t *offsets, int64_t num_experts,
                                  const void *w_packed, const float *w_scale, int64_t N,
                                  int32_t silu_mul, float *out, void *scratch,
                                  hyrt_brgemm_fn kernel, int64_t m_max,
                                  int64_t parallel_min_macs);

/* MoE routing, permute and combine: hyrt_ref_moe_route / _permute /
 * _unpermute_add with the same results bit for bit (same per-token
 * arithmetic), split across the thread pool. add0 / add1 may be null. */
void hyrt_cpu_moe_route(const float *logits, const float *correction_bias,
                        int64_t num_tokens, int64_t num_experts, int64_t top_k,
                        int32_t scoring, int64_t n_group, int64_t topk_group,
                        int32_t group_score, int32_t renormalize,
                        float routed_scaling_factor, float *weights, int32_t *ids);
/* out_x may be null: offsets and rows only (every reader of the permuted
 * rows gathers them itself, hyrt_cpu_grouped_gemm_tokens). */
void hyrt_cpu_moe_permute(const float *x, const int32_t *ids, int64_t num_tokens,
                          int64_t dim, int64_t top_k, int64_t num_experts,
                          int64_t first_expert, float *out_x, int32_t *offsets,
                          int32_t *rows);
void hyrt_cpu_moe_unpermute_add(const float *y, const int32_t *rows,
                                const float *weights, int64_t num_tokens,
                                int64_t top_k, int64_t dim, const float *add0,
                                const float *add1, float *out);

/* MoE expert GEMMs: rows [offsets[e], offsets[e+1]) of x multiply expert e,
 * whose packed weights follow each other (each a complete packed [N][K]
 * matrix in the scheme's layout) and, for W8A8, whose scales are
 * w_scale[e][N]. `scheme` is HYRT_GEMM_*; scratch as for one GEMM of all
 * rows. Every row is converted / quantized once, then (expert, panel
 * block) work items over the non-empty experts go to all threads. */
void hyrt_cpu_grouped_gemm(int32_t scheme, const float *x, int64_t rows,
                           int64_t K, const int32_t *offsets,
                           int64_t num_experts, const void *w_packed,
                           const float *w_scale, int64_t N, float *out,
                           void *scratch, hyrt_brgemm_fn kernel, int64_t m_max,
                           int64_t parallel_min_macs);

#ifdef __cplusplus
}
#endif

#endif /* HYRT_CPU_KERNELS_H */
