/* hyrt/abi.h - the versioned C ABI between a compiled hyc artifact and libhyrt.
 *
 * An artifact (model.so or a standalone executable) exports, by these stable
 * names:
 *   int32_t  hyc_abi_version;                 == HYRT_ABI_VERSION
 *   int64_t  hyc_arena_bytes;                 activation arena needed at max shape
 *   int32_t  hyc_extend_v0(const hyrt_step_v0*, hyrt_kv_cache_v0*,
 *                          void *const *weights, void *arena);
 *   int32_t  hyc_decode_v0(same);
 * and optionally (artifacts compiled since the profiler landed):
 *   hyrt_profile_v0 *hyc_profile_v0(void);    the artifact's op-kind profile
 * and only where compiled with `hyc compile --calibration-build`:
 *   hyrt_observe_v0 *hyc_observe_v0(void);    its activation observers
 * and, since the artifact integrity checks (a library without it is refused:
 * recompile it):
 *   const char hyc_artifact_desc_v0[];        the library's own description
 * and, in optimized variants since the load-time self-test (optional: a
 * library without it has nothing tested):
 *   const hyrt_kernel_table_v0 hyc_kernels_v0; the generated kernels it embeds
 * Entry points return 0 on success, else one of the HYRT_STEP_* codes below
 * (the step was refused before anything was written). `weights` is the
 * table of weight base pointers in manifest order; `arena` is 64-byte
 * aligned scratch of hyc_arena_bytes bytes owned by the caller.
 *
 * hyc_artifact_desc_v0 is a NUL-terminated JSON object that the runtime
 * compares with manifest.json field by field before calling anything, so
 * that a library from another artifact, or an edited manifest, is refused
 * instead of run (docs/artifact.md):
 *   {"abi_version": 4, "variant": "avx2",
 *    "entry_points": {"extend": "hyc_extend_v0", "decode": "hyc_decode_v0"},
 *    "limits": {"max_seq_len": N, "max_batch_tokens": N, "max_seqs": N},
 *    "vocab_size": N, "arena_bytes": N,
 *    "kv_cache": {"num_layers": N, "num_kv_heads": N, "k_head_dim": N,
 *                 "v_head_dim": N, "dtype": "bf16"},
 *    "weights": [{"name": "...", "dtype": "s8_vnni4", "shape": [..],
 *                 "offset": N, "nbytes": N, "xxh3": "16 hex digits"}, ...]}
 * `weights` is the entry points' table in order (dtype is the layout the
 * kernels read); xxh3 is XXH3-64 of the tensor's bytes in weights.bin.
 *
 * Plain C so that generated code (LLVM) and the runtime agree without headers.
 * Every struct here is append-only within one ABI version.
 */
#ifndef HYRT_ABI_H
#define HYRT_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: hyrt_step_v0 gained logit_rows (extend computes only the rows asked
 * for). 3: hyrt_collectives_v0 gained all_to_all_v (the runtime writes it
 * into the artifact's struct, which must have room). 4: and all_gather.
 * 5: two-level grouped kernels (GGUF K-quants, IQ4_XS, AWQ) take A's scale
 * per group in {sum, scale} pairs (codegen/brgemm.h): an older artifact's
 * kernels would misread the runtime's activations. */
#define HYRT_ABI_VERSION 5

/* One forward step over a batch of sequences. Tokens of one sequence are
 * contiguous and in position order. For decode every sequence has exactly one
 * token (num_tokens == num_seqs). */
typedef struct hyrt_step_v0 {
  int64_t num_tokens;             /* T */
  int64_t num_seqs;               /* S */
  const int32_t *tokens;          /* [T] token ids */
  const int32_t *positions;       /* [T] absolute position within its sequence */
  const int32_t *token_seq;       /* [T] index of the sequence of each token */
  const int32_t *seq_token_start; /* [S] first token index of the sequence */
  const int32_t *seq_new_len;     /* [S] tokens of the sequence in this step */
  const int32_t *seq_prefix_len;  /* [S] tokens already in the KV cache */
  const int32_t *block_tables;    /* [S][max_pages_per_seq] page ids */
  int64_t max_pages_per_seq;
  float *logits;                  /* [R][vocab] output, row r for token logit_rows[r] */
  int64_t num_logit_rows;         /* R <= T: tokens whose logits are wanted */
  const int32_t *logit_rows;      /* [R] ascending token indices (decode: all) */
} hyrt_step_v0;

/* Paged KV cache. Page p of layer l holds positions
 * [j*page_size, (j+1)*page_size) of a sequence whose block table has p at j.
 * Layout of one layer, head-major within a page (each KV head's rows of a
 * page are contiguous, so attention streams them):
 * k[num_pages][num_kv_heads][page_size][k_head_dim],
 * v[num_pages][num_kv_heads][page_size][v_head_dim], elements of `dtype`
 * (fp32, bf16 rounded to nearest even when written, or int8). MLA stores
 * its latent (kv_lora_rank + rope dim) as k with num_kv_heads == 1 and no v.
 * An int8 cache is symmetric per row: each (position, KV head) row of k and
 * of v has one fp32 scale (max |x| / 127, 0 for an all-zero row) in
 * k_scale_layers / v_scale_layers, laid out like the rows without their
 * head dim: scale[num_pages][num_kv_heads][page_size]; element = code x
 * scale (runtime/reference/kv_int8.h defines the rounding). */
enum { HYRT_KV_F32 = 0, HYRT_KV_BF16 = 1, HYRT_KV_INT8 = 2 };
typedef struct hyrt_kv_cache_v0 {
  int64_t num_layers;
  int64_t num_pages;
  int64_t page_size;
  int64_t num_kv_heads;
  int64_t k_head_dim;
  int64_t v_head_dim;
  void **k_layers; /* [num_layers] */
  void **v_layers; /* [num_layers], entries may be NULL when v_head_dim == 0 */
  int32_t dtype;   /* HYRT_KV_F32, _BF16 or _INT8 (manifest kv_cache.dtype) */
  /* int8 caches only (NULL otherwise): per-row scales of each layer, see
   * above; v entries NULL when v_head_dim == 0. Appended after dtype, so
   * views built by fp32/bf16 code that leaves them zero stay valid. */
  float **k_scale_layers; /* [num_layers] */
  float **v_scale_layers; /* [num_layers] */
} hyrt_kv_cache_v0;

/* Entry point return codes: the step does not fit the bounds the library
 * was compiled for (its arena and tables are sized for exactly these), or
 * is inconsistent. Checked on entry, before anything is read or written. */
enum {
  HYRT_STEP_OK = 0,
  HYRT_STEP_NULL = 1,            /* a required pointer is NULL */
  HYRT_STEP_TOO_MANY_TOKENS = 2, /* num_tokens < 1 or > the compiled bound */
  HYRT_STEP_TOO_MANY_SEQS = 3,   /* num_seqs < 1 or > max_seqs (decode: != num_tokens) */
  HYRT_STEP_LAYOUT = 4,          /* sequences not contiguous, in order, covering every token */
  HYRT_STEP_POSITION = 5,        /* a position past max_seq_len or not prefix + index */
  HYRT_STEP_PAGES = 6,           /* block table too short, or a page id outside the pool */
  HYRT_STEP_LOGIT_ROWS = 7,      /* num_logit_rows > num_tokens or rows not ascending in range */
  HYRT_STEP_TOKEN_ID = 8,        /* a token id outside [0, vocab_size) */
  HYRT_STEP_KV_CACHE = 9,        /* cache geometry or dtype differs from the compiled one */
};

/* What generated entry points check a step against (their compiled
 * bounds); a negative kv_dtype is not checked. */
typedef struct hyrt_step_bounds_v0 {
  int64_t max_tokens; /* extend: max_batch_tokens; decode: max_seqs */
  int64_t max_seqs;
  int64_t max_seq_len;
  int64_t vocab_size;
  int64_t kv_num_layers, kv_num_kv_heads, k_head_dim, v_head_dim, kv_dtype;
  int64_t decode; /* 1: one token per sequence */
} hyrt_step_bounds_v0;

/* The check itself (libhyrt_reference, linked into every artifact): a few
 * compares per sequence and per token. Returns an HYRT_STEP_* code. */
int32_t hyrt_check_step_v0(const hyrt_step_v0 *step, const hyrt_kv_cache_v0 *kv,
                           const hyrt_step_bounds_v0 *bounds);

typedef int32_t (*hyrt_entry_fn_v0)(const hyrt_step_v0 *step,
                                    hyrt_kv_cache_v0 *kv,
                                    void *const *weights, void *arena);

/* Wall time per op kind, kept by the artifact itself: generated code calls
 * hyrt_profile_mark(kind) before every kernel call and mark(NULL) before
 * returning, and the time between two marks goes to the first one's kind.
 * Off unless `enabled` is set; the caller resets it by zeroing num_kinds.
 * Single-threaded: entries run on one thread (kernels fork inside). */
#define HYRT_PROFILE_MAX_KINDS 64
typedef struct hyrt_profile_entry_v0 {
  const char *kind; /* the ukernel's name, owned by the artifact */
  int64_t calls;
  double seconds;
} hyrt_profile_entry_v0;

typedef struct hyrt_profile_v0 {
  int32_t enabled;
  int32_t num_kinds;
  hyrt_profile_entry_v0 entries[HYRT_PROFILE_MAX_KINDS];
  int32_t current; /* index of the open interval's kind, -1 when none */
  double started;  /* when it opened, CLOCK_MONOTONIC seconds */
} hyrt_profile_v0;

typedef hyrt_profile_v0 *(*hyrt_profile_fn_v0)(void);

/* Per-channel activation maxima, kept by a calibration build itself
 * (`hyc compile --calibration-build`, read by `hyc calibrate`): every
 * observed GEMM input (hyc.observe) calls hyrt_ref_observe_absmax, which
 * folds max |x[t][j]| over the step's rows into its slot. `feeds` names the
 * weights that read the input ("a,b,c", owned by the artifact). A slot
 * appears when first observed; the caller resets by zeroing `rows` and
 * `absmax` of every observer. Single-threaded like the profile. */
typedef struct hyrt_observer_v0 {
  const char *feeds;
  int64_t channels;
  int64_t rows;  /* rows (tokens) folded in so far */
  float *absmax; /* [channels], owned by the artifact */
} hyrt_observer_v0;

typedef struct hyrt_observe_v0 {
  int32_t num_observers; /* slots 0 .. num_observers - 1 */
  hyrt_observer_v0 *observers;
} hyrt_observe_v0;

typedef hyrt_observe_v0 *(*hyrt_observe_fn_v0)(void);

/* Collectives of a tensor-parallel rank (issue 14). An artifact whose code
 * exchanges data over a group of N > 1 ranks calls hyrt_cpu_all_reduce_sum
 * and its siblings (hyrt_ref_* in a reference artifact), which run the
 * functions the runtime registered here (through the
 * exported `hyrt_collectives_v0 *hyc_collectives_v0(void)`), e.g. a
 * shared-memory or MPI all-reduce. With nothing registered, another group
 * size registered, or the function failing, it leaves the data as it is
 * and sets `failed` (HYRT_COLLECTIVE_*): the runtime checks it after every
 * step and discards that step with an error. */
enum {
  HYRT_COLLECTIVE_OK = 0,
  HYRT_COLLECTIVE_NOT_REGISTERED = 1, /* no function, or another group size */
  HYRT_COLLECTIVE_FAILED = 2          /* the function returned nonzero */
};

typedef struct hyrt_collectives_v0 {
  int32_t (*all_reduce_sum)(void *ctx, float *data, int64_t n); /* 0 = ok */
  void *ctx;
  int64_t group_size; /* the ranks the registered function reduces over */
  int32_t failed;     /* HYRT_COLLECTIVE_*, sticky until the runtime clears it */
  int64_t calls;      /* collectives run (for `hyc bench --profile`) */
  /* Staged all-to-all of variable sizes (token-distributed expert
   * parallel: hyrt_ref_moe_dispatch / undispatch): send holds the blocks
   * for ranks 0..group_size-1 back to back (send_counts[d] floats each);
   * the counts are exchanged first, then the blocks in one batched
   * exchange; recv gets the blocks from every rank in rank order and
   * recv_counts[s] their sizes (at most recv_capacity floats in all).
   * 0 = ok. */
  int32_t (*all_to_all_v)(void *ctx, const float *send, const int64_t *send_counts,
                          float *recv, int64_t *recv_counts, int64_t recv_capacity);
  /* out[r * n .. (r + 1) * n) = rank r's in[0..n), on every rank (the
   * tensor-parallel column gather and expert parallel's token rows move
   * each value once instead of reducing zeros). 0 = ok. */
  int32_t (*all_gather)(void *ctx, const float *in, int64_t n, float *out);
} hyrt_collectives_v0;

typedef hyrt_collectives_v0 *(*hyrt_collectives_fn_v0)(void);

/* The generated brgemm block kernels a variant library embeds
 * (codegen/brgemm.h), listed by the compiler as the data symbol
 * `hyc_kernels_v0`, so the runtime can run each kernel family on a small
 * problem before the first step (the load-time self-test, docs/artifact.md).
 * `entry` has the brgemm C ABI (hyrt_brgemm_fn in cpu_kernels.h):
 *   entry(a, lda, b, c, ldc, m, post), post -> {bias, a_scale, b_scale}
 * C[m][0:n_block] (=|+=) A[m][0:k] . B with B packed in `b_layout`
 * (codegen/pack.h), for m in 1..m_max. Strings are the compiler's
 * spellings: isa "avx2", "avx512core", "avx512bf16", "avx512vnni", "amx";
 * types A, B and C element types run together ("bf16bf16f32", "u8s8f32",
 * "f32bf16f32", "bf16f8f32", "s8u4f32", "s8u8f32", ...); b_layout "f32_k1",
 * "bf16_vnni2", "s8_vnni4", "f8_vnni2", "u4_grouped", "u8_grouped".
 * Grouped kernels (codegen/brgemm.h "Grouped integer kernels") also read
 * post->a_sum, the fourth pointer: {bias, a_scale, b_scale, a_sum}.
 * Owned by the library.
 * 1: rows gained group and asymmetric (the rows' stride changed, so a
 * version 0 table is not read as version 1).
 * 2: rows gained super_group and codebook (two-level scales and the IQ4_NL
 * code book, GGUF K-quants / IQ4 / AWQ kept as stored); the stride changed
 * again, and a version 1 reader would test such a kernel against the wrong
 * layout. */
#define HYRT_KERNEL_TABLE_VERSION 2
enum { HYRT_KERNEL_EPILOGUE_NONE = 0, HYRT_KERNEL_EPILOGUE_BIAS = 1 };
/* hyrt_kernel_v0.codebook: the value table of a grouped u4 kernel's codes. */
enum {
  HYRT_KERNEL_CODEBOOK_NONE = 0,  /* the code is the value */
  HYRT_KERNEL_CODEBOOK_IQ4NL = 1, /* hyrt/support/iq4nl.h, zero point 128 */
};

typedef struct hyrt_kernel_v0 {
  const char *name;   /* its symbol, e.g. hyc_brgemm_bf16bf16f32_14x32x64_avx512bf16 */
  const void *entry;  /* the kernel's first instruction */
  int64_t code_bytes; /* machine code and its embedded data (jump tables) */
  const char *isa;
  const char *types;
  const char *b_layout;
  int32_t m_max;
  int32_t n_block;
  int32_t k;          /* reduction length (unpadded) */
  int32_t accumulate; /* 0: C = A.B, 1: C = C + A.B */
  int32_t epilogue;   /* HYRT_KERNEL_EPILOGUE_* */
  int32_t stream_c;   /* 1: C stored non-temporally (rows 64-byte aligned) */
  int32_t group;      /* grouped layouts: K elements per scale group; else 0 */
  int32_t asymmetric; /* grouped layouts: 1 when panels carry mins */
  int32_t super_group; /* grouped layouts: K elements per super-block of
                        * two-level scales (d * sc); 0: one-level fp16 */
  int32_t codebook;    /* grouped u4 layouts: HYRT_KERNEL_CODEBOOK_*; else 0 */
} hyrt_kernel_v0;

typedef struct hyrt_kernel_table_v0 {
  int32_t version; /* HYRT_KERNEL_TABLE_VERSION */
  int32_t num_kernels;
  const hyrt_kernel_v0 *kernels;
} hyrt_kernel_table_v0;

#ifdef __cplusplus
}
#endif

#endif /* HYRT_ABI_H */
