//===- CpuCheckNoReferenceKernels.cpp - no hyrt_ref_* in a fast variant ---===//
//
// The check between the kernel lowering and LLVM conversion: an optimized
// variant whose kernel-level IR still calls a hyrt_ref_* kernel would run
// that op on a scalar fp32 loop (a tied head on the reference matmul was
// 84% of a decode step). The compile fails naming every such call and the
// op it lowers, which hyc-cpu-lower-to-kernel wrote into its location.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc_kernel/HycKernelDialect.h"

#include "llvm/Support/raw_ostream.h"

namespace hyc {
#define GEN_PASS_DEF_HYCCPUCHECKNOREFERENCEKERNELS
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// What a call lowers: the name hyc-cpu-lower-to-kernel put on its
/// location ("hyc.quant.matmul model.embed_tokens.weight in @decode"), or
/// the location as printed.
std::string describe(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

struct HycCpuCheckNoReferenceKernelsPass
    : public hyc::impl::HycCpuCheckNoReferenceKernelsBase<HycCpuCheckNoReferenceKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto variant = module->getAttrOfType<StringAttr>("hyc.variant");
    if (variant && variant.getValue() == "reference")
      return;
    SmallVector<std::string> calls;
    module.walk([&](kernel::UkernelOp call) {
      if (call.getName().starts_with("hyrt_ref_"))
        calls.push_back(call.getName().str() + " for " + describe(call.getLoc()));
    });
    if (calls.empty())
      return;
    InFlightDiagnostic diag = module.emitError();
    diag << calls.size() << (calls.size() == 1 ? " call" : " calls")
         << " of a reference kernel in variant "
         << (variant ? variant.getValue() : StringRef("(unnamed)"))
         << " (scalar loops, not a fast path):";
    for (const std::string &c : calls)
      diag << "\n  " << c;
    diag << "\ngive the op a kernel, or compile with --allow-reference "
            "(debugging only)";
    signalPassFailure();
  }
};

} // namespace
