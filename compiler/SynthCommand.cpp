//===- SynthCommand.cpp - `hyc synth`: seeded HF checkpoints --------------===//

#include "compiler/SynthCommand.h"

#include "compiler/Args.h"
#include "models/checkpoint/synth.h"

#include <cstdio>

namespace hyc::compiler {

static const char *kSynthUsage = R"(usage: hyc synth --arch ARCH [--preset tiny|small] [--seed N] -o DIR

Writes a Hugging Face-style checkpoint (config.json with upstream field
names, model.safetensors, and a llama2.c tokenizer.bin) with seeded weights.
)";

int runSynthCommand(int argc, char **argv) {
  cli::Args args({"arch", "preset", "seed", "o", "output"}, {"help", "fp8"});
  std::vector<char *> fixed(argv, argv + argc);
  std::string dashO = "--o";
  for (auto &a : fixed)
    if (std::string(a) == "-o")
      a = dashO.data();
  std::string error;
  if (!args.parse(argc, fixed.data(), 1, error)) {
    std::fprintf(stderr, "hyc synth: %s\n%s", error.c_str(), kSynthUsage);
    return 2;
  }
  if (args.has("help")) {
    std::fputs(kSynthUsage, stdout);
    return 0;
  }
  int64_t seed = 0;
  if (!args.getInt("seed", 0, seed, error)) {
    std::fprintf(stderr, "hyc synth: %s\n", error.c_str());
    return 2;
  }
  std::string out = args.get("o", args.get("output"));
  if (out.empty() || !args.has("arch")) {
    std::fprintf(stderr, "hyc synth: --arch and -o are required\n%s", kSynthUsage);
    return 2;
  }
  models::SynthOptions options;
  options.arch = args.get("arch");
  options.preset = args.get("preset", "tiny");
  options.seed = static_cast<uint64_t>(seed);
  options.output_dir = out;
  options.fp8 = args.has("fp8");
  auto status = models::synthesize(options);
  if (!status.ok()) {
    std::fprintf(stderr, "hyc synth: error: %s\n", status.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "hyc synth: wrote %s (%s, preset %s, seed %lld)\n",
               out.c_str(), options.arch.c_str(), options.preset.c_str(),
               static_cast<long long>(seed));
  return 0;
}

} // namespace hyc::compiler
