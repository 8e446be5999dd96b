//===- SynthCommand.h - `hyc synth` -----------------------------*- C++ -*-===//
#ifndef HYC_COMPILER_SYNTHCOMMAND_H
#define HYC_COMPILER_SYNTHCOMMAND_H

namespace hyc::compiler {
/// `hyc synth --arch A --preset P --seed N -o DIR`; argv[0] is "synth".
int runSynthCommand(int argc, char **argv);
/// `hyc convert-gguf HF_DIR OUT.gguf [--outtype f32|f16]`.
int runConvertGgufCommand(int argc, char **argv);
} // namespace hyc::compiler

#endif // HYC_COMPILER_SYNTHCOMMAND_H
