//===- KernelSchemes.cpp - which generated kernel runs a GEMM -------------===//

#include "passes/KernelSchemes.h"

#include "codegen/tiles.h"
#include "hyrt/gemm_layout.h"

using namespace mlir;

namespace hyc {

const KernelScheme *kernelSchemeFor(QuantScheme scheme, KernelTarget target) {
  const bool nativeBf16 = target.nativeBf16, avx2 = target.avx2;
  using hyc::codegen::DataType;
  using hyc::codegen::Isa;
  static const KernelScheme f32{Isa::avx512_core, DataType::f32, DataType::f32,
                                "f32f32f32", "avx512core", "f32_k1",
                                "hyrt_cpu_gemm_f32", 0, 32, 32};
  static const KernelScheme bf16{Isa::avx512_bf16, DataType::bf16, DataType::bf16,
                                 "bf16bf16f32", "avx512bf16", "bf16_vnni2",
                                 "hyrt_cpu_gemm_bf16", 1, 64, 16};
  static const KernelScheme f32bf16{Isa::avx512_core, DataType::f32, DataType::bf16,
                                    "f32bf16f32", "avx512core", "bf16_vnni2",
                                    "hyrt_cpu_gemm_f32_bf16", 3, 32, 16};
  static const KernelScheme w8a8{Isa::avx512_vnni, DataType::u8, DataType::s8,
                                 "u8s8f32", "avx512vnni", "s8_vnni4",
                                 "hyrt_cpu_gemm_w8a8", 2, 128, 8};
  static const KernelScheme f32Avx2{Isa::avx2, DataType::f32, DataType::f32,
                                    "f32f32f32", "avx2", "f32_k1",
                                    "hyrt_cpu_gemm_f32", 0, 16, 32};
  // bf16 weights widened to fp32 for FMA; int8 through vpmaddubsw (two
  // products per 16-bit lane, then vpmaddwd), a quarter of VNNI's rate.
  static const KernelScheme f32bf16Avx2{Isa::avx2, DataType::f32, DataType::bf16,
                                        "f32bf16f32", "avx2", "bf16_vnni2",
                                        "hyrt_cpu_gemm_f32_bf16", 3, 16, 16};
  static const KernelScheme w8a8Avx2{Isa::avx2, DataType::u8, DataType::s8,
                                     "u8s8f32", "avx2", "s8_vnni4",
                                     "hyrt_cpu_gemm_w8a8", 2, 32, 8};
  if (avx2) {
    switch (scheme) {
    case QuantScheme::f32:
      return &f32Avx2;
    case QuantScheme::bf16:
      return &f32bf16Avx2;
    case QuantScheme::w8a8:
      return &w8a8Avx2;
    default:
      return nullptr;
    }
  }
  switch (scheme) {
  case QuantScheme::f32:
    return &f32;
  case QuantScheme::bf16:
    return nativeBf16 ? &bf16 : &f32bf16;
  case QuantScheme::w8a8:
    return &w8a8;
  default:
    return nullptr;
  }
}

const KernelScheme *groupedW8a8SchemeFor(KernelTarget target) {
  using hyc::codegen::DataType;
  using hyc::codegen::Isa;
  static const KernelScheme vnni{Isa::avx512_vnni, DataType::u8, DataType::s8,
                                 "u8s8f32", "avx512vnni", "s8_vnni4_g128",
                                 "hyrt_cpu_gemm_w8a8_g128", HYRT_GEMM_W8A8_G128, 128, 8,
                                 HYRT_GEMM_GROUP_K};
  static const KernelScheme avx2{Isa::avx2, DataType::u8, DataType::s8, "u8s8f32", "avx2",
                                 "s8_vnni4_g128", "hyrt_cpu_gemm_w8a8_g128",
                                 HYRT_GEMM_W8A8_G128, 32, 8, HYRT_GEMM_GROUP_K};
  return target.avx2 ? &avx2 : &vnni;
}

const KernelScheme *kernelSchemeNamed(llvm::StringRef isaName,
                                      llvm::StringRef typesName, llvm::StringRef layout) {
  for (KernelTarget t : {KernelTarget{false, false}, KernelTarget{true, false},
                         KernelTarget{false, true}}) {
    for (QuantScheme q : {QuantScheme::f32, QuantScheme::bf16, QuantScheme::w8a8})
      if (const KernelScheme *ks = kernelSchemeFor(q, t);
          ks && isaName == ks->isaName && typesName == ks->typesName &&
          layout == ks->layout)
        return ks;
    if (const KernelScheme *ks = groupedW8a8SchemeFor(t);
        isaName == ks->isaName && typesName == ks->typesName && layout == ks->layout)
      return ks;
  }
  return nullptr;
}

const KernelScheme *amxSchemeFor(const KernelScheme &ks, int64_t k) {
  using hyc::codegen::DataType;
  using hyc::codegen::Isa;
  // tdpbf16ps / tdpbusd: 16 rows x 16 columns x 32 pairs / 64 quads per
  // tile multiply, 1024 multiply-adds per cycle (bf16) and 2048 (int8).
  static const KernelScheme bf16{Isa::amx, DataType::bf16, DataType::bf16,
                                 "bf16bf16f32", "amx", "bf16_vnni2",
                                 "hyrt_cpu_gemm_bf16", 1, 1024, 16};
  static const KernelScheme w8a8{Isa::amx, DataType::u8, DataType::s8,
                                 "u8s8f32", "amx", "s8_vnni4",
                                 "hyrt_cpu_gemm_w8a8", 2, 2048, 8};
  static const KernelScheme w8a8Grouped{Isa::amx, DataType::u8, DataType::s8, "u8s8f32",
                                        "amx", "s8_vnni4_g128", "hyrt_cpu_gemm_w8a8_g128",
                                        HYRT_GEMM_W8A8_G128, 2048, 8, HYRT_GEMM_GROUP_K};
  if (ks.isa == Isa::avx512_bf16 && ks.scratchId == 1 && k % 2 == 0)
    return &bf16;
  if (ks.isa == Isa::avx512_vnni && ks.scratchId == 2 && k % 4 == 0)
    return &w8a8;
  if (ks.isa == Isa::avx512_vnni && ks.scratchId == HYRT_GEMM_W8A8_G128)
    return &w8a8Grouped; // K = 128 blocks: whole quads
  return nullptr;
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
      (mm.getQuant().getGroup() != 0 &&
       !(mm.getQuant().getScheme() == QuantScheme::w8a8 &&
         mm.getQuant().getGroup() == HYRT_GEMM_GROUP_K)))
    return nullptr;
  const KernelScheme *ks = mm.getQuant().getGroup()
                               ? groupedW8a8SchemeFor(t)
                               : kernelSchemeFor(mm.getQuant().getScheme(), t);
  if (ks && (ks->scratchId == 2 || ks->scratchId == HYRT_GEMM_W8A8_G128) &&
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
