// synthesize(): preset specs per family, a seeded per-tensor PRNG for the
// weights, and the llama2.c tokenizer.bin written beside the checkpoint.
#include "models/checkpoint/synth.h"
#include "hyrt/support/json.h"

#include "models/checkpoint/family.h"
#include "models/checkpoint/fp8.h"
#include "models/checkpoint/synth_awq.h"
#include "models/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hyc::models {

namespace {

namespace fs = std::filesystem;

std::string normalizeArch(std::string arch) {
  std::replace(arch.begin(), arch.end(), '-', '_');
  return arch;
}

/// Dimensions shared by every family's preset.
void baseDims(ModelSpec &s, bool small) {
  s.vocab_size = small ? 2048 : 512;
  s.hidden_size = small ? 256 : 64;
  s.intermediate_size = small ? 688 : 172;
  s.num_layers = small ? 4 : 2;
  s.num_heads = small ? 8 : 4;
  s.num_kv_heads = small ? 4 : 2;
  s.head_dim = s.hidden_size / s.num_heads;
  s.max_position_embeddings = small ? 1024 : 256;
  s.rms_norm_eps = 1e-5;
  s.rope.theta = 10000.0;
  s.rope.neox = true;
  s.bos_token_id = 1;
  s.eos_token_id = 2;
}

//===----------------------------------------------------------------------===//
// Deterministic PRNG: splitmix64 seeded from (seed, FNV-1a of the name).
//===----------------------------------------------------------------------===//

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float symmetric() {
    return static_cast<float>(static_cast<double>(next() >> 40) * 0x1p-23 -
                              1.0);
  }

private:
  uint64_t state_;
};

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

io::SafetensorsEntry randomTensor(const WeightInfo &w, uint64_t seed,
                                  bool bf16) {
  SplitMix64 rng(SplitMix64(seed ^ 0x6879632d73796e74ULL).next() ^
                 fnv1a(w.name));
  int64_t numel = 1;
  for (int64_t d : w.shape)
    numel *= d;
  std::vector<float> values(static_cast<size_t>(numel));
  const float uniform_std = std::sqrt(3.0f); // U(-1,1) * sqrt(3) has std 1
  if (endsWith(w.name, "norm.weight")) {
    for (float &v : values)
      v = 1.0f + 0.05f * rng.symmetric();
  } else if (endsWith(w.name, ".bias") ||
             endsWith(w.name, "e_score_correction_bias")) {
    for (float &v : values)
      v = 0.02f * rng.symmetric();
  } else {
    for (float &v : values)
      v = 0.02f * uniform_std * rng.symmetric();
  }
  io::SafetensorsEntry e;
  e.name = w.name;
  e.shape = w.shape;
  if (bf16) {
    // Round to nearest even; the values are finite by construction.
    e.dtype = io::DType::BF16;
    e.bytes.resize(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      bits += 0x7fffu + ((bits >> 16) & 1u);
      const uint16_t half = uint16_t(bits >> 16);
      std::memcpy(e.bytes.data() + 2 * i, &half, 2);
    }
    return e;
  }
  e.dtype = io::DType::F32;
  e.bytes.resize(values.size() * sizeof(float));
  std::memcpy(e.bytes.data(), values.data(), e.bytes.size());
  return e;
}

//===----------------------------------------------------------------------===//
// FP8.
//===----------------------------------------------------------------------===//

/// The linear layers DeepSeek's FP8 release stores as e4m3 + scale_inv:
/// attention and MLP / expert / shared-expert projections. Embeddings, norms,
/// biases, the router (mlp.gate) and lm_head stay F32.
bool isFp8Linear(const std::string &name) {
  static const char *const kModules[] = {
      ".q_proj.weight",    ".k_proj.weight",
      ".v_proj.weight",    ".o_proj.weight",
      ".q_a_proj.weight",  ".q_b_proj.weight",
      ".kv_b_proj.weight", ".kv_a_proj_with_mqa.weight",
      ".gate_proj.weight", ".up_proj.weight",
      ".down_proj.weight"};
  for (const char *m : kModules)
    if (endsWith(name, m))
      return true;
  return false;
}

/// Replaces an F32 [N, K] entry by its F8_E4M3 codes and appends the
/// `<name>_scale_inv` F32 [ceil(N/128), ceil(K/128)] entry. Before
/// quantizing, block (0, 0) gets a wide dynamic range (element (r, c) scaled
/// by 2^-((r + c) % 16)) so that e4m3 subnormals and underflow to zero occur.
void quantizeEntry(io::SafetensorsEntry &e,
                   std::vector<io::SafetensorsEntry> &extra) {
  const int64_t n = e.shape[0], k = e.shape[1];
  std::vector<float> w(static_cast<size_t>(n * k));
  std::memcpy(w.data(), e.bytes.data(), e.bytes.size());
  for (int64_t r = 0; r < std::min<int64_t>(n, 128); ++r)
    for (int64_t c = 0; c < std::min<int64_t>(k, 128); ++c)
      w[static_cast<size_t>(r * k + c)] *=
          std::ldexp(1.0f, -static_cast<int>((r + c) % 16));
  Fp8BlockQuant q = quantize_fp8_block(w.data(), n, k, 128, 128);
  e.dtype = io::DType::F8_E4M3;
  e.bytes = std::move(q.codes);
  io::SafetensorsEntry s;
  s.name = e.name + "_scale_inv";
  s.dtype = io::DType::F32;
  s.shape = q.scale_shape;
  s.bytes.resize(q.scale_inv.size() * sizeof(float));
  std::memcpy(s.bytes.data(), q.scale_inv.data(), s.bytes.size());
  extra.push_back(std::move(s));
}

/// Replaces an F32 [N, K] entry by channel-INT8: I8 values and the
/// `<name>_scale` F32 [N] entry (odd rows with their largest |q| at 100).
void quantizeEntryInt8(io::SafetensorsEntry &e, std::vector<io::SafetensorsEntry> &extra) {
  const int64_t n = e.shape[0], k = e.shape[1];
  std::vector<float> w(static_cast<size_t>(n * k));
  std::memcpy(w.data(), e.bytes.data(), e.bytes.size());
  std::vector<float> scale(static_cast<size_t>(n));
  std::vector<uint8_t> q(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < k; ++c)
      amax = std::max(amax, std::fabs(w[size_t(r * k + c)]));
    const float sc = amax > 0 ? amax / (r % 2 ? 100.0f : 127.0f) : 1.0f;
    scale[size_t(r)] = sc;
    for (int64_t c = 0; c < k; ++c) {
      const float v = std::nearbyint(w[size_t(r * k + c)] / sc);
      q[size_t(r * k + c)] = uint8_t(int8_t(std::max(-127.0f, std::min(127.0f, v))));
    }
  }
  e.dtype = io::DType::I8;
  e.bytes = std::move(q);
  io::SafetensorsEntry s;
  s.name = e.name + "_scale";
  s.dtype = io::DType::F32;
  s.shape = {n};
  s.bytes.resize(scale.size() * sizeof(float));
  std::memcpy(s.bytes.data(), scale.data(), s.bytes.size());
  extra.push_back(std::move(s));
}

//===----------------------------------------------------------------------===//
// Tokenizer.
//===----------------------------------------------------------------------===//

/// Pieces after the byte tokens: printable ASCII, " " + letter, then letter
/// pairs, " " + letter pair, capitalized pairs, until `count` pieces.
std::vector<std::string> tokenizerPieces(size_t count) {
  std::vector<std::string> out;
  auto push = [&](std::string s) {
    if (out.size() < count)
      out.push_back(std::move(s));
  };
  for (char c = 0x20; c < 0x7f; ++c)
    push(std::string(1, c));
  for (char a = 'a'; a <= 'z'; ++a)
    push(std::string(" ") + a);
  for (const char *prefix : {"", " "})
    for (char a = 'a'; a <= 'z'; ++a)
      for (char b = 'a'; b <= 'z'; ++b)
        push(std::string(prefix) + a + b);
  for (char a = 'A'; a <= 'Z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b)
      push(std::string(" ") + a + b);
  return out;
}

/// Ids a Hugging Face tokenizer.json uses: one past the largest id of its
/// model's vocabulary (BPE / WordPiece: {piece: id}; Unigram: [[piece,
/// score], ...] in id order) and its added tokens; "" or what is wrong.
std::string tokenizerIds(const std::string &path, int64_t *ids) {
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return path + ": not a JSON object";
  int64_t top = -1;
  auto model = j.find("model");
  if (model != j.end() && model->is_object()) {
    auto vocab = model->find("vocab");
    if (vocab != model->end() && vocab->is_object()) {
      for (const auto &kv : vocab->items())
        if (kv.value().is_number_integer())
          top = std::max<int64_t>(top, kv.value().get<int64_t>());
    } else if (vocab != model->end() && vocab->is_array()) {
      top = int64_t(vocab->size()) - 1;
    }
  }
  auto added = j.find("added_tokens");
  if (added != j.end() && added->is_array())
    for (const auto &t : *added)
      if (t.is_object() && t.contains("id") && t["id"].is_number_integer())
        top = std::max<int64_t>(top, t["id"].get<int64_t>());
  if (top < 0)
    return path + ": no model.vocab or added_tokens ids";
  *ids = top + 1;
  return "";
}

Status writeTokenizer(const std::string &path, int64_t vocab_size) {
  constexpr int64_t kFixed = 3 + 256;
  if (vocab_size < kFixed)
    return Error(path + ": vocab_size " + std::to_string(vocab_size) +
                 " is too small for the synthetic tokenizer (needs >= " +
                 std::to_string(kFixed) + ")");
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores(3, 0.0f);
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    pieces.push_back(buf);
    scores.push_back(0.0f);
  }
  std::vector<std::string> extra =
      tokenizerPieces(static_cast<size_t>(vocab_size - kFixed));
  float rank = 0.0f;
  for (std::string &p : extra) {
    // llama2.c merges the pair whose joined piece scores highest; single
    // characters are never the product of a merge.
    scores.push_back(p.size() == 1 ? 0.0f : -(rank += 1.0f));
    pieces.push_back(std::move(p));
  }
  // Pad with unreachable placeholder pieces when the vocab is larger than
  // the piece generator.
  for (int64_t i = static_cast<int64_t>(pieces.size()); i < vocab_size; ++i) {
    pieces.push_back("<extra_" + std::to_string(i) + ">");
    scores.push_back(-1e9f);
  }
  int32_t max_len = 0;
  for (const std::string &p : pieces)
    max_len = std::max<int32_t>(max_len, static_cast<int32_t>(p.size()));

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Error(tmp + ": cannot open for writing");
    out.write(reinterpret_cast<const char *>(&max_len), 4);
    for (size_t i = 0; i < pieces.size(); ++i) {
      const int32_t len = static_cast<int32_t>(pieces[i].size());
      out.write(reinterpret_cast<const char *>(&scores[i]), 4);
      out.write(reinterpret_cast<const char *>(&len), 4);
      out.write(pieces[i].data(), len);
    }
    if (!out)
      return Error(tmp + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return Error(path + ": cannot rename " + tmp +
                 " into place: " + ec.message());
  return Status();
}

Status writeText(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Error(tmp + ": cannot open for writing");
    out << text;
    if (!out)
      return Error(tmp + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return Error(path + ": cannot rename " + tmp +
                 " into place: " + ec.message());
  return Status();
}

} // namespace

std::vector<std::string> synth_archs() {
  return {"llama",       "qwen2",            "qwen3",       "qwen3-moe",
          "deepseek-v2", "deepseek-v2-lite", "deepseek-v3", "hunyuan-moe"};
}

std::string synth_preset_arch(const std::string &preset) {
  if (preset == "dense-1b")
    return "llama";
  if (preset == "moe-small")
    return "qwen3-moe";
  if (preset == "mla-small")
    return "deepseek-v3";
  return "";
}

namespace {

/// The real-size shapes the benchmarks compare with other engines
/// (issue 8): Llama-3.2-1B, a Qwen3-MoE and a DeepSeek-V3 layout at hidden
/// 2048 with a 128256-token vocabulary.
ModelSpec realSizeSpec(const std::string &preset) {
  ModelSpec s;
  s.vocab_size = 128256;
  s.hidden_size = 2048;
  s.rms_norm_eps = 1e-5;
  s.rope.neox = true;
  s.bos_token_id = 1;
  s.eos_token_id = 2;
  s.max_position_embeddings = 131072;
  if (preset == "dense-1b") {
    s.arch = "llama";
    s.num_layers = 16;
    s.num_heads = 32;
    s.num_kv_heads = 8;
    s.head_dim = 64;
    s.intermediate_size = 8192;
    s.tie_word_embeddings = true;
    s.rope.theta = 500000.0;
    s.rope.scaling = "llama3";
    s.rope.factor = 32.0;
    s.rope.low_freq_factor = 1.0;
    s.rope.high_freq_factor = 4.0;
    s.rope.original_max_position = 8192;
  } else if (preset == "moe-small") {
    s.arch = "qwen3_moe";
    s.num_layers = 8;
    s.num_heads = 32;
    s.num_kv_heads = 4;
    s.head_dim = 128;
    s.intermediate_size = 6144;
    s.qk_norm = true;
    s.rms_norm_eps = 1e-6;
    s.rope.theta = 1000000.0;
    s.max_position_embeddings = 40960;
    MoeSpec m;
    m.num_experts = 64;
    m.top_k = 8;
    m.expert_intermediate_size = 768;
    m.scoring = "softmax";
    m.renormalize = true;
    s.moe = m;
  } else {
    s.arch = "deepseek_v3";
    s.num_layers = 5;
    s.num_heads = 16;
    s.num_kv_heads = 16;
    s.intermediate_size = 10944;
    s.rms_norm_eps = 1e-6;
    s.rope.theta = 10000.0;
    s.max_position_embeddings = 4096;
    MlaSpec mla;
    mla.q_lora_rank = 512;
    mla.kv_lora_rank = 512;
    mla.qk_nope_head_dim = 128;
    mla.qk_rope_head_dim = 64;
    mla.v_head_dim = 128;
    s.mla = mla;
    s.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    s.rope.neox = false; // rope_interleave
    MoeSpec m;
    m.num_experts = 64;
    m.top_k = 6;
    m.expert_intermediate_size = 1408;
    m.num_shared_experts = 2;
    m.shared_intermediate_size = 1408;
    m.scoring = "sigmoid";
    m.renormalize = true;
    m.routed_scaling_factor = 2.5;
    m.n_group = 8;
    m.topk_group = 4;
    m.group_score = "top2_sum";
    m.has_correction_bias = true;
    m.first_k_dense = 1;
    s.moe = m;
  }
  s.rope.rotary_dim = s.mla ? s.mla->qk_rope_head_dim : s.head_dim;
  return s;
}

/// DeepSeek-V2 (softmax routing, group_limited_greedy, routed scaling
/// without renormalization, YaRN as V2 ships it with mscale =
/// mscale_all_dim) or V2-Lite (no q LoRA, greedy top-k, no rope scaling).
void deepseekV2Dims(ModelSpec &s, bool small, bool lite) {
  s.arch = "deepseek_v2";
  s.num_layers = small ? 4 : 3;
  s.num_kv_heads = s.num_heads;
  s.rms_norm_eps = 1e-6;
  MlaSpec mla;
  mla.q_lora_rank = lite ? 0 : (small ? 64 : 32);
  mla.kv_lora_rank = small ? 64 : 16;
  mla.qk_nope_head_dim = small ? 32 : 16;
  mla.qk_rope_head_dim = small ? 16 : 8;
  mla.v_head_dim = small ? 32 : 16;
  s.mla = mla;
  s.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  s.rope.neox = false;
  if (!lite) {
    s.rope.scaling = "yarn";
    s.rope.factor = 4.0;
    s.rope.original_max_position = s.max_position_embeddings / 4;
    s.rope.mscale = 0.707;
    s.rope.mscale_all_dim = 0.707;
  }
  MoeSpec m;
  m.num_experts = small ? 16 : 8;
  m.top_k = small ? 4 : 2;
  m.expert_intermediate_size = small ? 64 : 32;
  m.num_shared_experts = 2;
  m.shared_intermediate_size = m.expert_intermediate_size;
  m.scoring = "softmax";
  m.renormalize = false;
  m.routed_scaling_factor = lite ? 1.0 : 4.0;
  // topk_group < top_k: with groups ranked by their best expert, keeping
  // top_k or more groups never changes the top-k (V2 keeps 3 groups for 6).
  m.n_group = lite ? 1 : 4;
  m.topk_group = lite ? 1 : (small ? 2 : 1);
  m.group_score = "max";
  m.first_k_dense = 1;
  s.moe = m;
}

/// Hunyuan-A13B's layout: GQA with q/k norm after RoPE, NTK-alpha rope
/// (alpha 1000 as A13B), every layer MoE with one shared MLP, tied
/// embeddings.
void hunyuanMoeDims(ModelSpec &s, bool small) {
  s.qk_norm = true;
  s.qk_norm_after_rope = true;
  s.tie_word_embeddings = true;
  s.rope.scaling = "ntk_alpha";
  s.rope.alpha = 1000.0;
  MoeSpec m;
  m.num_experts = small ? 16 : 8;
  m.top_k = small ? 4 : 2;
  m.expert_intermediate_size = small ? 128 : 32;
  // A13B's shared MLP and experts have the same width (3072).
  s.intermediate_size = m.expert_intermediate_size;
  m.num_shared_experts = 1;
  m.shared_intermediate_size = s.intermediate_size;
  m.scoring = "softmax";
  m.renormalize = true;
  s.moe = m;
}

} // namespace

Expected<ModelSpec> synth_spec(const std::string &arch_name,
                               const std::string &preset) {
  if (std::string implied = synth_preset_arch(preset); !implied.empty()) {
    if (!arch_name.empty() && normalizeArch(arch_name) != normalizeArch(implied))
      return Error("synth: preset '" + preset + "' is a " + implied +
                   " model, but --arch is '" + arch_name + "'");
    return realSizeSpec(preset);
  }
  if (preset != "tiny" && preset != "small")
    return Error("synth: unknown preset '" + preset +
                 "' (supported: tiny, small, dense-1b, moe-small, mla-small)");
  const bool small = preset == "small";
  const std::string arch = normalizeArch(arch_name);
  ModelSpec s;
  s.arch = arch;
  baseDims(s, small);
  if (arch == "llama") {
    // Llama 2 shape: GQA, untied.
  } else if (arch == "qwen2") {
    s.attention_bias = true;
    s.rms_norm_eps = 1e-6;
    s.rope.theta = 1000000.0;
    s.tie_word_embeddings = true;
  } else if (arch == "qwen3") {
    // head_dim independent of hidden/heads, as in real Qwen3.
    s.head_dim = small ? 64 : 32;
    s.qk_norm = true;
    s.rms_norm_eps = 1e-6;
    s.rope.theta = 1000000.0;
    s.tie_word_embeddings = true;
  } else if (arch == "qwen3_moe") {
    s.qk_norm = true;
    s.rms_norm_eps = 1e-6;
    s.rope.theta = 1000000.0;
    MoeSpec m;
    m.num_experts = small ? 16 : 8;
    m.top_k = small ? 4 : 2;
    m.expert_intermediate_size = small ? 128 : 32;
    m.scoring = "softmax";
    m.renormalize = true;
    s.moe = m;
  } else if (arch == "deepseek_v3") {
    s.num_layers = small ? 4 : 3;
    s.num_kv_heads = s.num_heads;
    s.rms_norm_eps = 1e-6;
    MlaSpec mla;
    mla.q_lora_rank = small ? 64 : 32;
    mla.kv_lora_rank = small ? 64 : 16;
    mla.qk_nope_head_dim = small ? 32 : 16;
    mla.qk_rope_head_dim = small ? 16 : 8;
    mla.v_head_dim = small ? 32 : 16;
    s.mla = mla;
    s.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    s.rope.neox = false; // rope_interleave
    MoeSpec m;
    m.num_experts = small ? 16 : 8;
    m.top_k = small ? 4 : 2;
    m.expert_intermediate_size = small ? 64 : 32;
    m.num_shared_experts = 1;
    m.shared_intermediate_size = m.expert_intermediate_size;
    m.scoring = "sigmoid";
    m.renormalize = true;
    m.routed_scaling_factor = 2.5;
    m.n_group = small ? 4 : 2;
    m.topk_group = small ? 2 : 1;
    m.group_score = "top2_sum";
    m.has_correction_bias = true;
    m.first_k_dense = 1;
    s.moe = m;
  } else if (arch == "deepseek_v2" || arch == "deepseek_v2_lite") {
    deepseekV2Dims(s, small, /*lite=*/arch == "deepseek_v2_lite");
  } else if (arch == "hunyuan_moe") {
    hunyuanMoeDims(s, small);
  } else {
    std::string list;
    for (const std::string &a : synth_archs())
      list += (list.empty() ? "" : ", ") + a;
    return Error("synth: unknown arch '" + arch_name + "' (supported: " + list +
                 ")");
  }
  s.rope.rotary_dim = s.mla ? s.mla->qk_rope_head_dim : s.head_dim;
  return s;
}

Status synthesize(const SynthOptions &options) {
  if (options.output_dir.empty())
    return Error("synth: no output directory given");
  if (int(options.fp8) + int(options.int8) + int(options.awq) > 1)
    return Error("synth: fp8, int8 and awq weights are exclusive");
  if (!options.dequantize_fp8_to.empty() && !options.fp8 && !options.awq)
    return Error("synth: dequantize_fp8_to ('" + options.dequantize_fp8_to +
                 "') needs fp8 or awq");
  Expected<ModelSpec> spec = synth_spec(options.arch, options.preset);
  if (!spec)
    return spec.take_error();
  if (options.tie_word_embeddings)
    spec->tie_word_embeddings = *options.tie_word_embeddings;
  if (options.intermediate_size) {
    if (*options.intermediate_size < 1)
      return Error("synth: intermediate size " + std::to_string(*options.intermediate_size) +
                   ", expected at least 1");
    spec->intermediate_size = *options.intermediate_size;
  }
  if (options.expert_intermediate_size) {
    if (!spec->moe || *options.expert_intermediate_size < 1)
      return Error("synth: expert intermediate size " +
                   std::to_string(*options.expert_intermediate_size) +
                   (spec->moe ? ", expected at least 1" : " for a model without experts"));
    spec->moe->expert_intermediate_size = *options.expert_intermediate_size;
  }
  if (options.vocab_size) {
    // tokenizer.bin needs its 259 fixed pieces; 2^21 keeps a test model's
    // embedding within reason.
    if (*options.vocab_size < 259 || *options.vocab_size > (int64_t(1) << 21))
      return Error("synth: vocab size " + std::to_string(*options.vocab_size) +
                   ", expected 259 to 2097152");
    spec->vocab_size = *options.vocab_size;
  }
  const detail::Family *family = detail::family_by_arch(spec->arch);
  if (!family)
    return Error("synth: no family registered for arch '" + spec->arch + "'");
  if (!options.hf_tokenizer_dir.empty()) {
    for (const char *name : {"tokenizer.json", "tokenizer_config.json"})
      if (!fs::is_regular_file(fs::path(options.hf_tokenizer_dir) / name))
        return Error("synth: " + options.hf_tokenizer_dir + " has no " + name);
    // The embedding must hold every id of the copied tokenizer, or
    // `hyc compile` would have to drop it: the preset's vocabulary grows to
    // the tokenizer's ids (rounded up to 128 rows, as real configs pad),
    // and a --vocab-size below them is refused.
    int64_t ids = 0;
    if (std::string why = tokenizerIds(options.hf_tokenizer_dir + "/tokenizer.json", &ids);
        !why.empty())
      return Error("synth: " + why);
    if (ids > (int64_t(1) << 21))
      return Error("synth: " + options.hf_tokenizer_dir + "/tokenizer.json uses " +
                   std::to_string(ids) + " ids, expected at most 2097152");
    if (options.vocab_size && *options.vocab_size < ids)
      return Error("synth: --vocab-size " + std::to_string(*options.vocab_size) +
                   " is smaller than the ids of " + options.hf_tokenizer_dir +
                   "/tokenizer.json (" + std::to_string(ids) + "): expected at least " +
                   std::to_string(ids));
    if (!options.vocab_size)
      spec->vocab_size = std::max(spec->vocab_size, (ids + 127) / 128 * 128);
  }

  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec)
    return Error(options.output_dir +
                 ": cannot create directory: " + ec.message());
  const fs::path dir(options.output_dir);

  std::vector<io::SafetensorsEntry> tensors, scales;
  for (const WeightInfo &w : required_weights(*spec)) {
    tensors.push_back(
        randomTensor(w, options.seed, /*bf16=*/!synth_preset_arch(options.preset).empty()));
    // Values are seeded by the canonical name; the file uses the family's
    // own tensor names, as upstream checkpoints do.
    if (family->canonical_to_hf)
      tensors.back().name = family->canonical_to_hf(w.name);
    if (options.fp8 && w.shape.size() == 2 && isFp8Linear(w.name))
      quantizeEntry(tensors.back(), scales);
    if (options.int8 && w.shape.size() == 2 && isFp8Linear(w.name))
      quantizeEntryInt8(tensors.back(), scales);
    if (options.awq && w.shape.size() == 2 && isFp8Linear(w.name))
      HYC_CKPT_TRY(detail::quantize_entry_awq(tensors.back(), scales));
  }
  for (io::SafetensorsEntry &s : scales)
    tensors.push_back(std::move(s));
  HYC_CKPT_TRY(io::write_safetensors((dir / "model.safetensors").string(),
                                     tensors, {{"format", "pt"}}));
  nlohmann::ordered_json config = family->to_hf(*spec);
  if (options.fp8)
    config["quantization_config"] = {{"quant_method", "fp8"},
                                     {"fmt", "e4m3"},
                                     {"activation_scheme", "dynamic"},
                                     {"weight_block_size", {128, 128}}};
  if (options.int8)
    config["quantization_config"] = {{"quant_method", "w8a8_int8"}};
  if (options.awq)
    config["quantization_config"] = {{"quant_method", "awq"},
                                     {"bits", 4},
                                     {"group_size", detail::kSynthAwqGroup},
                                     {"zero_point", true},
                                     {"version", "gemm"}};
  HYC_CKPT_TRY(
      writeText((dir / "config.json").string(), config.dump(2) + "\n"));
  if (options.hf_tokenizer_dir.empty()) {
    HYC_CKPT_TRY(
        writeTokenizer((dir / "tokenizer.bin").string(), spec->vocab_size));
  } else {
    // The loader prefers tokenizer.bin: an old one must not shadow these.
    fs::remove(dir / "tokenizer.bin", ec);
    for (const char *name : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(fs::path(options.hf_tokenizer_dir) / name, dir / name,
                    fs::copy_options::overwrite_existing, ec);
      if (ec)
        return Error("synth: cannot copy " + options.hf_tokenizer_dir + "/" +
                     name + ": " + ec.message());
      // A read-only source must not make the copy one a rerun cannot
      // replace.
      fs::permissions(dir / name, fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::add, ec);
    }
  }
  if (!options.dequantize_fp8_to.empty())
    HYC_CKPT_TRY(
        write_dequantized_copy(options.output_dir, options.dequantize_fp8_to));
  return Status();
}

Status write_dequantized_copy(const std::string &fp8_dir,
                              const std::string &out_dir) {
  std::error_code ec;
  if (out_dir.empty())
    return Error("dequantized copy of " + fp8_dir + ": no output directory");
  if (fs::exists(out_dir, ec) && fs::equivalent(fp8_dir, out_dir, ec))
    return Error("dequantized copy of " + fp8_dir +
                 ": the output directory is the input directory");
  const fs::path in(fp8_dir), out(out_dir);
  nlohmann::ordered_json config;
  {
    std::ifstream f(in / "config.json", std::ios::binary);
    if (!f)
      return Error((in / "config.json").string() + ": cannot open");
    const std::string text((std::istreambuf_iterator<char>(f)),
                           std::istreambuf_iterator<char>());
    if (std::string e = hyrt::parse_json(text, &config); !e.empty())
      return Error((in / "config.json").string() + ": " + e);
    if (!config.is_object())
      return Error((in / "config.json").string() + ": not a JSON object");
  }
  Expected<Checkpoint> ckpt = load_checkpoint(fp8_dir);
  if (!ckpt)
    return ckpt.take_error();
  if (ckpt->format != "hf")
    return Error(fp8_dir + ": expected a Hugging Face directory, found " +
                 ckpt->format);
  const WeightSource &source = *ckpt->weights;
  std::vector<io::SafetensorsEntry> tensors;
  for (const WeightInfo &w : source.weights()) {
    if (endsWith(w.name, "_scale_inv")) {
      const WeightInfo *base =
          source.find(w.name.substr(0, w.name.size() - 10));
      if (base && base->source_dtype == "F8_E4M3")
        continue; // folded into its weight
    }
    io::SafetensorsEntry e;
    e.name = w.name;
    e.dtype = io::DType::F32;
    e.shape = w.shape;
    Expected<int64_t> numel = io::shape_numel(w.shape);
    if (!numel)
      return Error(fp8_dir + ": weight '" + w.name + "': " + numel.error());
    e.bytes.resize(static_cast<size_t>(*numel) * sizeof(float));
    std::vector<float> values(static_cast<size_t>(*numel));
    HYC_CKPT_TRY(source.read_f32(w.name, values.data()));
    std::memcpy(e.bytes.data(), values.data(), e.bytes.size());
    tensors.push_back(std::move(e));
  }
  fs::create_directories(out, ec);
  if (ec)
    return Error(out_dir + ": cannot create directory: " + ec.message());
  HYC_CKPT_TRY(io::write_safetensors((out / "model.safetensors").string(),
                                     tensors, {{"format", "pt"}}));
  config.erase("quantization_config");
  config["torch_dtype"] = "float32";
  HYC_CKPT_TRY(
      writeText((out / "config.json").string(), config.dump(2) + "\n"));
  for (const char *name : {"tokenizer.bin", "tokenizer.json",
                           "tokenizer_config.json", "generation_config.json"}) {
    if (!fs::is_regular_file(in / name, ec))
      continue;
    fs::copy_file(in / name, out / name, fs::copy_options::overwrite_existing,
                  ec);
    if (ec)
      return Error((out / name).string() + ": cannot copy from " +
                   (in / name).string() + ": " + ec.message());
  }
  return Status();
}

} // namespace hyc::models
