//===- RunFromCheckpoint.h - `hyc run|serve|bench MODEL` ---------*- C++ -*-===//
//
// The runtime commands take an artifact directory. Given a checkpoint (a
// Hugging Face directory, a .gguf or a llama2.c .bin) instead, the driver
// compiles it once into a cache keyed by the checkpoint's identity, the
// compile options and this hyc's build, then runs the command on the cached
// artifact; the next call finds it there and compiles nothing. This lives in
// the driver because compiling needs MLIR and LLVM, which the runtime
// (libhyrt) must not link: the runtime command only ever sees an artifact.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_RUNFROMCHECKPOINT_H
#define HYC_COMPILER_RUNFROMCHECKPOINT_H

#include <functional>
#include <string>

namespace hyc::compiler {

/// hyc's version, as `hyc version` prints it; part of the cache key.
inline constexpr const char *kHycVersion = "0.1.0";

/// A command that runs an artifact: `hyc run`, `hyc serve`, `hyc bench`.
struct ArtifactCommand {
  std::string name; ///< "run"
  /// Where ART is in argv (argv[0] is the command name) as the command's
  /// own flag parser reads it; -1 when the flags do not parse or name none.
  std::function<int(int argc, char **argv)> artifactIndex;
  /// The command itself, on an argv naming an artifact.
  std::function<int(int argc, char **argv)> run;
  /// The command names its model after the artifact directory unless given
  /// --model-name (`hyc serve`): a cached artifact is named after its
  /// checkpoint instead.
  bool namesModel = false;
};

/// Runs `command` (argv[0] is its name) on MODEL, which may be an artifact
/// or a checkpoint compiled on demand into the cache (docs/user-guide.md,
/// "Checkpoints in place of artifacts"). Takes the driver's own flags
/// --cache-dir DIR, --compile-opt OPTS and --recompile out of argv first.
/// Returns the exit code.
int runOnModel(const ArtifactCommand &command, int argc, char **argv);

} // namespace hyc::compiler

#endif // HYC_COMPILER_RUNFROMCHECKPOINT_H
