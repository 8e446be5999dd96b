//===- CompileIdentity.h - what makes two compiles the same -----*- C++ -*-===//
//
// A tensor-parallel artifact is N directories compiled one rank at a time
// (`hyc compile --tp N`, or by hand with --tp-rank). Each rank's manifest
// carries the compile's identity: a hash of the options that shape the
// output and of the source files as found (path, size, modification time).
// The runtime refuses ranks whose identities differ, so a rank directory
// copied from another compile of the same geometry (other weights, another
// precision) cannot join silently.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_COMPILEIDENTITY_H
#define HYC_COMPILER_COMPILEIDENTITY_H

#include "compiler/CompileOptions.h"

#include <string>

namespace hyc::compiler {

/// The text the identity hashes: one "--option=value" line per option that
/// changes the output (every option but -o, --tp-rank and the ones that only
/// print), then one line per source file. Equal for the
/// ranks of one command line whatever the order of its options.
std::string compileIdentityText(const CompileOptions &options);

/// 16 hex digits: XXH3 of compileIdentityText().
std::string compileIdentity(const CompileOptions &options);

} // namespace hyc::compiler

#endif // HYC_COMPILER_COMPILEIDENTITY_H
