//===- GlobalObserveActivations.cpp - observers of a calibration build ---===//
//
// A calibration build records, per channel, the largest |x| each quantizable
// GEMM input reaches over sample text; SmoothQuant (hyc-global-smooth-
// activations and the compiler's weight smoothing) turns those maxima into
// per-channel factors. The observer is an op of the model rather than a
// hook in the runtime, so it runs wherever the model runs (the runtime
// serves; the artifact computes) and the dump shows what is observed.
//
//===----------------------------------------------------------------------===//

#include "passes/CalibrationGroups.h"
#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"

#include <map>

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALOBSERVEACTIVATIONS
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// The tensor name of a matmul's weight when the policy would quantize it.
std::optional<StringRef> quantizableWeight(QuantMatmulOp mm) {
  auto param = mm.getWeight().getDefiningOp<ParamOp>();
  if (!param || mm.getQuant().isStoredQuantized())
    return std::nullopt;
  StringRef name = param.getRef().getTensor();
  if (staysSixteenBit(name))
    return std::nullopt;
  return name;
}

struct HycGlobalObserveActivationsPass
    : public hyc::impl::HycGlobalObserveActivationsBase<HycGlobalObserveActivationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // One slot per feeds list, shared by every entry.
    std::map<std::string, int64_t> slots;
    WalkResult r = module.walk([&](func::FuncOp fn) {
      if (!fn->hasAttr("hyc.entry"))
        return WalkResult::advance();
      // Inputs in first-use order, each with the weights reading it.
      llvm::MapVector<Value, SmallVector<StringRef>> feeds;
      fn.walk([&](QuantMatmulOp mm) {
        if (std::optional<StringRef> name = quantizableWeight(mm))
          feeds[mm.getInput()].push_back(*name);
      });
      for (auto &[input, names] : feeds) {
        auto type = cast<RankedTensorType>(input.getType());
        if (type.getRank() != 2 || !type.getElementType().isF32()) {
          fn.emitError() << "hyc-global-observe-activations: the input of '" << names.front()
                         << "' is " << type
                         << ", expected fp32 [tokens, channels] rows (a calibration "
                            "build is an fp32 build)";
          return WalkResult::interrupt();
        }
        std::string key;
        for (StringRef n : names)
          key += (key.empty() ? "" : ",") + n.str();
        auto [it, inserted] = slots.emplace(key, int64_t(slots.size()));
        (void)inserted;
        OpBuilder b(fn.getContext());
        b.setInsertionPointAfterValue(input);
        SmallVector<Attribute> feedAttrs;
        for (StringRef n : names)
          feedAttrs.push_back(b.getStringAttr(n));
        ObserveOp::create(b, input.getLoc(), input, b.getI64IntegerAttr(it->second),
                          b.getArrayAttr(feedAttrs));
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
