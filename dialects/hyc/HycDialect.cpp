//===- HycDialect.cpp - hyc dialect registration and attribute rules ------===//

#include "dialects/hyc/HycDialect.h"
#include "dialects/hyc/HycOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hyc;

#include "dialects/hyc/HycDialect.cpp.inc"
#include "dialects/hyc/HycEnums.cpp.inc"

/// Parses the optional `, group = N` and `, block = [n, k]` of #hyc.quant.
static ParseResult parseQuantParams(AsmParser &parser, int64_t &group,
                                    SmallVector<int64_t> &block) {
  group = 0;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return failure();
    if (key == "group") {
      if (parser.parseInteger(group))
        return failure();
    } else if (key == "block") {
      if (parser.parseCommaSeparatedList(
              AsmParser::Delimiter::Square, [&]() -> ParseResult {
                int64_t v;
                if (parser.parseInteger(v))
                  return failure();
                block.push_back(v);
                return success();
              }))
        return failure();
    } else {
      return parser.emitError(parser.getCurrentLocation())
             << "expected 'group' or 'block', got '" << key << "'";
    }
  }
  return success();
}

static void printQuantParams(AsmPrinter &printer, int64_t group,
                             ArrayRef<int64_t> block) {
  if (group != 0)
    printer << ", group = " << group;
  if (!block.empty()) {
    printer << ", block = [";
    llvm::interleaveComma(block, printer);
    printer << "]";
  }
}

#define GET_ATTRDEF_CLASSES
#include "dialects/hyc/HycAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hyc/HycTypes.cpp.inc"

void HycDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/hyc/HycOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/hyc/HycAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/hyc/HycTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attribute and type verifiers
//===----------------------------------------------------------------------===//

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                QuantScheme scheme, int64_t group,
                                ArrayRef<int64_t> block) {
  if (group < 0)
    return emitError() << "quant group must be positive, got " << group;
  const bool codes = isCodesScheme(scheme);
  const int64_t codesGroup = scheme == QuantScheme::q6k ? 16 : 32;
  if (codes && group != codesGroup)
    return emitError() << stringifyQuantScheme(scheme) << " needs group = " << codesGroup
                       << " (one scale per " << codesGroup << " K-elements), got " << group;
  if (group != 0 && scheme != QuantScheme::w8a8 && !codes)
    return emitError() << "quant group = " << group
                       << " is only meaningful for w8a8 and the integer codes (q4, q8, "
                          "q4k, ...), not "
                       << stringifyQuantScheme(scheme);
  if (scheme == QuantScheme::fp8_e4m3) {
    if (block.size() != 2)
      return emitError() << "fp8_e4m3 needs block = [n, k] (2 values), got "
                         << block.size();
    if (block[0] <= 0 || block[1] <= 0)
      return emitError() << "fp8_e4m3 block sizes must be positive, got ["
                         << block[0] << ", " << block[1] << "]";
  } else if (!block.empty()) {
    return emitError() << "quant block is only meaningful for fp8_e4m3, not "
                       << stringifyQuantScheme(scheme);
  }
  return success();
}

LogicalResult
RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        RopeScalingKind kind, APFloat factorF,
                        APFloat lowFreqF, APFloat highFreqF,
                        int64_t originalMaxPosition, APFloat betaFastF,
                        APFloat betaSlowF, APFloat mscaleF,
                        APFloat mscaleAllDimF) {
  double factor = factorF.convertToDouble();
  double lowFreqFactor = lowFreqF.convertToDouble();
  double highFreqFactor = highFreqF.convertToDouble();
  double betaFast = betaFastF.convertToDouble();
  double betaSlow = betaSlowF.convertToDouble();
  if (factor <= 0)
    return emitError() << "rope scaling factor must be positive, got "
                       << factor;
  if (kind == RopeScalingKind::llama3 || kind == RopeScalingKind::yarn) {
    if (originalMaxPosition <= 0)
      return emitError() << stringifyRopeScalingKind(kind)
                         << " rope scaling needs original_max_position > 0, got "
                         << originalMaxPosition;
  }
  if (kind == RopeScalingKind::llama3 && highFreqFactor <= lowFreqFactor)
    return emitError() << "llama3 rope scaling needs high_freq_factor ("
                       << highFreqFactor << ") > low_freq_factor ("
                       << lowFreqFactor << ")";
  if (kind == RopeScalingKind::yarn && betaFast <= betaSlow)
    return emitError() << "yarn rope scaling needs beta_fast (" << betaFast
                       << ") > beta_slow (" << betaSlow << ")";
  return success();
}

LogicalResult MoeGatingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, MoeScoring scoring,
    int64_t topK, int64_t nGroup, int64_t topkGroup, MoeGroupScore groupScore,
    bool renormalize, APFloat routedScalingFactorF) {
  double routedScalingFactor = routedScalingFactorF.convertToDouble();
  if (topK <= 0)
    return emitError() << "moe top_k must be positive, got " << topK;
  if (nGroup <= 0)
    return emitError() << "moe n_group must be positive, got " << nGroup;
  if (topkGroup <= 0 || topkGroup > nGroup)
    return emitError() << "moe topk_group must be in [1, n_group = " << nGroup
                       << "], got " << topkGroup;
  if (routedScalingFactor <= 0)
    return emitError() << "moe routed_scaling_factor must be positive, got "
                       << routedScalingFactor;
  return success();
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t numLayers, int64_t numKvHeads,
                                  int64_t kHeadDim, int64_t vHeadDim) {
  if (numLayers <= 0 || numKvHeads <= 0 || kHeadDim <= 0 || vHeadDim < 0)
    return emitError() << "kv_cache needs positive num_layers, num_kv_heads, "
                          "k_head_dim and non-negative v_head_dim, got "
                       << numLayers << ", " << numKvHeads << ", " << kHeadDim
                       << ", " << vHeadDim;
  return success();
}
