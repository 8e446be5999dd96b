//===- CompileCommand.h - `hyc compile`: checkpoint -> artifact -*- C++ -*-===//
#ifndef HYC_COMPILER_COMPILECOMMAND_H
#define HYC_COMPILER_COMPILECOMMAND_H

#include <functional>
#include <string>

namespace hyc::compiler {

/// Told each step of a compile as it begins ("importing model.gguf",
/// "variant avx512 (2/3)", "writing weights.bin and linking"), for callers
/// that show progress (the compile-on-demand of `hyc run CKPT`).
using CompileProgress = std::function<void(const std::string &step)>;

/// `hyc compile INPUT -o OUT [...]`; argv[0] is "compile". Returns the exit
/// code (0 ok, 1 error, 2 usage). `progress`, when set, hears each step.
int runCompileCommand(int argc, char **argv, const CompileProgress &progress = nullptr);

} // namespace hyc::compiler

#endif // HYC_COMPILER_COMPILECOMMAND_H
