// KernelEmitter (compiler/KernelEmitter.cpp) on `hyc.kernels` entries with
// grouped scale formats: group, asymmetric, super_group and codebook reach
// the generator (the kernel's size differs per format) and the
// hyc_kernels_v0 row (hyrt_kernel_v0 in hyrt/abi.h, version 2); a code book
// it does not know and a format the generator refuses are errors naming the
// kernel.
#include "compiler/KernelEmitter.h"

#include "hyrt/abi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

/// One grouped kernel's entry as ConvertHycKernelToLLVM writes it.
struct Entry {
  std::string name;
  int64_t k, group, superGroup;
  bool asymmetric;
  std::string codebook; // "" for none
};

/// Emits the entries; returns the assembly, or "" with *error set.
std::string emit(const std::vector<Entry> &entries, std::string *error) {
  mlir::MLIRContext ctx;
  mlir::OpBuilder b(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  llvm::SmallVector<mlir::Attribute> kernels;
  for (const Entry &e : entries) {
    llvm::SmallVector<mlir::NamedAttribute> fields = {
        b.getNamedAttr("name", b.getStringAttr(e.name)),
        b.getNamedAttr("k", b.getI64IntegerAttr(e.k)),
        b.getNamedAttr("m_max", b.getI64IntegerAttr(6)),
        b.getNamedAttr("isa", b.getStringAttr("avx512vnni")),
        b.getNamedAttr("types", b.getStringAttr("s8u4f32")),
        b.getNamedAttr("group", b.getI64IntegerAttr(e.group))};
    if (e.asymmetric)
      fields.push_back(b.getNamedAttr("asymmetric", b.getUnitAttr()));
    if (e.superGroup)
      fields.push_back(b.getNamedAttr("super_group", b.getI64IntegerAttr(e.superGroup)));
    if (!e.codebook.empty())
      fields.push_back(b.getNamedAttr("codebook", b.getStringAttr(e.codebook)));
    kernels.push_back(b.getDictionaryAttr(fields));
  }
  (*module)->setAttr("hyc.kernels", b.getArrayAttr(kernels));
  char path[] = "/tmp/hyc_kernel_emitter_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    *error = "mkstemp failed";
    return "";
  }
  ::close(fd);
  std::set<std::string> features;
  std::string text;
  if (hyc::compiler::emitKernels(*module, path, features, *error)) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::remove(path);
  return text;
}

/// The `.long` line of table row `row`: m_max, n_block, k, accumulate,
/// epilogue, reserved, group, asymmetric, super_group, codebook.
std::string row_longs(const std::string &text, int row) {
  const std::string rows = text.substr(text.find(".Lhyc_kernel_rows:"));
  size_t at = 0;
  for (int i = 0; i <= row; ++i)
    at = rows.find("\t.long ", at) + 1;
  return rows.substr(at + 6, rows.find('\n', at) - at - 6);
}

TEST(KernelEmitter, GroupedFormatsReachTheGeneratorAndTheTable) {
  std::string error;
  const std::string text = emit({{"hyc_q4k", 512, 32, 256, true, ""},
                                 {"hyc_iq4xs", 512, 32, 256, false, "iq4nl"},
                                 {"hyc_iq4nl", 512, 32, 0, false, "iq4nl"},
                                 {"hyc_q4_0", 512, 32, 0, false, ""}},
                                &error);
  ASSERT_FALSE(text.empty()) << error;
  EXPECT_NE(
      text.find("hyc_kernels_v0:\n\t.long " + std::to_string(HYRT_KERNEL_TABLE_VERSION) + ", 4"),
      std::string::npos);
  EXPECT_EQ(row_longs(text, 0), "6, 32, 512, 0, 0, 0, 32, 1, 256, 0");
  EXPECT_EQ(row_longs(text, 1),
            "6, 32, 512, 0, 0, 0, 32, 0, 256, " + std::to_string(HYRT_KERNEL_CODEBOOK_IQ4NL));
  EXPECT_EQ(row_longs(text, 2),
            "6, 32, 512, 0, 0, 0, 32, 0, 0, " + std::to_string(HYRT_KERNEL_CODEBOOK_IQ4NL));
  EXPECT_EQ(row_longs(text, 3), "6, 32, 512, 0, 0, 0, 32, 0, 0, 0");
  // Each format is its own machine code: the sizes (third .quad) differ.
  auto code_bytes = [&](const std::string &name) {
    const size_t at = text.find(", " + name + ", ");
    return text.substr(at + name.size() + 4,
                       text.find(',', at + name.size() + 4) - (at + name.size() + 4));
  };
  EXPECT_NE(code_bytes("hyc_q4k"), code_bytes("hyc_q4_0"));
  EXPECT_NE(code_bytes("hyc_iq4nl"), code_bytes("hyc_q4_0"));
  EXPECT_NE(code_bytes("hyc_iq4xs"), code_bytes("hyc_iq4nl"));
}

TEST(KernelEmitter, UnknownCodebooksAndBadFormatsAreErrors) {
  std::string error;
  EXPECT_TRUE(emit({{"hyc_odd", 512, 32, 0, false, "nf4"}}, &error).empty());
  EXPECT_EQ(error, "kernel hyc_odd: unknown codebook 'nf4' (expected none or iq4nl)");
  error.clear();
  EXPECT_TRUE(emit({{"hyc_bad", 512, 32, 48, true, ""}}, &error).empty());
  EXPECT_NE(error.find("kernel hyc_bad: super group 48 must be 0 (one-level scales) or a "
                       "positive multiple of group 32"),
            std::string::npos)
      << error;
}

} // namespace
