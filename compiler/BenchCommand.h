//===- BenchCommand.h - `hyc bench` --------------------------------*- C++ -*-===//
#ifndef HYC_COMPILER_BENCHCOMMAND_H
#define HYC_COMPILER_BENCHCOMMAND_H

namespace hyc::compiler {

/// `hyc bench ARTIFACT ...`: TTFT, TPOT, tokens/s and the decode bandwidth
/// and prefill compute efficiencies against limits measured in the same run.
int runBenchCommand(int argc, char **argv);

/// Where ARTIFACT is in argv (argv[0] is "bench") as runBenchCommand's flag
/// parser reads it; -1 when the flags do not parse or name none.
int benchArtifactIndex(int argc, char **argv);

} // namespace hyc::compiler

#endif // HYC_COMPILER_BENCHCOMMAND_H
