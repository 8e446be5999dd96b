//===- Passes.h - hyc pass registration -------------------------*- C++ -*-===//
#ifndef HYC_PASSES_PASSES_H
#define HYC_PASSES_PASSES_H

namespace hyc {
/// Registers every hyc pass and pipeline with the global registry (hyc-opt).
void registerHycPasses();
} // namespace hyc

#endif // HYC_PASSES_PASSES_H
