//===- KernelSchemes.cpp - which generated kernel runs a GEMM -------------===//

#include "passes/KernelSchemes.h"

#include "codegen/tiles.h"
#include "hyrt/gemm_layout.h"

#include <vector>

using namespace mlir;

namespace hyc {

namespace {

using hyc::codegen::DataType;
using hyc::codegen::Isa;

/// The kernel families a scheme can run on, one per variant level.
enum class Level { avx2, avx512, avx512NativeBf16, amx };

/// One row of the scheme table: a weight scheme (per-group W8A8 apart) on a
/// level, and the kernel that runs it.
struct SchemeRow {
  QuantScheme quant;
  bool grouped; ///< W8A8 with one scale per 128 K-elements
  Level level;
  KernelScheme ks;
};

// macsPerCycle: FMA 16 (AVX2) / 32 (AVX-512) fp32 lanes x 2 ports; bf16 dot
// products twice that; VNNI four times; the AVX2 int8 path (vpmaddubsw,
// then vpmaddwd) a quarter of VNNI's rate; AMX tdpbf16ps / tdpbusd 16 rows x
// 16 columns x 32 pairs / 64 quads per tile multiply (1024 / 2048).
const SchemeRow kSchemes[] = {
    {QuantScheme::f32, false, Level::avx512,
     {Isa::avx512_core, DataType::f32, DataType::f32, "f32f32f32", "avx512core", "f32_k1",
      "hyrt_cpu_gemm_f32", HYRT_GEMM_F32, 32, 32}},
    {QuantScheme::bf16, false, Level::avx512,
     {Isa::avx512_core, DataType::f32, DataType::bf16, "f32bf16f32", "avx512core",
      "bf16_vnni2", "hyrt_cpu_gemm_f32_bf16", HYRT_GEMM_F32_BF16, 32, 16}},
    {QuantScheme::w8a8, false, Level::avx512,
     {Isa::avx512_vnni, DataType::u8, DataType::s8, "u8s8f32", "avx512vnni", "s8_vnni4",
      "hyrt_cpu_gemm_w8a8", HYRT_GEMM_W8A8, 128, 8}},
    {QuantScheme::w8a8, true, Level::avx512,
     {Isa::avx512_vnni, DataType::u8, DataType::s8, "u8s8f32", "avx512vnni", "s8_vnni4_g128",
      "hyrt_cpu_gemm_w8a8_g128", HYRT_GEMM_W8A8_G128, 128, 8, HYRT_GEMM_GROUP_K}},
    {QuantScheme::bf16, false, Level::avx512NativeBf16,
     {Isa::avx512_bf16, DataType::bf16, DataType::bf16, "bf16bf16f32", "avx512bf16",
      "bf16_vnni2", "hyrt_cpu_gemm_bf16", HYRT_GEMM_BF16, 64, 16}},
    {QuantScheme::f32, false, Level::avx2,
     {Isa::avx2, DataType::f32, DataType::f32, "f32f32f32", "avx2", "f32_k1",
      "hyrt_cpu_gemm_f32", HYRT_GEMM_F32, 16, 32}},
    {QuantScheme::bf16, false, Level::avx2,
     {Isa::avx2, DataType::f32, DataType::bf16, "f32bf16f32", "avx2", "bf16_vnni2",
      "hyrt_cpu_gemm_f32_bf16", HYRT_GEMM_F32_BF16, 16, 16}},
    {QuantScheme::w8a8, false, Level::avx2,
     {Isa::avx2, DataType::u8, DataType::s8, "u8s8f32", "avx2", "s8_vnni4",
      "hyrt_cpu_gemm_w8a8", HYRT_GEMM_W8A8, 32, 8}},
    {QuantScheme::w8a8, true, Level::avx2,
     {Isa::avx2, DataType::u8, DataType::s8, "u8s8f32", "avx2", "s8_vnni4_g128",
      "hyrt_cpu_gemm_w8a8_g128", HYRT_GEMM_W8A8_G128, 32, 8, HYRT_GEMM_GROUP_K}},
    {QuantScheme::bf16, false, Level::amx,
     {Isa::amx, DataType::bf16, DataType::bf16, "bf16bf16f32", "amx", "bf16_vnni2",
      "hyrt_cpu_gemm_bf16", HYRT_GEMM_BF16, 1024, 16}},
    {QuantScheme::w8a8, false, Level::amx,
     {Isa::amx, DataType::u8, DataType::s8, "u8s8f32", "amx", "s8_vnni4", "hyrt_cpu_gemm_w8a8",
      HYRT_GEMM_W8A8, 2048, 8}},
    {QuantScheme::w8a8, true, Level::amx,
     {Isa::amx, DataType::u8, DataType::s8, "u8s8f32", "amx", "s8_vnni4_g128",
      "hyrt_cpu_gemm_w8a8_g128", HYRT_GEMM_W8A8_G128, 2048, 8, HYRT_GEMM_GROUP_K}},
    // FP8 weight-only: the bf16 kernels of each level (K = 128, one call per
    // block) on the e4m3 codes widened to bf16 by the driver.
    {QuantScheme::fp8_e4m3, false, Level::avx512NativeBf16,
     {Isa::avx512_bf16, DataType::bf16, DataType::bf16, "bf16bf16f32", "avx512bf16",
      "f8_vnni2", "hyrt_cpu_gemm_fp8", HYRT_GEMM_FP8, 64, 8, HYRT_GEMM_GROUP_K}},
    {QuantScheme::fp8_e4m3, false, Level::avx512,
     {Isa::avx512_core, DataType::f32, DataType::bf16, "f32bf16f32", "avx512core", "f8_vnni2",
      "hyrt_cpu_gemm_fp8", HYRT_GEMM_FP8_F32, 32, 8, HYRT_GEMM_GROUP_K}},
    {QuantScheme::fp8_e4m3, false, Level::avx2,
     {Isa::avx2, DataType::f32, DataType::bf16, "f32bf16f32", "avx2", "f8_vnni2",
      "hyrt_cpu_gemm_fp8", HYRT_GEMM_FP8_F32, 16, 8, HYRT_GEMM_GROUP_K}},
    {QuantScheme::fp8_e4m3, false, Level::amx,
     {Isa::amx, DataType::bf16, DataType::bf16, "bf16bf16f32", "amx", "f8_vnni2",
      "hyrt_cpu_gemm_fp8", HYRT_GEMM_FP8, 1024, 8, HYRT_GEMM_GROUP_K}},
    // Integer codes with in-panel fp16 group scales: s8 activations x u4 / u8
    // codes, one kernel over the whole K (the driver runs no per-group
    // calls; groupK 0). VNNI's rate, as W8A8; the AVX2 kernels split u8
    // codes into nibbles (two vpmaddubsw), so half the AVX2 int8 rate.
    // weightBits rounds up the 4.5 / 8.5 bits a code and its share of the
    // fp16 scale take. The amx variant's many-row steps take the tdpbsud
    // kernel of the same layout (amxCodesScheme, derived from these rows).
    {QuantScheme::q4, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "q4_g32",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_W4A8, 128, 5}},
    {QuantScheme::q8, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u8, "s8u8f32", "avx512vnni", "q8_g32",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_W8A8_G32, 128, 9}},
    {QuantScheme::q4, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "q4_g32",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_W4A8, 32, 5}},
    {QuantScheme::q8, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u8, "s8u8f32", "avx2", "q8_g32",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_W8A8_G32, 16, 9}},
    // Codes kept as checkpoints store them (the same kernels with two-level
    // scales, mins or the IQ4 codebook; hyrt_gemm_code_format): layout
    // names are the formats'.
    {QuantScheme::q4k, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "q4k",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q4K, 128, 5}},
    {QuantScheme::q4k, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "q4k", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q4K, 32, 5}},
    {QuantScheme::q5k, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u8, "s8u8f32", "avx512vnni", "q5k",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q5K, 128, 9}},
    {QuantScheme::q5k, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u8, "s8u8f32", "avx2", "q5k", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q5K, 16, 9}},
    {QuantScheme::q6k, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u8, "s8u8f32", "avx512vnni", "q6k",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q6K, 128, 9}},
    {QuantScheme::q6k, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u8, "s8u8f32", "avx2", "q6k", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q6K, 16, 9}},
    {QuantScheme::iq4xs, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "iq4xs",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_IQ4XS, 128, 5}},
    {QuantScheme::iq4xs, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "iq4xs", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_IQ4XS, 32, 5}},
    {QuantScheme::iq4nl, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "iq4nl",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_IQ4NL, 128, 5}},
    {QuantScheme::iq4nl, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "iq4nl", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_IQ4NL, 32, 5}},
    {QuantScheme::q4z, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "q4z",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q4Z, 128, 5}},
    {QuantScheme::q4z, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "q4z", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q4Z, 32, 5}},
    // GGUF Q4_1 / Q5_1: one-level, an fp16 scale and min per 32 (min = -m).
    {QuantScheme::q4_1, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "q4_1",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q4_1, 128, 5}},
    {QuantScheme::q4_1, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "q4_1", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q4_1, 32, 5}},
    {QuantScheme::q5_1, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u8, "s8u8f32", "avx512vnni", "q5_1",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q5_1, 128, 9}},
    {QuantScheme::q5_1, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u8, "s8u8f32", "avx2", "q5_1", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q5_1, 16, 9}},
    // AWQ / GPTQ int4: one fold per 128 (q4z, Q4_K's half super-blocks,
    // folds every 32 with three multiplies: 0.68 of W8A8 in prefill).
    {QuantScheme::q4z128, false, Level::avx512,
     {Isa::avx512_vnni, DataType::s8, DataType::u4, "s8u4f32", "avx512vnni", "q4z128",
      "hyrt_cpu_gemm_codes", HYRT_GEMM_Q4Z128, 128, 5}},
    {QuantScheme::q4z128, false, Level::avx2,
     {Isa::avx2, DataType::s8, DataType::u4, "s8u4f32", "avx2", "q4z128", "hyrt_cpu_gemm_codes",
      HYRT_GEMM_Q4Z128, 32, 5}},
};

const KernelScheme *find(QuantScheme quant, bool grouped, Level level) {
  for (const SchemeRow &r : kSchemes)
    if (r.quant == quant && r.grouped == grouped && r.level == level)
      return &r.ks;
  return nullptr;
}

/// The row of a scheme object of the table.
const SchemeRow *rowOf(const KernelScheme &ks) {
  for (const SchemeRow &r : kSchemes)
    if (&r.ks == &ks)
      return &r;
  return nullptr;
}

/// A target's level for `quant`: native bf16 changes only bf16 GEMMs.
const KernelScheme *schemeOn(QuantScheme quant, bool grouped, KernelTarget target) {
  if (target.avx2)
    return find(quant, grouped, Level::avx2);
  if (target.nativeBf16)
    if (const KernelScheme *ks = find(quant, grouped, Level::avx512NativeBf16))
      return ks;
  return find(quant, grouped, Level::avx512);
}

} // namespace

StringRef codesLayoutOf(QuantScheme scheme) {
  const KernelScheme *ks = find(scheme, false, Level::avx512);
  return ks && hyrt_gemm_is_codes(ks->scratchId) ? StringRef(ks->layout) : StringRef();
}

int32_t codesSchemeIdOfLayout(StringRef layout) {
  return hyrt_gemm_code_scheme_of_layout(layout.data(), layout.size());
}

const KernelScheme *kernelSchemeFor(QuantScheme scheme, KernelTarget target) {
  return schemeOn(scheme, false, target);
}

const KernelScheme *groupedW8a8SchemeFor(KernelTarget target) {
  return schemeOn(QuantScheme::w8a8, true, target);
}

const KernelScheme *kernelSchemeNamed(llvm::StringRef isaName,
                                      llvm::StringRef typesName, llvm::StringRef layout) {
  for (const SchemeRow &r : kSchemes)
    if (r.level != Level::amx && isaName == r.ks.isaName && typesName == r.ks.typesName &&
        layout == r.ks.layout)
      return &r.ks;
  return nullptr;
}

namespace {

/// The amx variant's kernel of an integer-code scheme: the avx512 row's
/// types, layout and driver on tdpbsud (x86/amx_grouped.cpp), derived so
/// that every code format has one. 2048 is the tile multiply's peak; each
/// group's fold on AVX-512 keeps these kernels well below it at groups of 32.
const KernelScheme *amxCodesScheme(const KernelScheme &vnni) {
  static const std::vector<KernelScheme> derived = [] {
    std::vector<KernelScheme> v;
    for (const SchemeRow &r : kSchemes)
      if (r.level == Level::avx512 && hyrt_gemm_is_codes(r.ks.scratchId)) {
        KernelScheme ks = r.ks;
        ks.isa = Isa::amx;
        ks.isaName = "amx";
        ks.macsPerCycle = 2048;
        v.push_back(ks);
      }
    return v;
  }();
  for (const KernelScheme &ks : derived)
    if (ks.scratchId == vnni.scratchId)
      return &ks;
  return nullptr;
}

} // namespace

const KernelScheme *amxSchemeFor(const KernelScheme &ks, int64_t k) {
  // Only the schemes AMX hosts take (native bf16, VNNI): AMX tiles read the
  // same activations and packed layouts, K in whole pairs / quads (a
  // per-group GEMM's kernels are K = 128).
  const SchemeRow *row = rowOf(ks);
  if (!row || (ks.isa != Isa::avx512_bf16 && ks.isa != Isa::avx512_vnni))
    return nullptr;
  const int64_t unit = ks.aType == DataType::bf16 ? 2 : 4;
  if (!ks.groupK && k % unit != 0)
    return nullptr;
  if (hyrt_gemm_is_codes(ks.scratchId))
    return amxCodesScheme(ks);
  return find(row->quant, row->grouped, Level::amx);
}

const KernelScheme *fp8FusedSchemeFor(const KernelScheme &ks) {
  // Same activations (bf16 rows padded to whole blocks), weights and
  // factors as HYRT_GEMM_FP8; the driver makes one call per panel.
  static const KernelScheme fused = {Isa::avx512_bf16, DataType::bf16, DataType::f8,
                                     "bf16f8f32", "avx512bf16", "f8_vnni2",
                                     "hyrt_cpu_gemm_fp8", HYRT_GEMM_FP8_FUSED, 64, 8};
  return ks.scratchId == HYRT_GEMM_FP8 && ks.isa == Isa::avx512_bf16 ? &fused : nullptr;
}

bool takesWeightScales(const KernelScheme &ks) {
  return ks.scratchId == HYRT_GEMM_W8A8 || ks.scratchId == HYRT_GEMM_W8A8_G128 ||
         hyrt_gemm_is_fp8(ks.scratchId);
}

bool convertsActivations(const KernelScheme &ks) {
  return ks.scratchId == HYRT_GEMM_BF16 || ks.scratchId == HYRT_GEMM_W8A8 ||
         hyrt_gemm_is_codes(ks.scratchId) ||
         ks.scratchId == HYRT_GEMM_W8A8_G128 || ks.scratchId == HYRT_GEMM_FP8 ||
         ks.scratchId == HYRT_GEMM_FP8_FUSED;
}

bool streamsC(const KernelScheme &ks) {
  using hyc::codegen::Isa;
  return (ks.isa == Isa::avx512_bf16 || ks.isa == Isa::avx512_vnni ||
          ks.isa == Isa::avx512_core) &&
         ks.bType != hyc::codegen::DataType::f8 && ks.groupK == 0;
}

int64_t kernelRows(const KernelScheme &ks) {
  const hyc::codegen::BrgemmTile *tile =
      hyc::codegen::find_brgemm_tile(ks.isa, ks.aType, ks.bType, 32);
  return tile ? tile->m_max : 0;
}

int64_t driverScratch(const KernelScheme &ks, int64_t m, int64_t k) {
  return hyrt_gemm_scratch_bytes_for(ks.scratchId, m, k);
}

namespace {
template <typename MatmulOp>
const KernelScheme *kernelSchemeOfImpl(MatmulOp mm, KernelTarget t) {
  if (!mm.getWeight().template getDefiningOp<ParamOp>() ||
      (mm.getEpilogue() != Epilogue::none &&
       mm.getEpilogue() != Epilogue::silu_mul) ||
      (mm.getQuant().getGroup() != 0 && !mm.getQuant().isCodes() &&
       !(mm.getQuant().getScheme() == QuantScheme::w8a8 &&
         mm.getQuant().getGroup() == HYRT_GEMM_GROUP_K)))
    return nullptr;
  const KernelScheme *ks = mm.getQuant().getGroup() && !mm.getQuant().isCodes()
                               ? groupedW8a8SchemeFor(t)
                               : kernelSchemeFor(mm.getQuant().getScheme(), t);
  if (ks && takesWeightScales(*ks) &&
      !(mm.getScale() && mm.getScale().template getDefiningOp<ParamOp>()))
    return nullptr;
  return ks;
}

} // namespace

const KernelScheme *kernelSchemeOf(Operation *op, KernelTarget t) {
  if (auto mm = dyn_cast<QuantMatmulOp>(op))
    // The gate/up driver has no bias (SwiGLU MLPs have none).
    return mm.getEpilogue() == Epilogue::silu_mul && mm.getBias()
               ? nullptr
               : kernelSchemeOfImpl(mm, t);
  if (auto gm = dyn_cast<MoeGroupedMatmulOp>(op))
    return kernelSchemeOfImpl(gm, t);
  return nullptr;
}

Value gemmWeight(Operation *op) {
  if (auto mm = dyn_cast<QuantMatmulOp>(op))
    return mm.getWeight();
  if (auto gm = dyn_cast<MoeGroupedMatmulOp>(op))
    return gm.getWeight();
  return Value();
}

} // namespace hyc
