// manifest.json parsing and validation for hyc artifacts (docs/artifact.md).
// nlohmann::json exceptions stay inside this file; callers get a Status.
#include "hyrt/artifact/artifact.h"
#include "hyrt/support/json.h"

#include <nlohmann/json.hpp>

namespace hyrt {

namespace {

using json = nlohmann::json;

/// Reads typed fields from a JSON object, naming the dotted field path and
/// what was found on error.
class Fields {
public:
  explicit Fields(const std::string &origin) : origin_(origin) {}

  Status error(const std::string &path, const std::string &what) const {
    return Status::Error(origin_ + ": field '" + path + "': " + what);
  }
  static std::string shown(const json &v) {
    std::string s = v.dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  }

  /// `obj[key]` or nullptr when absent.
  static const json *find(const json &obj, const std::string &key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  Status object(const json &obj, const std::string &key,
                const std::string &path, const json **out) const {
    const json *v = find(obj, key);
    if (!v)
      return error(path, "missing (expected an object)");
    if (!v->is_object())
      return error(path, "expected an object, found " + shown(*v));
    *out = v;
    return Status::Ok();
  }

  Status string(const json &obj, const std::string &key,
                const std::string &path, std::string *out,
                bool required = true) const {
    const json *v = find(obj, key);
    if (!v || (!required && v->is_null()))
      return required ? error(path, "missing (expected a string)")
                      : Status::Ok();
    if (!v->is_string())
      return error(path, "expected a string, found " + shown(*v));
    *out = v->get<std::string>();
    return Status::Ok();
  }

  /// An integer >= min_value; absent is an error unless !required.
  Status integer(const json &obj, const std::string &key,
                 const std::string &path, int64_t *out, int64_t min_value,
                 bool required = true) const {
    const json *v = find(obj, key);
    if (!v)
      return required ? error(path, "missing (expected an integer)")
                      : Status::Ok();
    if (!v->is_number_integer())
      return error(path, "expected an integer, found " + shown(*v));
    const int64_t x = v->get<int64_t>();
    if (x < min_value)
      return error(path, "expected an integer >= " +
                             std::to_string(min_value) + ", found " +
                             std::to_string(x));
    *out = x;
    return Status::Ok();
  }

private:
  std::string origin_;
};

#define HYRT_TRY(expr)                                                         \
  do {                                                                         \
    if (Status _s = (expr); !_s.ok())                                          \
      return _s;                                                               \
  } while (0)

Status parse_tensor(const Fields &f, const json &t, const std::string &path,
                    TensorEntry *out) {
  if (!t.is_object())
    return f.error(path, "expected an object, found " + Fields::shown(t));
  HYRT_TRY(f.string(t, "name", path + ".name", &out->name));
  const std::string where = path + " (" + out->name + ")";
  HYRT_TRY(f.string(t, "dtype", where + ".dtype", &out->dtype));
  HYRT_TRY(f.integer(t, "offset", where + ".offset", &out->offset, 0));
  HYRT_TRY(f.integer(t, "nbytes", where + ".nbytes", &out->nbytes, 0));
  HYRT_TRY(f.string(t, "xxh3", where + ".xxh3", &out->xxh3, false));
  const json *shape = Fields::find(t, "shape");
  if (!shape || !shape->is_array())
    return f.error(where + ".shape",
                   shape ? "expected an array of integers, found " +
                               Fields::shown(*shape)
                         : "missing (expected an array of integers)");
  int64_t elements = 1;
  for (const json &d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return f.error(where + ".shape", "expected non-negative integers, found " +
                                           Fields::shown(*shape));
    out->shape.push_back(d.get<int64_t>());
    // Checked: a shape from the file may multiply past int64 (found by
    // fuzz_manifest: signed overflow).
    if (__builtin_mul_overflow(elements, d.get<int64_t>(), &elements))
      return f.error(where + ".shape", Fields::shown(*shape) +
                                           " has more elements than int64 counts");
  }
  const int64_t elem = dtype_size(out->dtype);
  int64_t bytes = 0;
  if (elem > 0 && __builtin_mul_overflow(elements, elem, &bytes))
    return f.error(where + ".shape", Fields::shown(*shape) + " of " + out->dtype +
                                         " has more bytes than int64 counts");
  if (elem > 0 && bytes != out->nbytes)
    return f.error(where + ".nbytes",
                   "shape " + Fields::shown(*shape) + " of " + out->dtype +
                       " needs " + std::to_string(bytes) +
                       " bytes, found " + std::to_string(out->nbytes));
  return Status::Ok();
}

Status parse_features(const Fields &f, const json &obj, const std::string &path,
                      std::vector<std::string> *out) {
  const json *cf = Fields::find(obj, "cpu_features");
  if (!cf)
    return Status::Ok();
  if (!cf->is_array())
    return f.error(path, "expected an array of strings, found " + Fields::shown(*cf));
  for (const json &name : *cf) {
    if (!name.is_string())
      return f.error(path, "expected strings, found " + Fields::shown(name));
    out->push_back(name.get<std::string>());
  }
  return Status::Ok();
}

/// `variants` (or, in a manifest from before them, the one library at top
/// level with every tensor as its table).
Status parse_variants(const json &root, const Fields &f, Manifest *m) {
  const json *variants = Fields::find(root, "variants");
  if (!variants) {
    Variant v;
    v.name = m->target.empty() ? "reference" : m->target;
    HYRT_TRY(f.string(root, "library", "library", &v.library));
    HYRT_TRY(parse_features(f, root, "cpu_features", &v.cpu_features));
    HYRT_TRY(f.integer(root, "arena_bytes", "arena_bytes", &v.arena_bytes, 0));
    for (size_t i = 0; i < m->tensors.size(); ++i)
      v.weights.push_back(int64_t(i));
    m->variants.push_back(std::move(v));
    m->top_level_variant = true;
    return Status::Ok();
  }
  if (!variants->is_array() || variants->empty())
    return f.error("variants", "expected a non-empty array of objects, found " +
                                   Fields::shown(*variants));
  for (size_t i = 0; i < variants->size(); ++i) {
    const json &vj = (*variants)[i];
    const std::string path = "variants[" + std::to_string(i) + "]";
    if (!vj.is_object())
      return f.error(path, "expected an object, found " + Fields::shown(vj));
    Variant v;
    HYRT_TRY(f.string(vj, "name", path + ".name", &v.name));
    HYRT_TRY(f.string(vj, "library", path + ".library", &v.library));
    HYRT_TRY(parse_features(f, vj, path + ".cpu_features", &v.cpu_features));
    HYRT_TRY(f.integer(vj, "arena_bytes", path + ".arena_bytes", &v.arena_bytes, 0));
    const json *w = Fields::find(vj, "weights");
    if (!w || !w->is_array())
      return f.error(path + ".weights",
                     w ? "expected an array of tensor indices, found " + Fields::shown(*w)
                       : "missing (expected an array of tensor indices)");
    for (const json &x : *w) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
          x.get<int64_t>() >= int64_t(m->tensors.size()))
        return f.error(path + ".weights",
                       "expected indices in [0, " + std::to_string(m->tensors.size()) +
                           ") of weights.tensors, found " + Fields::shown(x));
      v.weights.push_back(x.get<int64_t>());
    }
    m->variants.push_back(std::move(v));
  }
  HYRT_TRY(f.string(root, "executable_variant", "executable_variant",
                    &m->executable_variant, false));
  return Status::Ok();
}

Status parse(const json &root, const Fields &f, Manifest *m) {
  if (!root.is_object())
    return f.error("", "expected a JSON object at top level, found " +
                           Fields::shown(root));
  HYRT_TRY(f.string(root, "format", "format", &m->format));
  if (m->format != "hyc-artifact")
    return f.error("format", "expected \"hyc-artifact\", found \"" +
                                 m->format + "\"");
  HYRT_TRY(f.integer(root, "abi_version", "abi_version", &m->abi_version, 0));
  if (m->abi_version != HYRT_ABI_VERSION)
    return f.error("abi_version",
                   "expected " + std::to_string(HYRT_ABI_VERSION) +
                       " (this runtime), found " +
                       std::to_string(m->abi_version));
  HYRT_TRY(f.string(root, "target", "target", &m->target, false));
  const json *entry = nullptr;
  HYRT_TRY(f.object(root, "entry_points", "entry_points", &entry));
  HYRT_TRY(f.string(*entry, "extend", "entry_points.extend", &m->extend_symbol));
  HYRT_TRY(f.string(*entry, "decode", "entry_points.decode", &m->decode_symbol));

  const json *limits = nullptr;
  HYRT_TRY(f.object(root, "limits", "limits", &limits));
  HYRT_TRY(f.integer(*limits, "max_seq_len", "limits.max_seq_len",
                     &m->limits.max_seq_len, 1));
  HYRT_TRY(f.integer(*limits, "max_batch_tokens", "limits.max_batch_tokens",
                     &m->limits.max_batch_tokens, 1));
  HYRT_TRY(f.integer(*limits, "max_seqs", "limits.max_seqs",
                     &m->limits.max_seqs, 1));

  const json *model = nullptr;
  HYRT_TRY(f.object(root, "model", "model", &model));
  ModelInfo &mi = m->model;
  HYRT_TRY(f.string(*model, "arch", "model.arch", &mi.arch, false));
  HYRT_TRY(f.string(*model, "source", "model.source", &mi.source, false));
  HYRT_TRY(f.integer(*model, "vocab_size", "model.vocab_size", &mi.vocab_size,
                     1));
  const std::pair<const char *, int64_t *> optional_dims[] = {
      {"hidden_size", &mi.hidden_size}, {"num_layers", &mi.num_layers},
      {"num_heads", &mi.num_heads},     {"num_kv_heads", &mi.num_kv_heads},
      {"head_dim", &mi.head_dim},       {"num_experts", &mi.num_experts},
      {"num_experts_per_tok", &mi.num_experts_per_tok}};
  for (const auto &[key, dst] : optional_dims)
    HYRT_TRY(f.integer(*model, key, std::string("model.") + key, dst, 0,
                       false));
  for (auto [key, dst] : {std::pair<const char *, int32_t *>{
                              "bos_token_id", &mi.bos_token_id},
                          {"eos_token_id", &mi.eos_token_id}}) {
    int64_t id = *dst;
    const json *v = Fields::find(*model, key);
    if (v && !v->is_null()) {
      HYRT_TRY(f.integer(*model, key, std::string("model.") + key, &id, -1));
      if (id >= mi.vocab_size)
        return f.error(std::string("model.") + key,
                       "expected an id below vocab_size " +
                           std::to_string(mi.vocab_size) + ", found " +
                           std::to_string(id));
    }
    *dst = int32_t(id);
  }

  const json *kv = nullptr;
  HYRT_TRY(f.object(root, "kv_cache", "kv_cache", &kv));
  KvCacheInfo &k = m->kv_cache;
  HYRT_TRY(f.integer(*kv, "num_layers", "kv_cache.num_layers", &k.num_layers,
                     1));
  HYRT_TRY(f.integer(*kv, "num_kv_heads", "kv_cache.num_kv_heads",
                     &k.num_kv_heads, 1));
  HYRT_TRY(f.integer(*kv, "k_head_dim", "kv_cache.k_head_dim", &k.k_head_dim,
                     1));
  HYRT_TRY(f.integer(*kv, "v_head_dim", "kv_cache.v_head_dim", &k.v_head_dim,
                     0));
  HYRT_TRY(f.string(*kv, "dtype", "kv_cache.dtype", &k.dtype, false));
  if (k.dtype != "f32" && k.dtype != "bf16" && k.dtype != "int8")
    return f.error("kv_cache.dtype",
                   "expected \"f32\", \"bf16\" or \"int8\" (ABI v" +
                       std::to_string(HYRT_ABI_VERSION) + "), found \"" +
                       k.dtype + "\"");

  const json *weights = nullptr;
  HYRT_TRY(f.object(root, "weights", "weights", &weights));
  HYRT_TRY(f.string(*weights, "file", "weights.file", &m->weights_file));
  const json *tensors = Fields::find(*weights, "tensors");
  if (!tensors || !tensors->is_array())
    return f.error("weights.tensors",
                   tensors ? "expected an array, found " +
                                 Fields::shown(*tensors)
                           : "missing (expected an array)");
  for (size_t i = 0; i < tensors->size(); ++i) {
    m->tensors.emplace_back();
    HYRT_TRY(parse_tensor(f, (*tensors)[i],
                          "weights.tensors[" + std::to_string(i) + "]",
                          &m->tensors.back()));
  }
  HYRT_TRY(f.string(root, "tokenizer", "tokenizer", &m->tokenizer, false));
  if (const json *tp = Fields::find(root, "tensor_parallel"); tp && !tp->is_null()) {
    HYRT_TRY(f.object(root, "tensor_parallel", "tensor_parallel", &tp));
    HYRT_TRY(f.integer(*tp, "size", "tensor_parallel.size", &m->tp_size, 1));
    HYRT_TRY(f.integer(*tp, "rank", "tensor_parallel.rank", &m->tp_rank, 0));
    if (m->tp_rank >= m->tp_size)
      return f.error("tensor_parallel.rank", "expected a rank below tensor_parallel.size " +
                                                 std::to_string(m->tp_size) + ", found " +
                                                 std::to_string(m->tp_rank));
    if (m->tp_size > 1) {
      HYRT_TRY(f.string(*tp, "compile_id", "tensor_parallel.compile_id", &m->tp_compile_id,
                        true));
      if (m->tp_compile_id.size() != 16 ||
          m->tp_compile_id.find_first_not_of("0123456789abcdef") != std::string::npos)
        return f.error("tensor_parallel.compile_id",
                       "expected 16 hex digits (the compile's identity; an artifact from "
                       "before identities: recompile it), found '" +
                           m->tp_compile_id.substr(0, 64) + "'");
    }
  }
  return parse_variants(root, f, m);
}

} // namespace

int64_t dtype_size(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64" || dtype == "u64")
    return 8;
  if (dtype == "f32" || dtype == "i32" || dtype == "u32")
    return 4;
  if (dtype == "f16" || dtype == "bf16" || dtype == "i16" || dtype == "u16")
    return 2;
  if (dtype == "i8" || dtype == "u8" || dtype == "f8e4m3" || dtype == "f8e5m2")
    return 1;
  return 0;
}

Status parse_manifest(const std::string &text, const std::string &origin,
                      Manifest *out) {
  Fields fields(origin);
  Manifest m;
  try {
    if (std::string e = json_depth_error(text); !e.empty())
      return Status::Error(origin + ": " + e);
    const json root = json::parse(text);
    if (Status s = parse(root, fields, &m); !s.ok())
      return s;
  } catch (const json::exception &e) {
    return Status::Error(origin + ": invalid JSON: " + e.what());
  }
  *out = std::move(m);
  return Status::Ok();
}

} // namespace hyrt
