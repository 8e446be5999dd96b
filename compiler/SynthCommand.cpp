//===- SynthCommand.cpp - `hyc synth`: seeded HF checkpoints --------------===//

#include "compiler/SynthCommand.h"

#include "compiler/Args.h"
#include "models/checkpoint/convert_gguf.h"
#include "models/checkpoint/synth.h"

#include <cstdio>

namespace hyc::compiler {

static const char *kSynthUsage = R"(usage: hyc synth --arch ARCH [--preset tiny|small] [--seed N] -o DIR
       hyc synth --preset dense-1b|moe-small|mla-small [--seed N] -o DIR
                 [(--fp8 | --awq) [--dequantized-copy DIR2] | --int8]
                 [--ffn N] [--expert-ffn N] [--vocab-size N]
                 [--tokenizer HF_TOKENIZER_DIR]

Writes a Hugging Face-style checkpoint (config.json with upstream field
names, model.safetensors, and a llama2.c tokenizer.bin) with seeded weights.
ARCH: llama, qwen2, qwen3, qwen3-moe, deepseek-v2, deepseek-v2-lite,
deepseek-v3, hunyuan-moe.
The real-size presets imply the arch and write bf16 weights: dense-1b
(Llama-3.2-1B, tied, 2.5 GB), moe-small (Qwen3-MoE layout, hidden 2048,
64 experts top-8), mla-small (DeepSeek-V3 layout, hidden 2048, 64 experts
top-6 + 2 shared); the shapes the benchmarks compare with other engines.

  --fp8                  store linear weights as e4m3 with 128x128
                         weight_scale_inv blocks (DeepSeek's FP8 format)
  --int8                 store linear weights as channel-INT8: int8 values
                         with one weight_scale per output row (w8a8_int8)
  --awq                  store linear weights as AutoAWQ GEMM int4: qweight,
                         qzeros, fp16 scales per group of 128 along K (every
                         such K a multiple of 128: e.g. --preset small
                         --ffn 512)
  --dequantized-copy D   with --fp8 or --awq: also write the exact fp32
                         dequantized twin of the checkpoint to D
  --ffn N                the dense MLP width instead of the preset's
  --expert-ffn N         each routed expert's width instead of the preset's
  --vocab-size N         the vocabulary size instead of the preset's (a real
                         tokenizer's ids must fit: Qwen3's 151936)
  --tokenizer DIR        copy DIR's tokenizer.json and tokenizer_config.json
                         (chat template included) instead of writing a
                         llama2.c tokenizer.bin; without --vocab-size the
                         vocabulary grows to hold the tokenizer's ids
                         (rounded up to 128)
)";

static const char *kConvertUsage = R"(usage: hyc convert-gguf HF_DIR OUT.gguf [--outtype f32|f16|bf16|q8_0|q4_0]

Writes the GGUF file llama.cpp's converter would write for a Hugging Face
checkpoint (llama, qwen2, qwen3, qwen3moe, hunyuan-moe; deepseek2 for
DeepSeek-V2, V2-Lite, V3 and R1). --outtype (default f32) is the type of
the weights of 2+ dims; norms, the MoE router and 1-D tensors stay f32
(q8_0, q4_0: a tensor whose rows are not whole 32-value blocks is f16), as
the converter's --outtype does; q4_0 as llama-quantize --pure Q4_0 (every
such weight, the output head included). Other engines run the same
weights this way.
)";

int runConvertGgufCommand(int argc, char **argv) {
  cli::Args args({"outtype"}, {"help"});
  std::string error;
  if (!args.parse(argc, argv, 1, error)) {
    std::fprintf(stderr, "hyc convert-gguf: %s\n%s", error.c_str(), kConvertUsage);
    return 2;
  }
  if (args.has("help")) {
    std::fputs(kConvertUsage, stdout);
    return 0;
  }
  if (args.positionals().size() != 2) {
    std::fprintf(stderr, "hyc convert-gguf: expected HF_DIR and OUT.gguf\n%s",
                 kConvertUsage);
    return 2;
  }
  models::GgufConvertOptions options;
  options.outtype = args.get("outtype", "f32");
  std::vector<std::string> warnings;
  auto status = models::convert_hf_to_gguf(
      args.positionals()[0], args.positionals()[1], options, &warnings);
  for (const std::string &warning : warnings)
    std::fprintf(stderr, "hyc convert-gguf: warning: %s\n", warning.c_str());
  if (!status.ok()) {
    std::fprintf(stderr, "hyc convert-gguf: error: %s\n", status.error().c_str());
    return 1;
  }
  return 0;
}

int runSynthCommand(int argc, char **argv) {
  cli::Args args({"arch", "preset", "seed", "o", "output", "dequantized-copy", "ffn",
                  "expert-ffn", "vocab-size", "tokenizer"},
                 {"help", "fp8", "int8", "awq"});
  std::string error;
  if (!args.parse(argc, argv, 1, error)) {
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
  std::string preset = args.get("preset", "tiny");
  std::string implied = models::synth_preset_arch(preset);
  if (out.empty() || (!args.has("arch") && implied.empty())) {
    std::fprintf(stderr,
                 "hyc synth: -o and --arch (or a preset that implies it) are "
                 "required\n%s",
                 kSynthUsage);
    return 2;
  }
  models::SynthOptions options;
  options.arch = args.get("arch", implied);
  options.preset = preset;
  options.seed = static_cast<uint64_t>(seed);
  options.output_dir = out;
  options.fp8 = args.has("fp8");
  options.int8 = args.has("int8");
  options.awq = args.has("awq");
  options.dequantize_fp8_to = args.get("dequantized-copy");
  options.hf_tokenizer_dir = args.get("tokenizer");
  for (const char *key : {"ffn", "expert-ffn", "vocab-size"}) {
    if (!args.has(key))
      continue;
    int64_t width = 0;
    if (!args.getInt(key, 0, width, error)) {
      std::fprintf(stderr, "hyc synth: %s\n", error.c_str());
      return 2;
    }
    const std::string k = key;
    (k == "ffn"          ? options.intermediate_size
     : k == "vocab-size" ? options.vocab_size
                         : options.expert_intermediate_size) = width;
  }
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
