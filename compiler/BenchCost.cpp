//===- BenchCost.cpp - what an artifact reads and computes per token ------===//

#include "compiler/BenchCost.h"

#include <algorithm>

namespace hyc::compiler {

namespace {

bool contains(const std::string &s, const char *part) {
  return s.find(part) != std::string::npos;
}

/// A layout of floating-point values (f32, f16, bf16 and its VNNI pairs,
/// FP8 codes widened to bf16); the rest (s8_vnni4, q4_g32, iq4xs, ...) are
/// integer codes, which every variant multiplies with integer instructions.
bool floatLayout(const std::string &dtype) {
  return dtype.rfind("f", 0) == 0 || dtype.rfind("bf16", 0) == 0;
}

} // namespace

/// Every GEMM weight (rank >= 2, with its scales) is read once per decode
/// step: a routed-expert stack (`experts.*.`) only for the experts the
/// step's tokens activate, at most all of them; an embedding table read by
/// the gather only for the step's rows. A tensor derived from the table
/// (`#copy`, `#w8a8`, `#w8a8.scale`: a tied head's own weights) is the head.
/// Prefill FLOPs: 2 per weight element per token (experts: top_k of E),
/// except the lm_head (one row per sequence with last-token logits), plus
/// attention's 4 x layers x heads x head_dim x (N / 2) average context.
ModelCost modelCost(const hyrt::Manifest &m, const hyrt::Variant &v, int64_t batch,
                    int64_t input) {
  ModelCost c;
  const hyrt::ModelInfo &mi = m.model;
  const double expertShare =
      mi.num_experts > 0
          ? std::min(1.0, double(batch * mi.num_experts_per_tok) /
                              double(mi.num_experts))
          : 1.0;
  const double expertFlopShare =
      mi.num_experts > 0 ? double(mi.num_experts_per_tok) / double(mi.num_experts)
                         : 1.0;
  double integerBytes = 0, floatBytes = 0; // GEMM weights by layout
  for (int64_t index : v.weights) {
    const hyrt::TensorEntry &t = m.tensors[size_t(index)];
    const bool embed = contains(t.name, "embed_tokens.weight");
    const bool derived = contains(t.name, "#");
    const bool table = embed && !derived;
    const bool expert = contains(t.name, "experts.*"); // "experts.*." or "experts.*+F."
    const bool head = contains(t.name, "lm_head.weight") || (embed && derived);
    if (table) {
      c.decodeBytesPerStep += double(t.nbytes) / double(t.shape.empty() ? 1 : t.shape[0]) *
                              double(batch);
      continue;
    }
    const double share = expert ? expertShare : 1.0;
    c.decodeBytesPerStep += double(t.nbytes) * share;
    const bool scale = contains(t.name, ".scale");
    if (t.shape.size() >= 2 && !scale)
      (floatLayout(t.dtype) ? floatBytes : integerBytes) += double(t.nbytes);
    if (t.shape.size() >= 2 && !scale && !head) {
      double elements = 1;
      for (int64_t d : t.shape)
        elements *= double(d);
      c.flopsPerToken += 2.0 * elements * (expert ? expertFlopShare : 1.0);
    }
  }
  c.flopsPerToken += 4.0 * double(mi.num_layers) * double(mi.num_heads) *
                     double(mi.head_dim) * double(input) / 2.0;
  c.integerCodes = integerBytes > floatBytes;
  return c;
}

double kernelPeak(const hyrt::Variant &v, const codegen::HostPeaks &p, bool integerCodes,
                  std::string &which) {
  const auto &f = v.cpu_features;
  auto has = [&](const char *x) { return std::find(f.begin(), f.end(), x) != f.end(); };
  if (!has("avx512f")) { // the avx2 variant: VEX ymm instructions only
    if (integerCodes) {
      which = "int8 vpmaddubsw+vpmaddwd (AVX2)";
      return p.avx2_int8_gops;
    }
    which = "fp32 FMA (AVX2)";
    return p.avx2_fp32_gflops;
  }
  if (integerCodes && has("avx512_vnni") && p.int8_gops > 0) {
    which = "int8 vpdpbusd";
    return p.int8_gops;
  }
  if (has("avx512_bf16") && p.bf16_gflops > 0) {
    which = "bf16 vdpbf16ps";
    return p.bf16_gflops;
  }
  which = "fp32 FMA";
  return p.fp32_gflops;
}

} // namespace hyc::compiler
