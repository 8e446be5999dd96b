// The library's own description (hyc_artifact_desc_v0, abi.h): built from
// a manifest by the compiler, parsed back from the library by the loader
// and compared with manifest.json field by field, so that a library from
// another artifact or an edited manifest is refused before anything runs.
#include "hyrt/artifact/artifact.h"
#include "hyrt/support/json.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include <functional>

namespace hyrt {

namespace {

using json = nlohmann::json;

json tensor_json(const TensorEntry &t) {
  return {{"name", t.name},     {"dtype", t.dtype},   {"shape", t.shape},
          {"offset", t.offset}, {"nbytes", t.nbytes}, {"xxh3", t.xxh3}};
}

std::string shape_text(const std::vector<int64_t> &shape) {
  return json(shape).dump();
}

/// Compares one field; `what` is the manifest's spelling of it.
class Comparer {
public:
  explicit Comparer(std::string library) : library_(std::move(library)) {}

  template <typename T, typename Show>
  bool same(const std::string &what, const T &manifest, const T &library, Show show) {
    if (manifest == library)
      return true;
    error_ = "manifest.json " + what + " is " + show(manifest) + " but " + library_ +
             " was compiled for " + show(library);
    return false;
  }
  bool same(const std::string &what, int64_t manifest, int64_t library) {
    return same(what, manifest, library, [](int64_t v) { return std::to_string(v); });
  }
  bool same(const std::string &what, const std::string &manifest,
            const std::string &library) {
    return same(what, manifest, library, [](const std::string &v) {
      return v.empty() ? std::string("absent") : "\"" + v + "\"";
    });
  }
  Status status() const { return Status::Error(error_); }

private:
  std::string library_, error_;
};

} // namespace

ArtifactDescription describe_variant(const Manifest &m, size_t variant) {
  const Variant &v = m.variants[variant];
  ArtifactDescription d;
  d.abi_version = m.abi_version;
  d.variant = v.name;
  d.extend_symbol = m.extend_symbol;
  d.decode_symbol = m.decode_symbol;
  d.limits = m.limits;
  d.vocab_size = m.model.vocab_size;
  d.arena_bytes = v.arena_bytes;
  d.kv_cache = m.kv_cache;
  for (int64_t i : v.weights)
    d.weights.push_back(m.tensors[size_t(i)]);
  d.cpu_features = v.cpu_features;
  return d;
}

std::string description_json(const ArtifactDescription &d) {
  json weights = json::array();
  for (const TensorEntry &t : d.weights)
    weights.push_back(tensor_json(t));
  const json j = {
      {"abi_version", d.abi_version},
      {"variant", d.variant},
      {"entry_points", {{"extend", d.extend_symbol}, {"decode", d.decode_symbol}}},
      {"limits",
       {{"max_seq_len", d.limits.max_seq_len},
        {"max_batch_tokens", d.limits.max_batch_tokens},
        {"max_seqs", d.limits.max_seqs}}},
      {"vocab_size", d.vocab_size},
      {"arena_bytes", d.arena_bytes},
      {"kv_cache",
       {{"num_layers", d.kv_cache.num_layers},
        {"num_kv_heads", d.kv_cache.num_kv_heads},
        {"k_head_dim", d.kv_cache.k_head_dim},
        {"v_head_dim", d.kv_cache.v_head_dim},
        {"dtype", d.kv_cache.dtype}}},
      {"weights", weights},
      {"cpu_features", d.cpu_features}};
  return j.dump();
}

namespace {

/// A field of the description that is not what the compiler writes.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// v as int64, where it is an integer that fits: nlohmann's get<int64_t>()
/// casts floats unchecked (1e28 is undefined behaviour; found by
/// fuzz_manifest) and wraps unsigned values past INT64_MAX.
int64_t integer(const json &v, const char *field) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw Malformed(std::string(field) + " = " + v.dump() + " does not fit int64");
  if (!v.is_number_integer())
    throw Malformed(std::string(field) + " is " + v.dump() + ", expected an integer");
  return v.get<int64_t>();
}

std::string join_features(const std::vector<std::string> &features) {
  std::string s;
  for (const std::string &f : features)
    s += (s.empty() ? "" : ",") + f;
  return "[" + s + "]";
}

} // namespace

Status parse_description(const std::string &text, const std::string &origin,
                         ArtifactDescription *out) {
  // The compiler writes it: any deviation is a foreign or damaged library,
  // not a user error, so a short message with nlohmann's detail suffices.
  ArtifactDescription d;
  try {
    if (std::string e = json_depth_error(text); !e.empty())
      return Status::Error(origin + ": " + e);
    const json j = json::parse(text);
    d.abi_version = integer(j.at("abi_version"), "abi_version");
    d.variant = j.at("variant").get<std::string>();
    d.extend_symbol = j.at("entry_points").at("extend").get<std::string>();
    d.decode_symbol = j.at("entry_points").at("decode").get<std::string>();
    const json &l = j.at("limits");
    d.limits.max_seq_len = integer(l.at("max_seq_len"), "limits.max_seq_len");
    d.limits.max_batch_tokens = integer(l.at("max_batch_tokens"), "limits.max_batch_tokens");
    d.limits.max_seqs = integer(l.at("max_seqs"), "limits.max_seqs");
    d.vocab_size = integer(j.at("vocab_size"), "vocab_size");
    d.arena_bytes = integer(j.at("arena_bytes"), "arena_bytes");
    const json &kv = j.at("kv_cache");
    d.kv_cache.num_layers = integer(kv.at("num_layers"), "kv_cache.num_layers");
    d.kv_cache.num_kv_heads = integer(kv.at("num_kv_heads"), "kv_cache.num_kv_heads");
    d.kv_cache.k_head_dim = integer(kv.at("k_head_dim"), "kv_cache.k_head_dim");
    d.kv_cache.v_head_dim = integer(kv.at("v_head_dim"), "kv_cache.v_head_dim");
    d.kv_cache.dtype = kv.at("dtype").get<std::string>();
    for (const json &t : j.at("weights")) {
      TensorEntry e;
      e.name = t.at("name").get<std::string>();
      e.dtype = t.at("dtype").get<std::string>();
      for (const json &dim : t.at("shape"))
        e.shape.push_back(integer(dim, "weights[].shape[]"));
      e.offset = integer(t.at("offset"), "weights[].offset");
      e.nbytes = integer(t.at("nbytes"), "weights[].nbytes");
      e.xxh3 = t.at("xxh3").get<std::string>();
      d.weights.push_back(std::move(e));
    }
    if (j.contains("cpu_features"))
      for (const json &f : j.at("cpu_features"))
        d.cpu_features.push_back(f.get<std::string>());
  } catch (const json::exception &e) {
    return Status::Error(origin + ": hyc_artifact_desc_v0 is malformed (" + e.what() +
                         "); recompile the artifact with this hyc");
  } catch (const Malformed &e) {
    return Status::Error(origin + ": hyc_artifact_desc_v0 is malformed (" + e.what() +
                         "); recompile the artifact with this hyc");
  }
  *out = std::move(d);
  return Status::Ok();
}

Status check_description(const ArtifactDescription &lib, const Manifest &m,
                         size_t variant, const std::string &library) {
  const ArtifactDescription man = describe_variant(m, variant);
  Comparer c(library);
  const std::string vpath =
      m.top_level_variant ? "" : "variants[" + std::to_string(variant) + "].";
  const bool ok =
      c.same("abi_version", man.abi_version, lib.abi_version) &&
      c.same(vpath.empty() ? "target" : vpath + "name", man.variant, lib.variant) &&
      c.same("entry_points.extend", man.extend_symbol, lib.extend_symbol) &&
      c.same("entry_points.decode", man.decode_symbol, lib.decode_symbol) &&
      c.same("limits.max_seq_len", man.limits.max_seq_len, lib.limits.max_seq_len) &&
      c.same("limits.max_batch_tokens", man.limits.max_batch_tokens,
             lib.limits.max_batch_tokens) &&
      c.same("limits.max_seqs", man.limits.max_seqs, lib.limits.max_seqs) &&
      c.same("model.vocab_size", man.vocab_size, lib.vocab_size) &&
      c.same(vpath + "arena_bytes", man.arena_bytes, lib.arena_bytes) &&
      c.same("kv_cache.num_layers", man.kv_cache.num_layers, lib.kv_cache.num_layers) &&
      c.same("kv_cache.num_kv_heads", man.kv_cache.num_kv_heads,
             lib.kv_cache.num_kv_heads) &&
      c.same("kv_cache.k_head_dim", man.kv_cache.k_head_dim, lib.kv_cache.k_head_dim) &&
      c.same("kv_cache.v_head_dim", man.kv_cache.v_head_dim, lib.kv_cache.v_head_dim) &&
      c.same("kv_cache.dtype", man.kv_cache.dtype, lib.kv_cache.dtype) &&
      c.same(vpath.empty() ? "weights.tensors count" : vpath + "weights count",
             int64_t(man.weights.size()), int64_t(lib.weights.size())) &&
      // A manifest that lists fewer features than the code needs would
      // load it on a CPU that cannot run it (SIGILL): the library's own
      // list decides. (Libraries from before it was recorded carry none.)
      (lib.cpu_features.empty() ||
       c.same(vpath + "cpu_features", join_features(man.cpu_features),
              join_features(lib.cpu_features)));
  if (!ok)
    return c.status();
  const Variant &v = m.variants[variant];
  for (size_t i = 0; i < man.weights.size(); ++i) {
    const TensorEntry &a = man.weights[i], &b = lib.weights[i];
    const std::string at =
        "weights.tensors[" + std::to_string(v.weights[i]) + "] (" + a.name + ").";
    // The name first, without the name in the path: a reordered table
    // shows which tensor sits where.
    if (!c.same("weights.tensors[" + std::to_string(v.weights[i]) + "].name", a.name,
                b.name) ||
        !c.same(at + "dtype", a.dtype, b.dtype) ||
        !c.same(at + "shape", a.shape, b.shape, shape_text) ||
        !c.same(at + "offset", a.offset, b.offset) ||
        !c.same(at + "nbytes", a.nbytes, b.nbytes) ||
        !c.same(at + "xxh3", a.xxh3, b.xxh3))
      return c.status();
  }
  return Status::Ok();
}

} // namespace hyrt
