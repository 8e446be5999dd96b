//===- main.cpp - the hyc driver: subcommand dispatch ---------------------===//
//
//   hyc compile     checkpoint -> artifact (compiler/CompileCommand.cpp)
//   hyc run         run an artifact on a prompt (libhyrt); a checkpoint
//                   in its place is compiled into a cache first
//                   (RunFromCheckpoint.cpp), as for serve and bench
//   hyc perplexity  score a text file (libhyrt)
//   hyc calibrate   activation maxima of a calibration build (libhyrt)
//   hyc tokenize    text <-> ids with a checkpoint's tokenizer (libhyrt)
//   hyc synth       write a seeded Hugging Face checkpoint
//   hyc convert-gguf  Hugging Face checkpoint -> GGUF
//   hyc bench       speed and efficiency of an artifact (BenchCommand.cpp)
//   hyc serve       OpenAI-compatible HTTP server (libhyrt_serve)
//   hyc version
//
//===----------------------------------------------------------------------===//

#include "compiler/BenchCommand.h"
#include "compiler/CompileCommand.h"
#include "compiler/RunFromCheckpoint.h"
#include "compiler/SynthCommand.h"
#include "hyrt/abi.h"
#include "hyrt/cli/cli.h"
#include "hyrt/cli/serve.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kUsage = R"(usage: hyc <command> [options]

commands:
  compile     compile a checkpoint (GGUF, llama2.c .bin, Hugging Face dir) to an artifact
  run         generate text with an artifact (or a checkpoint, compiled once
              into a cache)
  perplexity  mean NLL / perplexity of an artifact over a text file
  calibrate   per-channel activation maxima of a calibration build (for --calibration)
  tokenize    text <-> token ids, or a rendered chat, with a checkpoint's tokenizer
  synth       write a seeded synthetic Hugging Face checkpoint
  convert-gguf  write a Hugging Face checkpoint as GGUF (llama.cpp layout)
  bench       TTFT, TPOT, tokens/s and efficiencies of an artifact
  serve       OpenAI-compatible HTTP server (continuous batching)
  version     print version information

`hyc <command> --help` describes each command.
)";

/// argv (argv[0] the command name) after the command name.
std::vector<std::string> afterCommand(int argc, char **argv) {
  return std::vector<std::string>(argv + 1, argv + argc);
}

/// An index into afterCommand()'s list as an index into argv.
int argvIndex(int index) { return index < 0 ? -1 : index + 1; }

const hyc::compiler::ArtifactCommand kRun{
    "run",
    [](int argc, char **argv) {
      return argvIndex(hyrt::cli_run_artifact_index(afterCommand(argc, argv)));
    },
    hyrt_cli_run};

const hyc::compiler::ArtifactCommand kServe{
    "serve",
    [](int argc, char **argv) {
      return argvIndex(hyrt::cli_serve_artifact_index(afterCommand(argc, argv)));
    },
    hyrt_cli_serve, /*namesModel=*/true};

const hyc::compiler::ArtifactCommand kBench{"bench", hyc::compiler::benchArtifactIndex,
                                            hyc::compiler::runBenchCommand};

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  int subArgc = argc - 1;
  char **subArgv = argv + 1;
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "compile")
    return hyc::compiler::runCompileCommand(subArgc, subArgv);
  if (cmd == "run")
    return hyc::compiler::runOnModel(kRun, subArgc, subArgv);
  if (cmd == "perplexity")
    return hyrt_cli_perplexity(subArgc, subArgv);
  if (cmd == "calibrate")
    return hyrt_cli_calibrate(subArgc, subArgv);
  if (cmd == "tokenize")
    return hyrt_cli_tokenize(subArgc, subArgv);
  if (cmd == "synth")
    return hyc::compiler::runSynthCommand(subArgc, subArgv);
  if (cmd == "convert-gguf")
    return hyc::compiler::runConvertGgufCommand(subArgc, subArgv);
  if (cmd == "bench")
    return hyc::compiler::runOnModel(kBench, subArgc, subArgv);
  if (cmd == "serve")
    return hyc::compiler::runOnModel(kServe, subArgc, subArgv);
  if (cmd == "version" || cmd == "--version") {
    std::printf("hyc %s (runtime ABI %d, targets: reference)\n",
                hyc::compiler::kHycVersion, HYRT_ABI_VERSION);
    return 0;
  }
  std::fprintf(stderr, "hyc: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}
