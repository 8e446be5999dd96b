//===- KernelEmitter.cpp - generated microkernels as assembly -------------===//

#include "compiler/KernelEmitter.h"

#include "codegen/brgemm.h"
#include "codegen/tiles.h"

#include "hyrt/abi.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace hyc::compiler {

namespace {

struct IsaInfo {
  const char *name;  // isa, then ":" and the kernel's types

  codegen::Isa isa;
  codegen::DataType a, b;
  std::vector<const char *> features;
};

const IsaInfo *isaInfo(const std::string &name) {
  using codegen::DataType;
  using codegen::Isa;
  static const IsaInfo table[] = {
      {"avx512core:f32f32f32", Isa::avx512_core, DataType::f32, DataType::f32,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl"}},
      {"avx512core:f32bf16f32", Isa::avx512_core, DataType::f32, DataType::bf16,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl"}},
      {"avx512bf16:bf16bf16f32", Isa::avx512_bf16, DataType::bf16, DataType::bf16,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"}},
      // FP8 weights widened in registers: VBMI byte permutes.
      {"avx512bf16:bf16f8f32", Isa::avx512_bf16, DataType::bf16, DataType::f8,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16", "avx512vbmi"}},
      {"avx2:f32f32f32", Isa::avx2, DataType::f32, DataType::f32,
       {"avx2", "fma"}},
      {"avx2:f32bf16f32", Isa::avx2, DataType::f32, DataType::bf16,
       {"avx2", "fma"}},
      {"avx2:u8s8f32", Isa::avx2, DataType::u8, DataType::s8,
       {"avx2", "fma"}},
      {"amx:bf16bf16f32", Isa::amx, DataType::bf16, DataType::bf16,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16", "amx_tile",
        "amx_bf16"}},
      {"amx:u8s8f32", Isa::amx, DataType::u8, DataType::s8,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "amx_tile",
        "amx_int8"}},
      {"avx512vnni:u8s8f32", Isa::avx512_vnni, DataType::u8, DataType::s8,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}},
      // Grouped-scale integer weights (the kernel's `group`, `asymmetric`,
      // `super_group` and `codebook` attributes).
      {"avx512vnni:s8u4f32", Isa::avx512_vnni, DataType::s8, DataType::u4,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}},
      {"avx512vnni:s8u8f32", Isa::avx512_vnni, DataType::s8, DataType::u8,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}},
      {"amx:s8u4f32", Isa::amx, DataType::s8, DataType::u4,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "amx_tile",
        "amx_int8"}},
      {"amx:s8u8f32", Isa::amx, DataType::s8, DataType::u8,
       {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "amx_tile",
        "amx_int8"}},
      {"avx2:s8u4f32", Isa::avx2, DataType::s8, DataType::u4,
       {"avx2", "fma", "f16c"}},
      {"avx2:s8u8f32", Isa::avx2, DataType::s8, DataType::u8,
       {"avx2", "fma", "f16c"}},
  };
  for (const IsaInfo &i : table)
    if (name == i.name)
      return &i;
  return nullptr;
}

/// One row of hyc_kernels_v0 (hyrt_kernel_v0 in hyrt/abi.h).
struct TableRow {
  std::string name, isa, types;
  codegen::BrgemmDesc desc;
  size_t codeBytes;
};

/// The exported table of the kernels (hyrt_kernel_table_v0): the runtime's
/// load-time self-test runs each kernel family from it. Pointers to the
/// strings and entry points are relocated at load (.data.rel.ro).
void writeKernelTable(std::ostream &out, const std::vector<TableRow> &rows) {
  out << "\n\t.section .data.rel.ro,\"aw\",@progbits\n\t.p2align 3\n"
      << "\t.globl hyc_kernels_v0\n\t.type hyc_kernels_v0, @object\n"
      << "hyc_kernels_v0:\n\t.long " << HYRT_KERNEL_TABLE_VERSION << ", "
      << rows.size() << "\n\t.quad "
      << (rows.empty() ? "0" : ".Lhyc_kernel_rows") << "\n"
      << "\t.size hyc_kernels_v0, 16\n.Lhyc_kernel_rows:\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow &r = rows[i];
    const std::string s = ".Lhyc_kernel_str" + std::to_string(i);
    out << "\t.quad " << s << "n, " << r.name << ", " << r.codeBytes << ", " << s
        << "i, " << s << "t, " << s << "l\n"
        << "\t.long " << r.desc.m_max << ", " << r.desc.n_block << ", " << r.desc.k
        << ", " << (r.desc.accumulate ? 1 : 0) << ", "
        << (r.desc.epilogue == codegen::Epilogue::bias ? 1 : 0) << ", "
        << (r.desc.stream_c ? 1 : 0) << ", "
        << r.desc.group << ", " << (r.desc.asymmetric ? 1 : 0) << ", "
        << r.desc.super_group << ", "
        << (r.desc.codebook == codegen::Codebook::iq4nl
                ? HYRT_KERNEL_CODEBOOK_IQ4NL
                : HYRT_KERNEL_CODEBOOK_NONE)
        << "\n";
  }
  out << "\t.section .rodata.hyc_kernel_strings,\"a\",@progbits\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow &r = rows[i];
    const std::string s = ".Lhyc_kernel_str" + std::to_string(i);
    out << s << "n:\t.asciz \"" << r.name << "\"\n"
        << s << "i:\t.asciz \"" << r.isa << "\"\n"
        << s << "t:\t.asciz \"" << r.types << "\"\n"
        << s << "l:\t.asciz \"" << codegen::b_layout_name(r.desc.b_layout) << "\"\n";
  }
}

} // namespace

bool emitKernels(mlir::ModuleOp module, const std::string &asmPath,
                 std::set<std::string> &features, std::string &error) {
  auto kernels = module->getAttrOfType<mlir::ArrayAttr>("hyc.kernels");
  std::ostringstream out;
  out << "# Generated by hyc compile: brgemm microkernels (codegen/, Xbyak).\n"
      << "\t.text\n";
  std::vector<TableRow> rows;
  for (mlir::Attribute a : kernels ? kernels : mlir::ArrayAttr()) {
    auto d = llvm::cast<mlir::DictionaryAttr>(a);
    std::string name = llvm::cast<mlir::StringAttr>(d.get("name")).str();
    std::string isa = llvm::cast<mlir::StringAttr>(d.get("isa")).str() + ":" +
                      llvm::cast<mlir::StringAttr>(d.get("types")).str();
    int64_t k = llvm::cast<mlir::IntegerAttr>(d.get("k")).getInt();
    int64_t mMax = llvm::cast<mlir::IntegerAttr>(d.get("m_max")).getInt();
    const IsaInfo *info = isaInfo(isa);
    if (!info) {
      error = "kernel " + name + ": no generator for '" + isa + "'";
      return false;
    }
    const bool accumulate = bool(d.get("accumulate"));
    codegen::BrgemmDesc desc = codegen::make_brgemm_desc(
        info->isa, info->a, info->b, codegen::DataType::f32, int(k), 32,
        accumulate);
    if (auto group = d.getAs<mlir::IntegerAttr>("group")) {
      codegen::GroupedFormat format;
      format.bits = info->b == codegen::DataType::u4 ? 4 : 8;
      format.group = group.getInt();
      format.asymmetric = bool(d.get("asymmetric"));
      // Two-level scales and code books (GGUF K-quants, IQ4, AWQ).
      if (auto super = d.getAs<mlir::IntegerAttr>("super_group"))
        format.super_group = super.getInt();
      if (auto book = d.getAs<mlir::StringAttr>("codebook"))
        if (!codegen::codebook_from_name(book.str(), &format.codebook)) {
          error = "kernel " + name + ": unknown codebook '" + book.str() +
                  "' (expected none or iq4nl)";
          return false;
        }
      desc = codegen::make_grouped_brgemm_desc(info->isa, format, int(k),
                                               accumulate);
    }
    desc.stream_c = bool(d.get("stream_c")); // non-temporal C stores
    if (desc.m_max != mMax) {
      error = "kernel " + name + ": the lowering assumed " +
              std::to_string(mMax) + " rows per block, the generator makes " +
              std::to_string(desc.m_max);
      return false;
    }
    codegen::BrgemmGenResult gen = codegen::generate_brgemm(desc);
    if (!gen) {
      error = "kernel " + name + ": " + gen.error;
      return false;
    }
    for (const char *f : info->features)
      features.insert(f);
    out << "\n\t.globl " << name << "\n\t.type " << name
        << ", @function\n\t.p2align 6\n"
        << name << ":\n";
    const uint8_t *code = gen.kernel->code();
    size_t size = gen.kernel->code_size();
    for (size_t i = 0; i < size; i += 16) {
      out << "\t.byte ";
      for (size_t j = i; j < std::min(size, i + 16); ++j)
        out << (j > i ? "," : "") << unsigned(code[j]);
      out << "\n";
    }
    out << "\t.size " << name << ", .-" << name << "\n";
    rows.push_back({name, llvm::cast<mlir::StringAttr>(d.get("isa")).str(),
                    llvm::cast<mlir::StringAttr>(d.get("types")).str(), desc, size});
  }
  writeKernelTable(out, rows);
  out << "\t.section .note.GNU-stack,\"\",@progbits\n";
  std::ofstream file(asmPath);
  file << out.str();
  if (!file) {
    error = "cannot write " + asmPath;
    return false;
  }
  return true;
}

} // namespace hyc::compiler
