//===- GlobalSmoothActivations.cpp - SmoothQuant groups -------------------===//
//
// "Choose" half of SmoothQuant migration. Per-token int8 activations take
// one scale per row, so a few outlier channels set it and every other
// channel loses resolution. Dividing channel j of the activations by s_j
// and multiplying weight column j by s_j keeps every product and spreads
// the range over the weights, which are quantized per output row (or per
// group of K) and tolerate it better. The division is free where the
// activations come out of an RMSNorm: it goes into the norm's weight.
//
// This pass finds the (norm, GEMMs) groups where both sides can change
// without touching anything else and records them in the module attribute
// `hyc.smooth_groups`; the compiler applies the factors, computed from
// calibrated maxima and the weights themselves, when it reads the weights
// for the artifact (compiler/SmoothedWeights.cpp).
//
//===----------------------------------------------------------------------===//

#include "passes/CalibrationGroups.h"
#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALSMOOTHACTIVATIONS
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

StringRef tensorOf(Value v) {
  auto p = v.getDefiningOp<ParamOp>();
  return p ? p.getRef().getTensor() : StringRef();
}

/// The GEMM weights of a norm whose result only feeds quantizable matmuls,
/// in IR order; empty when anything else reads the result.
SmallVector<StringRef> gemmsFedBy(RMSNormOp norm) {
  // Use lists are in no particular order; the group lists its GEMMs as the
  // IR runs them.
  SmallVector<Operation *> users(norm.getResult().getUsers());
  if (llvm::any_of(users, [&](Operation *u) { return u->getBlock() != norm->getBlock(); }))
    return {};
  llvm::sort(users, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  SmallVector<StringRef> gemms;
  for (Operation *user : users) {
    auto mm = dyn_cast<QuantMatmulOp>(user);
    StringRef w = mm ? tensorOf(mm.getWeight()) : StringRef();
    if (!mm || mm.getInput() != norm.getResult() || w.empty() ||
        mm.getQuant().isStoredQuantized() || staysSixteenBit(w))
      return {};
    if (!llvm::is_contained(gemms, w))
      gemms.push_back(w);
  }
  return gemms;
}

struct HycGlobalSmoothActivationsPass
    : public hyc::impl::HycGlobalSmoothActivationsBase<HycGlobalSmoothActivationsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(alpha >= 0.0 && alpha <= 1.0)) {
      module.emitError() << "hyc-global-smooth-activations: alpha must be in [0, 1], got "
                         << alpha;
      return signalPassFailure();
    }
    // Every reader of every tensor name, across entries: a factor applied
    // to a tensor changes all of them.
    llvm::StringMap<SmallVector<OpOperand *>> readers;
    module.walk([&](ParamOp p) {
      for (OpOperand &use : p->getUses())
        readers[p.getRef().getTensor()].push_back(&use);
    });
    // Candidate groups by norm name; a norm whose entries disagree is out.
    llvm::MapVector<StringRef, SmallVector<StringRef>> groups;
    llvm::StringMap<bool> rejected;
    module.walk([&](RMSNormOp norm) {
      StringRef name = tensorOf(norm.getWeight());
      if (name.empty() || rejected.lookup(name))
        return;
      SmallVector<StringRef> gemms = gemmsFedBy(norm);
      auto it = groups.find(name);
      if (gemms.empty() || (it != groups.end() && it->second != gemms)) {
        rejected[name] = true;
        return;
      }
      groups[name] = gemms;
    });
    // Both sides must be read only in the roles the group gives them: the
    // norm weight as the weight of RMSNorms of this group, each GEMM
    // weight as the weight of matmuls reading this group's norm.
    auto onlyNormWeight = [&](StringRef name) {
      return llvm::all_of(readers[name], [&](OpOperand *use) {
        auto n = dyn_cast<RMSNormOp>(use->getOwner());
        return n && use->get() == n.getWeight() && !rejected.lookup(name);
      });
    };
    auto onlyGemmWeightOf = [&](StringRef gemm, StringRef norm) {
      return llvm::all_of(readers[gemm], [&](OpOperand *use) {
        auto mm = dyn_cast<QuantMatmulOp>(use->getOwner());
        if (!mm || use->get() != mm.getWeight())
          return false;
        auto n = mm.getInput().getDefiningOp<RMSNormOp>();
        return n && tensorOf(n.getWeight()) == norm;
      });
    };
    Builder b(module.getContext());
    SmallVector<Attribute> chosen;
    for (auto &[norm, gemms] : groups) {
      if (rejected.lookup(norm) || !onlyNormWeight(norm) ||
          !llvm::all_of(gemms, [&](StringRef g) { return onlyGemmWeightOf(g, norm); }))
        continue;
      SmallVector<Attribute> names;
      for (StringRef g : gemms)
        names.push_back(b.getStringAttr(g));
      chosen.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("norm", b.getStringAttr(norm)),
           b.getNamedAttr("gemms", b.getArrayAttr(names)),
           b.getNamedAttr("alpha", b.getF64FloatAttr(alpha))}));
    }
    module->setAttr("hyc.smooth_groups", b.getArrayAttr(chosen));
  }
};

} // namespace
