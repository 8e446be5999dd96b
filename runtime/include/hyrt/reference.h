/* hyrt/reference.h - fp32 reference kernels: the meaning of every hyc op.
 *
 * `--target=reference` lowers each hyc op to one call here; optimized kernels
 * are tested against these. All tensors are dense, row-major fp32 unless noted;
 * weights of linear layers are [N][K] (output rows, Hugging Face layout).
 * Plain C ABI so that LLVM-generated code can call them by name.
 */
#ifndef HYRT_REFERENCE_H
#define HYRT_REFERENCE_H

#include "hyrt/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[t][:] = table[ids[t]][:]. Ids are validated by the runtime beforehand;
 * an id outside [0, vocab) yields a zero row. */
void hyrt_ref_embedding(const float *table, int64_t vocab, int64_t dim,
                        const int32_t *ids, int64_t num_tokens, float *out);

/* s = x (+ residual when residual != NULL); residual_out = s when given;
 * out = s / sqrt(mean(s^2) + eps) * w. */
void hyrt_ref_rms_norm(const float *x, const float *residual, const float *w,
                       int64_t rows, int64_t dim, float eps, float *out,
                       float *residual_out);

/* Rotary embedding over x[T][heads][head_dim]; the first rotary_dim dims of
 * each head rotate, the rest are copied. neox != 0 pairs (i, i + rotary_dim/2)
 * (Hugging Face rotate_half); neox == 0 pairs (2i, 2i+1) (GGUF/llama2.c).
 * angle = positions[t] * inv_freq[i]; cos and sin are multiplied by mscale
 * (YaRN attention factor; 1 otherwise). */
void hyrt_ref_rope(const float *x, const int32_t *positions, int64_t num_tokens,
                   int64_t heads, int64_t head_dim, int64_t rotary_dim,
                   int32_t neox, const float *inv_freq, float mscale,
                   float *out);

/* out[m][n] = sum_k x[m][k] * w[n][k] + (bias ? bias[n] : 0). */
void hyrt_ref_matmul(const float *x, const float *w, const float *bias,
                     int64_t M, int64_t N, int64_t K, float *out);
/* hyrt_ref_matmul on x rounded to bf16 (nearest even): the semantics of the
 * native bf16 kernels, which read bf16 activations and accumulate in fp32. */
void hyrt_ref_matmul_bf16_activations(const float *x, const float *w,
                                      const float *bias, int64_t M, int64_t N,
                                      int64_t K, float *out);

/* Rows of [gate | up] (2n floats each) -> silu(gate) * up (n floats each),
 * through hyrt_ref_silu_mul. */
void hyrt_ref_silu_mul_halves(const float *gate_up, int64_t rows, int64_t n,
                              float *out);

/* Calibration observer (abi.h, hyrt_observe_v0): folds max |x[t][j]| of
 * the rows x[rows][cols] into the artifact's observer `slot`, which feeds
 * the weights named in `feeds`. Reads x only. */
/* In place: data[0..n) = the sum over the group of `group_size` ranks,
 * through the collectives registered in hyrt_collectives_state() (abi.h);
 * a group of 1 returns at once. */
void hyrt_ref_all_reduce_sum(float *data, int64_t n, int64_t group_size);
/* out[r] = the ranks' in[r] side by side (rank order, `cols` each):
 * out[rows][cols * group_size], this rank's block at column rank * cols.
 * Through the same registered all-reduce: every other block is zero, and
 * x + 0 is x, so the result is exact. */
void hyrt_ref_all_gather_cols(const float *in, int64_t rows, int64_t cols, float *out,
                              int64_t group_size, int64_t rank);
/* Token-distributed expert parallel, rank `rank` of `group_size`, each
 * holding `experts_per_rank` consecutive experts. Dispatch: the rank takes
 * its own tokens [T rank / N, T (rank + 1) / N) of x[T][dim] with their
 * routes ids / weights [T][top_k], counts per destination rank the tokens
 * with an expert there, exchanges the counts, then sends each such token
 * once per destination (its row, per slot the destination's local expert
 * or -1, and the weight) in one batched exchange (hyrt_collectives_v0's
 * all_to_all_v). out_rows [T][dim] / out_ids / out_weights [T][top_k] get
 * the tokens this rank received (source-rank order), then ids -1 and
 * weights 0; sent[T * top_k] the token of each row this rank sent
 * (destination order, then -1); counts[2 * group_size] the rows sent to
 * and received from each rank. Undispatch sends each received token's
 * result row (results[T][dim], in received order) back to its source,
 * which adds them into its tokens' rows, and gathers the tokens' rows:
 * out[T][dim] on every rank (a token with no expert anywhere is 0). */
void hyrt_ref_moe_dispatch(const float *x, const int32_t *ids, const float *weights,
                           int64_t num_tokens, int64_t dim, int64_t top_k,
                           int64_t experts_per_rank, int64_t group_size, int64_t rank,
                           float *out_rows, int32_t *out_ids, float *out_weights,
                           int32_t *sent, int32_t *counts);
void hyrt_ref_moe_undispatch(const float *results, const int32_t *sent, const int32_t *counts,
                             int64_t num_tokens, int64_t dim, int64_t group_size, int64_t rank,
                             float *out);
hyrt_collectives_v0 *hyrt_collectives_state(void);

void hyrt_ref_observe_absmax(const float *x, int64_t rows, int64_t cols,
                             int64_t slot, const char *feeds);

/* out[r] = x[rows[r]] for r < num_rows (rows of `dim` floats). */
void hyrt_ref_gather_rows(const float *x, const int32_t *rows,
                          int64_t num_rows, int64_t dim, float *out);

/* Per-token symmetric int8 (the activation half of W8A8): scale[m] =
 * max|x[m]| / 127 (1 for an all-zero row), q = clamp(round-to-nearest-even(
 * x * (1/scale)), -127, 127); a row with a NaN or Inf gets scale NaN and
 * q = 0, which poisons the GEMM outputs of that row. */
void hyrt_ref_quantize_rows(const float *x, int64_t M, int64_t K, int8_t *q,
                            float *scale);
/* hyrt_ref_rms_norm / hyrt_ref_silu_mul whose fp32 rows go through
 * hyrt_ref_quantize_rows instead of being stored (residual_out is still
 * written when given). */
void hyrt_ref_rms_norm_quantize(const float *x, const float *residual,
                                const float *w, int64_t rows, int64_t dim,
                                float eps, int8_t *q, float *scale,
                                float *residual_out);
void hyrt_ref_silu_mul_quantize(const float *gate, const float *up,
                                int64_t rows, int64_t dim, int8_t *q,
                                float *scale);
/* out[m][n] = scale[m] * w_scale[n] * sum_k q[m][k] * w_q[n][k] + bias[n]
 * (the integer sum is exact). */
void hyrt_ref_matmul_w8a8_quantized(const int8_t *q, const float *scale,
                                    const int8_t *w_q, const float *w_scale,
                                    const float *bias, int64_t M, int64_t N,
                                    int64_t K, float *out);

/* W8A8 semantics: each row of x is quantized symmetrically per token
 * (scale = max|x|/127, q = round-to-nearest-even(x * (1/scale)) clamped to
 * [-127, 127]; a NaN or Inf in the row makes the row NaN), multiplied
 * exactly by the int8 weights w_q ([N][K], row-major) and rescaled:
 * out = scale_x * w_scale[n] * sum_k q_x[k] * w_q[n][k] + bias[n]
 * (hyrt_ref_quantize_rows, then hyrt_ref_matmul_w8a8_quantized). */
void hyrt_ref_matmul_w8a8(const float *x, const int8_t *w_q,
                          const float *w_scale, const float *bias, int64_t M,
                          int64_t N, int64_t K, float *out);

/* Elementwise over n values. */
void hyrt_ref_add(const float *a, const float *b, int64_t n, float *out);
/* out = silu(gate) * up = gate / (1 + exp(-gate)) * up. */
void hyrt_ref_silu_mul(const float *gate, const float *up, int64_t n,
                       float *out);

/* Copies a block of columns between row-major matrices (slices and
 * concatenation along the last dim): for r < rows, c < cols
 * dst[r*dst_stride + dst_offset + c] = src[r*src_stride + src_offset + c]. */
void hyrt_ref_copy_columns(const float *src, int64_t src_stride,
                           int64_t src_offset, int64_t rows, int64_t cols,
                           float *dst, int64_t dst_stride, int64_t dst_offset);

/* Writes k[t] (and v[t] when v != NULL) of every step token into the page of
 * its sequence at its position: page = block_tables[s*max_pages_per_seq +
 * pos / page_size], slot pos % page_size. k is [T][num_kv_heads][k_head_dim],
 * v is [T][num_kv_heads][v_head_dim]. */
void hyrt_ref_kv_cache_append(hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                              int64_t layer, const float *k, const float *v);

/* Extend attention. For token t of sequence s at position p the keys are the
 * cached positions [0, seq_prefix_len[s]) read from the cache, followed by the
 * step tokens of s with position <= p read from k / v. q is [T][num_heads][Dk],
 * k [T][Hkv][Dk], v [T][Hkv][Dv], out [T][num_heads][Dv]. Query head h uses
 * KV head h / (num_heads / Hkv). softmax(q.k * scale) . v */
void hyrt_ref_attention(const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                        int64_t layer, const float *q, const float *k,
                        const float *v, int64_t num_heads, float scale,
                        float *out);

/* Attention that reads every key from the cache: token t at position p sees
 * cached positions [0, p] of its sequence (its own KV must be appended first).
 * Used for decode. Shapes as hyrt_ref_attention. */
void hyrt_ref_paged_attention(const hyrt_kv_cache_v0 *kv,
                              const hyrt_step_v0 *step, int64_t layer,
                              const float *q, int64_t num_heads, float scale,
                              float *out);

/* DeepSeek MLA, plain (non-absorbed) form, keys from the latent cache. The
 * cache's k rows are [kv_lora_rank + rope_dim]: normalized latent c, then the
 * roped shared k_pe. For token t at position p, each cached position j <= p
 * gives per head h: k = [W_k,h c_j ; k_pe_j], v = W_v,h c_j, where w_kv_b is
 * [num_heads*(nope_dim+v_dim)][kv_lora_rank] with, per head, nope_dim k rows
 * then v_dim v rows. q_nope [T][H][nope_dim], q_pe [T][H][rope_dim] (roped),
 * out [T][H][v_dim]. */
void hyrt_ref_mla_attention(const hyrt_kv_cache_v0 *kv,
                            const hyrt_step_v0 *step, int64_t layer,
                            const float *q_nope, const float *q_pe,
                            const float *w_kv_b, int64_t num_heads,
                            int64_t nope_dim, int64_t rope_dim, int64_t v_dim,
                            int64_t kv_lora_rank, float scale, float *out);

/* MoE routing over logits[T][E].
 * scores = softmax(logits) (scoring 0) or sigmoid(logits) (scoring 1).
 * sel = scores + correction_bias (when given; used for selection only).
 * When n_group > 1: the E experts form n_group equal groups; a group's score
 * is its max sel (group_score 0) or the sum of its two largest sel
 * (group_score 1); the topk_group best groups are kept, others excluded.
 * ids = top_k experts by sel (ties: lower index first), in descending order;
 * weights = scores[ids]; renormalize != 0 divides by their sum; then weights
 * *= routed_scaling_factor. */
void hyrt_ref_moe_route(const float *logits, const float *correction_bias,
                        int64_t num_tokens, int64_t num_experts, int64_t top_k,
                        int32_t scoring, int64_t n_group, int64_t topk_group,
                        int32_t group_score, int32_t renormalize,
                        float routed_scaling_factor, float *weights,
                        int32_t *ids);

/* Groups the T*top_k (token, slot) pairs by expert, stable in token order:
 * out_x[r] = x[rows[r] / top_k]; rows[r] = t*top_k + j; offsets[e] is the
 * first permuted row of expert e, offsets[E] = the pairs kept. Expert id i
 * is local expert i - first_expert (an expert-parallel rank holds experts
 * [first_expert, first_expert + num_experts)); pairs of other experts are
 * dropped, and rows[offsets[E] .. T*top_k) are set to -1. */
void hyrt_ref_moe_permute(const float *x, const int32_t *ids,
                          int64_t num_tokens, int64_t dim, int64_t top_k,
                          int64_t num_experts, int64_t first_expert, float *out_x,
                          int32_t *offsets, int32_t *rows);

/* out[r][n] = sum_k x[r][k] * w[e][n][k] for rows r in [offsets[e],
 * offsets[e+1]). w is [E][N][K]. */
void hyrt_ref_moe_grouped_matmul(const float *x, const float *w,
                                 const int32_t *offsets, int64_t num_rows,
                                 int64_t num_experts, int64_t N, int64_t K,
                                 float *out);
/* W8A8 with one weight scale per `group` K-elements (the last group may be
 * shorter): w_scale[N][ceil(K/group)]; activations quantized per token as
 * hyrt_ref_matmul_w8a8 does; each group's int8 products summed exactly,
 * out = bias + sum_g a_scale * w_scale[n][g] * sum_g (in double). */
void hyrt_ref_matmul_w8a8_grouped(const float *x, const int8_t *w_q, const float *w_scale,
                                  const float *bias, int64_t M, int64_t N, int64_t K,
                                  int64_t group, float *out);

/* Integer codes with their scales in packed panels, scheme one of
 * hyrt_gemm_is_codes (hyrt/gemm_layout.h hyrt_gemm_code_format: HYRT_GEMM_W4A8
 * weight = scale[n][g] * (code - 8) with fp16 scales per 32; the stored
 * formats with two-level scales, mins and the IQ4 codebook likewise).
 * Activations quantized per token as hyrt_ref_matmul_w8a8 does; each
 * group's integer products summed exactly, out = bias + a_scale *
 * sum_g (scale * dot_g - min * sum_g a) (in double). The weight is `parts`
 * matrices of N / parts rows, each packed on its own panels ([gate; up]:
 * 2). */
void hyrt_ref_matmul_codes(const float *x, const uint8_t *w, const float *bias, int64_t M,
                           int64_t N, int64_t K, int64_t scheme, int64_t parts, float *out);
/* hyrt_ref_matmul_codes per expert: w is E packed [N][K] matrices (each
 * `parts` matrices of N / parts rows). */
void hyrt_ref_moe_grouped_matmul_codes(const float *x, const uint8_t *w,
                                       const int32_t *offsets, int64_t num_rows,
                                       int64_t num_experts, int64_t N, int64_t K,
                                       int64_t scheme, int64_t parts, float *out);

/* FP8 weight-only: codes [N][K] e4m3fn, factors one per 128 x 128 block;
 * the weight is `parts` matrices of N / parts rows stacked ([gate; up]: 2),
 * each with its own row blocks ([parts * ceil(N/parts/128)][ceil(K/128)]).
 * out = bias + x . (decode(code) * factor)^T with fp32 activations. */
void hyrt_ref_matmul_fp8(const float *x, const uint8_t *codes, const float *factors,
                         const float *bias, int64_t M, int64_t N, int64_t K, int64_t parts,
                         float *out);

/* hyrt_ref_matmul_fp8 per expert (codes [E][N][K], factors per expert as
 * above). */
void hyrt_ref_moe_grouped_matmul_fp8(const float *x, const uint8_t *codes,
                                     const float *factors, const int32_t *offsets,
                                     int64_t num_rows, int64_t num_experts, int64_t N,
                                     int64_t K, int64_t parts, float *out);

/* hyrt_ref_moe_grouped_matmul_w8a8 with per-group scales
 * (w_scale[E][N][ceil(K/group)]). */
void hyrt_ref_moe_grouped_matmul_w8a8_grouped(const float *x, const int8_t *w_q,
                                              const float *w_scale, const int32_t *offsets,
                                              int64_t num_rows, int64_t num_experts, int64_t N,
                                              int64_t K, int64_t group, float *out);

/* hyrt_ref_moe_grouped_matmul with W8A8 semantics (hyrt_ref_matmul_w8a8):
 * w_q is [E][N][K] int8, w_scale [E][N]. */
void hyrt_ref_moe_grouped_matmul_w8a8(const float *x, const int8_t *w_q,
                                      const float *w_scale,
                                      const int32_t *offsets, int64_t num_rows,
                                      int64_t num_experts, int64_t N, int64_t K,
                                      float *out);
/* hyrt_ref_moe_grouped_matmul on x rounded to bf16 (nearest even). */
void hyrt_ref_moe_grouped_matmul_bf16_activations(
    const float *x, const float *w, const int32_t *offsets, int64_t num_rows,
    int64_t num_experts, int64_t N, int64_t K, float *out);

/* out[t] = sum_j weights[t][j] * y[r] where rows[r] == t*top_k + j. */
/* hyrt_ref_moe_unpermute, then out[t] += add0[t] and += add1[t] in fp32
 * (each optional). */
void hyrt_ref_moe_unpermute_add(const float *y, const int32_t *rows,
                                const float *weights, int64_t num_tokens,
                                int64_t top_k, int64_t dim, const float *add0,
                                const float *add1, float *out);
void hyrt_ref_moe_unpermute(const float *y, const int32_t *rows,
                            const float *weights, int64_t num_tokens,
                            int64_t top_k, int64_t dim, float *out);

#ifdef __cplusplus
}
#endif

#endif /* HYRT_REFERENCE_H */
