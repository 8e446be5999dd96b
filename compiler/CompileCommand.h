//===- CompileCommand.h - `hyc compile`: checkpoint -> artifact -*- C++ -*-===//
#ifndef HYC_COMPILER_COMPILECOMMAND_H
#define HYC_COMPILER_COMPILECOMMAND_H

namespace hyc::compiler {

/// `hyc compile INPUT -o OUT [...]`; argv[0] is "compile". Returns the exit
/// code (0 ok, 1 error, 2 usage).
int runCompileCommand(int argc, char **argv);

} // namespace hyc::compiler

#endif // HYC_COMPILER_COMPILECOMMAND_H
