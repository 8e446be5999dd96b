// hyrt/artifact/artifact.h - loading a hyc artifact directory (docs/artifact.md):
// manifest.json parsing and checks, the compiled library and its entry
// points, weights.bin in memory with its pointer table, and the tokenizer.
#pragma once

#include "hyrt/abi.h"
#include "hyrt/status.h"
#include "hyrt/text/tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyrt {

/// One entry of manifest `weights.tensors`.
struct TensorEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t nbytes = 0;
  /// XXH3-64 of the tensor's bytes as 16 hex digits ("" when absent).
  std::string xxh3;
};

/// manifest `limits`: the bounds the artifact's memory plan is sized for.
struct ArtifactLimits {
  int64_t max_seq_len = 0;
  int64_t max_batch_tokens = 0;
  int64_t max_seqs = 0;
};

/// manifest `model` (descriptive; only vocab_size is required).
struct ModelInfo {
  std::string arch, source;
  int64_t vocab_size = 0, hidden_size = 0, num_layers = 0, num_heads = 0,
          num_kv_heads = 0, head_dim = 0;
  /// Routed experts and experts per token (0 for dense models).
  int64_t num_experts = 0, num_experts_per_tok = 0;
  int32_t bos_token_id = -1, eos_token_id = -1; ///< -1: none
};

/// manifest `kv_cache`: shape of one KV cache entry (pages are the
/// runtime's choice).
struct KvCacheInfo {
  int64_t num_layers = 0, num_kv_heads = 0, k_head_dim = 0, v_head_dim = 0;
  std::string dtype = "f32";
};

/// One entry of manifest `variants`: the model compiled for one ISA level
/// (docs/artifact.md). The loader runs the best one the host supports.
struct Variant {
  /// "reference", "avx2", "avx512", "avx512-bf16" or "amx".
  std::string name;
  std::string library; ///< file in the artifact directory, or "self"
  /// CPU features (/proc/cpuinfo names) every kernel of the variant needs.
  std::vector<std::string> cpu_features;
  int64_t arena_bytes = 0;
  /// The entry points' weight table: indices into Manifest::tensors.
  std::vector<int64_t> weights;
};

/// The parsed manifest.json.
struct Manifest {
  std::string format, target;
  int64_t abi_version = 0;
  std::string extend_symbol, decode_symbol;
  /// In preference order, lowest ISA first. A manifest without `variants`
  /// (one library at top level) parses as one variant named after `target`
  /// whose table is every tensor in order.
  std::vector<Variant> variants;
  /// True for a manifest from before variants (library, cpu_features and
  /// arena_bytes at top level): error messages name those fields.
  bool top_level_variant = false;
  /// The variant an `--emit=exe` executable has linked in (empty: none).
  std::string executable_variant;
  ArtifactLimits limits;
  ModelInfo model;
  KvCacheInfo kv_cache;
  std::string weights_file;
  std::vector<TensorEntry> tensors;
  std::string tokenizer; ///< empty: none
  /// Tensor parallel (`hyc compile --tp`): this artifact is rank tp_rank of
  /// tp_size; rank 0's directory holds rank r's in ranks/r.
  int64_t tp_rank = 0, tp_size = 1;
  /// With tp_size > 1: the compile's identity (16 hex digits), equal in
  /// every rank's manifest of one compile; start_ranks refuses a mismatch.
  std::string tp_compile_id;
};

/// Parses and validates manifest text; `origin` (a path) prefixes errors.
/// Checks format == "hyc-artifact" and abi_version == HYRT_ABI_VERSION, and
/// that every required field is present with the right type and range.
Status parse_manifest(const std::string &text, const std::string &origin,
                      Manifest *out);

/// A variant the host runs but the loader refused (its kernel self-test
/// failed): `why` completes "<name> ...", e.g. "failed its kernel self-test
/// (brgemm_... (m=7): ...)".
struct RefusedVariant {
  std::string name, why;
};

/// Which variant to run. `forced` (HYC_ISA, empty: none) names one: it is
/// refused when the artifact has no such variant or `host_features` lacks
/// one of its features. Otherwise the last variant whose features the host
/// has. `why` says which and why ("avx512-bf16: best of avx2, avx512,
/// avx512-bf16 that this CPU runs"); errors name the missing features
/// (`amx_note`, when not empty, says why AMX is absent). Variants in
/// `refused` are passed over (and named in `why` and errors); a forced
/// variant is not looked up there (the loader refuses it itself).
Status choose_variant(const std::vector<Variant> &variants,
                      const std::vector<std::string> &host_features,
                      const std::string &forced, const std::string &amx_note,
                      int64_t *index, std::string *why,
                      const std::vector<RefusedVariant> &refused = {});

/// Bytes one element of `dtype` takes (f32, f16, bf16, i8, u8, i32, i64,
/// ...), or 0 for a dtype this runtime does not size (then nbytes is taken
/// as given).
int64_t dtype_size(const std::string &dtype);

/// What a compiled library says about itself (hyc_artifact_desc_v0 in
/// abi.h): the manifest fields that must agree with how the library was
/// compiled, for one variant. `weights` is its entry points' table in order.
struct ArtifactDescription {
  int64_t abi_version = 0;
  std::string variant;
  std::string extend_symbol, decode_symbol;
  ArtifactLimits limits;
  int64_t vocab_size = 0;
  int64_t arena_bytes = 0;
  KvCacheInfo kv_cache;
  std::vector<TensorEntry> weights;
  /// The CPU features the variant's code needs (as the manifest lists
  /// them); empty in libraries compiled before it was recorded, which are
  /// then not checked for it.
  std::vector<std::string> cpu_features;
};

/// The description a library compiled for `manifest` variant `variant`
/// carries (the compiler and the test fixtures build it this way).
ArtifactDescription describe_variant(const Manifest &manifest, size_t variant);
/// As JSON (the text of hyc_artifact_desc_v0).
std::string description_json(const ArtifactDescription &d);
/// Parses the text of hyc_artifact_desc_v0; `origin` (the library) prefixes
/// errors, which say to recompile.
Status parse_description(const std::string &text, const std::string &origin,
                         ArtifactDescription *out);
/// Compares `manifest` (variant `variant`) with what `library` (a path,
/// for messages) says about itself, field by field: the first mismatch is
/// an error naming the manifest field, its value and the library's, e.g.
/// "manifest.json limits.max_batch_tokens is 128 but model.so was compiled
/// for 64".
Status check_description(const ArtifactDescription &library_desc,
                         const Manifest &manifest, size_t variant,
                         const std::string &library);

/// XXH3-64 of `n` bytes as 16 hex digits (weights.tensors[].xxh3).
std::string tensor_hash(const void *data, size_t n);
/// The same hash over bytes given in pieces.
class TensorHasher {
public:
  TensorHasher();
  ~TensorHasher();
  TensorHasher(const TensorHasher &) = delete;
  TensorHasher &operator=(const TensorHasher &) = delete;
  void update(const void *data, size_t n);
  std::string hex() const;

private:
  void *state_;
};

/// Checks that `path` is an ELF shared object or executable for this
/// machine whose headers and loadable segments lie within the file, so
/// that dlopen can neither fault on a truncated file nor load a foreign
/// one. Errors name the file and what is wrong.
Status check_elf_file(const std::string &path);

/// How to open an artifact.
struct ArtifactOptions {
  /// Map weights.bin (fast start, page-cache backed) instead of reading it
  /// into anonymous huge-page memory.
  bool mmap_weights = false;
  /// Ask for transparent huge pages on the weights read into memory
  /// (MADV_HUGEPAGE; false: MADV_NOHUGEPAGE, to measure what they buy).
  bool huge_pages = true;
  /// Refuse to load when the host lacks a manifest cpu_features entry.
  /// false: choose among variants as if the host had every feature.
  bool check_cpu_features = true;
  /// The variant to run (as HYC_ISA: avx2, avx512, avx512-bf16, amx,
  /// reference); empty: the HYC_ISA environment variable, else the best
  /// variant the host runs.
  std::string isa;
  /// Replaces the chosen variant's `library` when not empty. "self" (here
  /// or in the manifest) resolves the entry points and globals in the running
  /// executable (dlopen(NULL)): that is how a standalone `--emit=exe` binary
  /// finds its linked-in model, which must therefore export them (link with
  /// -rdynamic or -Wl,--export-dynamic-symbol=hyc_*).
  std::string library_override;
  /// Hash every tensor the chosen variant reads and compare with the
  /// checksums compiled into its library (`--no-verify` turns it off: it
  /// reads all of weights.bin, which an mmap start would otherwise defer).
  bool verify_weights = true;
  /// Run the kernel self-test of the chosen variant before anything else
  /// (docs/artifact.md); HYC_SELFTEST=0 in the environment turns it off too.
  bool self_test = true;
};

/// A loaded artifact: entry points, weights and tokenizer. Immutable after
/// open(); it can back any number of Engines.
class Artifact {
public:
  /// Loads the artifact in directory `dir`. Every failure (missing or
  /// malformed manifest, wrong format or ABI version, missing CPU feature,
  /// library that is no valid ELF file, does not load, lacks a symbol or
  /// was compiled for another manifest, weights.bin too short, misaligned
  /// or with a tensor whose checksum differs, bad tokenizer) is an error
  /// naming the file and what was expected and found.
  static Status open(const std::string &dir, const ArtifactOptions &options,
                     std::unique_ptr<Artifact> *out);
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &dir() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  /// The variant running (one of manifest().variants) and why it was
  /// chosen (for `hyc run --verbose`, `hyc bench`).
  const Variant &variant() const { return manifest_.variants[variant_]; }
  const std::string &variant_reason() const { return variant_reason_; }
  /// What the kernel self-test did, one line for `--verbose`: "passed: 2
  /// kernel families (...) in 1.3 ms: ...", "skipped (HYC_SELFTEST=0)", or
  /// with variants refused before it, which and why.
  const std::string &self_test_summary() const { return self_test_summary_; }
  hyrt_entry_fn_v0 extend_fn() const { return extend_; }
  hyrt_entry_fn_v0 decode_fn() const { return decode_; }
  /// The artifact's own op-kind profile (abi.h), null when it keeps none.
  /// Mutable library state: set `enabled` and zero `num_kinds` to start.
  hyrt_profile_v0 *profile() const { return profile_; }
  /// The activation observers of a calibration build (abi.h), null for any
  /// other artifact. Mutable library state; `hyc calibrate` reads it.
  hyrt_observe_v0 *observers() const { return observe_; }
  /// Where a tensor-parallel rank's code finds the group's all-reduce
  /// (abi.h), null for an artifact that runs one rank. The runtime fills
  /// it before the first step and checks `failed` after each.
  hyrt_collectives_v0 *collectives() const { return collectives_; }
  /// Weight base pointers in the chosen variant's table order (the entry
  /// points' table).
  void *const *weights() const { return weight_ptrs_.data(); }
  /// All of weights.bin as the runtime holds it (copied or mapped): what a
  /// benchmark's bandwidth probe reads to share the decode's memory.
  const void *weights_region() const { return weights_base_; }
  size_t weights_region_bytes() const { return weights_alloc_bytes_; }
  int64_t num_weights() const { return int64_t(weight_ptrs_.size()); }
  /// Arena size to allocate: the larger of the library's hyc_arena_bytes
  /// and the manifest's arena_bytes.
  int64_t arena_bytes() const { return arena_bytes_; }
  /// The tokenizer, or nullptr when the artifact has none.
  const Tokenizer *tokenizer() const { return tokenizer_.get(); }
  /// True when weights.bin is mapped rather than copied.
  bool weights_mapped() const { return weights_mapped_; }

private:
  Artifact() = default;
  Status choose(const ArtifactOptions &options,
                const std::vector<RefusedVariant> &refused = {});
  Status load_library(const ArtifactOptions &options);
  Status choose_and_self_test(const ArtifactOptions &options);
  void unload_library();
  Status load_weights(const ArtifactOptions &options);
  Status verify_weights() const;
  Status load_tokenizer();

  std::string dir_;
  Manifest manifest_;
  int64_t variant_ = 0;
  std::string variant_reason_;
  std::string self_test_summary_;
  void *library_ = nullptr; // dlopen handle
  hyrt_entry_fn_v0 extend_ = nullptr, decode_ = nullptr;
  hyrt_profile_v0 *profile_ = nullptr;
  hyrt_observe_v0 *observe_ = nullptr;
  hyrt_collectives_v0 *collectives_ = nullptr;
  int64_t arena_bytes_ = 0;
  void *weights_base_ = nullptr;
  size_t weights_alloc_bytes_ = 0;
  bool weights_mapped_ = false;
  std::vector<void *> weight_ptrs_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

} // namespace hyrt
