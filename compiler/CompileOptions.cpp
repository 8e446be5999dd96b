//===- CompileOptions.cpp - `hyc compile`'s option table and its parser ---===//
//
// The table (compileOptionTable), the --help text generated from it, and
// the parser that reads a command line against it into CompileOptions.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompileOptions.h"

#include "compiler/Args.h"

#include <cstdio>

namespace hyc::compiler {

namespace {

// The compile bounds' largest values: a million tokens per extend step,
// 65536 sequences per decode step, 16M positions per sequence. Each is far
// past what a CPU serves and keeps every bound product inside int64 (the
// arena and KV size arithmetic; positions are int32 in the ABI).
constexpr int64_t kMaxBatchTokensBound = int64_t(1) << 20;
constexpr int64_t kMaxSeqsBound = int64_t(1) << 16;
constexpr int64_t kMaxSeqLenBound = int64_t(1) << 24;
constexpr int64_t kMaxRanks = 64;

//===----------------------------------------------------------------------===//
// Table entries by kind
//===----------------------------------------------------------------------===//

OptionSpec flag(const char *name, bool CompileOptions::*field, const char *help) {
  OptionSpec s{name, OptionKind::Flag, field};
  s.help = help;
  return s;
}

OptionSpec text(const char *name, const char *metavar, std::string CompileOptions::*field,
                const char *defaultValue, const char *help) {
  OptionSpec s{name, OptionKind::Text, field, metavar, help};
  s.defaultValue = defaultValue;
  return s;
}

OptionSpec list(const char *name, std::vector<std::string> CompileOptions::*field,
                const char *help) {
  return OptionSpec{name, OptionKind::List, field, "NAMES", help};
}

OptionSpec choice(const char *name, const char *metavar,
                  std::string CompileOptions::*field, const char *defaultValue,
                  const char *help, std::vector<OptionChoice> choices,
                  const char *helpAfter = "") {
  OptionSpec s{name, OptionKind::Choice, field, metavar, help, helpAfter};
  s.defaultValue = defaultValue;
  s.choices = std::move(choices);
  return s;
}

OptionSpec integer(const char *name, const char *metavar, int64_t CompileOptions::*field,
                   int64_t min, int64_t max, const char *defaultValue, const char *help) {
  OptionSpec s{name, OptionKind::Integer, field, metavar, help};
  s.defaultValue = defaultValue;
  s.min = min;
  s.max = max;
  return s;
}

OptionSpec real(const char *name, const char *metavar, double CompileOptions::*field,
                double min, double max, const char *defaultValue, const char *help) {
  OptionSpec s{name, OptionKind::Real, field, metavar, help};
  s.defaultValue = defaultValue;
  s.realMin = min;
  s.realMax = max;
  return s;
}

using O = CompileOptions;

void addOutputAndTargetOptions(std::vector<OptionSpec> &t) {
  t.push_back(text("output", "PATH", &O::output, nullptr,
                   "artifact directory (or file for mlir/llvm/obj)"));
  t.back().shortName = "o";
  t.push_back(
      text("target", "NAMES", &O::target, "portable",
           "ISA variants to embed, comma-separated (the loader runs the best one the "
           "host supports, HYC_ISA=NAME forces one): portable (avx2, avx512, and "
           "avx512-bf16 / amx where the --quant has kernels for them) | avx2 | avx512 | "
           "avx512-bf16 | amx | native (this host's best) | a CPU level or name: "
           "x86-64-v3, x86-64-v4, znver4, sapphirerapids, ... (docs/targets.md) | "
           "reference (fp32 reference kernels, one variant)"));
}

void addNumericsOptions(std::vector<OptionSpec> &t) {
  t.push_back(choice(
      "quant", "SCHEME", &O::quant, "auto", "the weights' numbers:",
      {{"auto", "the checkpoint's own precision (f32 stays f32, bf16 stays bf16, FP8 "
                "blocks, channel-INT8, AWQ/GPTQ int4 and the GGUF types the kernels hold "
                "(Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL) keep their "
                "codes; "
                "f16 and other GGUF types go to bf16); printed"},
       {"f32"},
       {"bf16", "bf16 weights; fp32 FMA on avx512"},
       {"w8a8", "per-channel int8 weights, per-token int8 activations, VNNI"},
       {"w8a8-g128", "one weight scale per 128 K-elements"},
       {"w8a8-g32", "int8 codes with one fp16 scale per 32 K-elements inside the weight "
                    "(GGUF Q8_0 as stored)"},
       {"w4a8", "4-bit codes with one fp16 scale per 32 K-elements (GGUF Q4_0 as "
                "stored), per-token int8 activations: half the bytes of w8a8"},
       {"fp8", "e4m3 weights, one factor per 128x128 block, weight-only: widened to "
               "bf16 in the GEMM; an FP8 checkpoint keeps its own codes"}},
      "; the MoE router stays bf16 and the lm_head is per-channel int8 under "
      "an integer --quant (--keep-bf16 lm_head: bf16; a tied head gets its own "
      "copy of the table). On --target=reference, bf16 and w8a8 are the plain "
      "semantics the kernels are tested against"));
  t.push_back(flag("bf16-activations", &O::bf16Activations,
                   "with --target=reference --quant=bf16: round GEMM activations to "
                   "bf16 too (the semantics of the native avx512-bf16 kernels, to "
                   "compare with them)"));
  t.push_back(choice("quant-lm-head", "TYPE", &O::quantLmHead, "bf16",
                     "with an integer --quant (w8a8, w8a8-g128, w8a8-g32, w4a8), the "
                     "output head's type (default int8 unless --keep-bf16 lm_head):",
                     {{"bf16"},
                      {"int8", "half the bytes of decode's largest read; a tied head "
                               "quantizes its own copy"}}));
  t.push_back(list("keep-int8", &O::keepInt8,
                   "with --quant w4a8 / w8a8-g32: weights whose name contains one of these "
                   "(comma-separated, e.g. q_proj,k_proj,v_proj) stay per-channel int8 "
                   "(w8a8) instead of taking the codes"));
  t.push_back(list("keep-bf16", &O::keepBf16,
                   "with --quant w8a8: weights whose name contains one of these "
                   "(comma-separated, e.g. q_proj,k_proj; lm_head for a bf16 head) stay "
                   "bf16 like the router always does"));
  t.push_back(list("keep-f32", &O::keepF32,
                   "weights whose name contains one of these (comma-separated) stay "
                   "fp32 (e.g. mlp.gate,lm_head for the old behaviour)"));
  t.push_back(choice(
      "kv-cache", "TYPE", &O::kvCache, "auto", "KV cache elements:",
      {{"auto", "bf16 on kernel targets when every attention kernel reads bf16, else "
                "f32; f32 on --target=reference"},
       {"f32"},
       {"bf16"},
       {"int8", "one fp32 scale per token and KV head, dequantized inside the "
                "attention kernels"}}));
}

void addPipelineOptions(std::vector<OptionSpec> &t) {
  t.push_back(choice("emit", "KIND", &O::emit, "lib", "what to write:",
                     {{"lib", "artifact directory"},
                      {"exe", "artifact plus a standalone executable OUT/model"},
                      {"mlir"},
                      {"llvm"},
                      {"obj"}}));
  t.push_back(
      choice("compile-to", "PHASE", &O::compileTo, "import", "with --emit=mlir:",
             {{"import", "hyc IR"},
              {"global", "after the graph passes: quantize policy, fusions"},
              {"strategy", "every op carries its #hyc_cpu.lowering_config and buffer"},
              {"kernel", "hyc_kernel microkernel calls"},
              {"llvm", "LLVM dialect; `lower` is an alias", "lower"}}));
  t.push_back(list("disable-pass", &O::disabledPasses,
                   "leave out these graph passes (comma-separated: "
                   "hyc-global-absorb-mla, hyc-global-fuse-gate-up-silu, "
                   "hyc-global-fuse-activation-quant, hyc-global-fuse-residual-norm, "
                   "hyc-global-fuse-moe-combine, "
                   "hyc-global-fuse-kv-append-into-attention), e.g. to compare fused "
                   "and unfused artifacts"));
  t.push_back(flag("print-schedule", &O::printSchedule,
                   "print each op's kernel, tile and threading"));
  t.push_back(flag("print-ir-after-all", &O::printIrAfterAll,
                   "print the IR after every pass (stderr)"));
  t.push_back(flag("allow-reference", &O::allowReference,
                   "let an optimized variant call hyrt_ref_* reference kernels "
                   "(scalar loops) where an op has no kernel, instead of failing "
                   "the compile naming them; for debugging"));
}

void addParallelOptions(std::vector<OptionSpec> &t) {
  t.push_back(integer("threads", "N", &O::threads, 1, 4096, "2",
                      "threads the schedule plans for"));
  t.back().intervalWording = true;
  t.push_back(integer("tp", "N", &O::tp, 1, kMaxRanks, "1",
                      "tensor parallel over N ranks (hyc-global-shard: attention heads "
                      "and MLP columns split, an all-reduce after o_proj and down); "
                      "rank 0's artifact in OUT, rank r's in OUT/ranks/r; run with "
                      "`hyc run|bench|serve` (they start the ranks)"));
  t.back().unit = "ranks";
  t.push_back(integer("tp-rank", "R", &O::tpRank, 0, kMaxRanks - 1, "0",
                      "with --tp: compile rank R alone (what --emit=mlir shows)"));
  t.push_back(integer("ep", "N", &O::ep, 1, kMaxRanks, "1",
                      "with --tp N: expert parallel over the same ranks (each holds "
                      "E/N whole experts) instead of every expert's ffn columns split"));
  t.push_back(choice(
      "ep-exchange", "HOW", &O::epExchange, "all-to-all", "with --ep:",
      {{"all-to-all", "each rank sends its own tokens' pairs to the experts' ranks "
                      "and gets the rows back, a staged all-to-all each way"},
       {"all-reduce", "every rank routes every token, keeps its experts' pairs, the "
                      "combines all-reduced"}}));
}

void addCalibrationOptions(std::vector<OptionSpec> &t) {
  t.push_back(flag("calibration-build", &O::calibrationBuild,
                   "an fp32 artifact that records per-channel max |x| of every "
                   "quantizable GEMM input (hyc.observe); run it with `hyc calibrate "
                   "ART --text FILE`"));
  t.push_back(text("calibration", "FILE", &O::calibration, nullptr,
                   "SmoothQuant: the maxima `hyc calibrate` wrote move activation "
                   "outliers into the weights (factor s per channel, norm weight / s, "
                   "GEMM columns * s; attention and MLP input norms); exact in fp32"));
  t.push_back(real("smooth-alpha", "A", &O::smoothAlpha, 0, 1, "0.5",
                   "with --calibration: migration strength, s = max|X|^A / "
                   "max|W|^(1-A)"));
}

void addBoundsAndInputOptions(std::vector<OptionSpec> &t) {
  t.push_back(integer("max-seq-len", "N", &O::maxSeqLen, 1, kMaxSeqLenBound, nullptr,
                      "longest sequence the artifact serves; left out: the model's "
                      "context up to 8192, halved while the weights and a KV cache of "
                      "--max-seqs full sequences exceed 80% of this machine's memory "
                      "(not below 2048); printed"));
  t.push_back(integer("max-batch-tokens", "N", &O::maxBatchTokens, 1,
                      kMaxBatchTokensBound, "512", "most tokens in one extend step"));
  t.push_back(integer("max-seqs", "N", &O::maxSeqs, 1, kMaxSeqsBound, "16",
                      "most sequences in one decode step"));
  t.push_back(text("tokenizer", "PATH", &O::tokenizer, nullptr,
                   "llama2.c tokenizer.bin for a .bin checkpoint"));
  t.push_back(flag("help", &O::help, "print this help"));
}

std::vector<OptionSpec> buildTable() {
  std::vector<OptionSpec> table;
  addOutputAndTargetOptions(table);
  addNumericsOptions(table);
  addPipelineOptions(table);
  addParallelOptions(table);
  addCalibrationOptions(table);
  addBoundsAndInputOptions(table);
  return table;
}

//===----------------------------------------------------------------------===//
// --help
//===----------------------------------------------------------------------===//

std::string formatReal(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", v);
  return buffer;
}

/// The values a number option accepts and its default, as --help shows
/// them: "1..4096, default 2", "in [0, 1], default 0.5".
std::string describeRange(const OptionSpec &spec) {
  std::string range =
      spec.kind == OptionKind::Integer
          ? std::to_string(spec.min) + ".." + std::to_string(spec.max)
          : "in [" + formatReal(spec.realMin) + ", " + formatReal(spec.realMax) + "]";
  if (*spec.unit)
    range += std::string(" ") + spec.unit;
  return spec.defaultValue ? range + ", default " + spec.defaultValue : range;
}

/// An option's whole description: its help, its range or choices and its
/// default.
std::string describe(const OptionSpec &spec) {
  std::string text = spec.help;
  if (spec.kind == OptionKind::Integer || spec.kind == OptionKind::Real)
    return text + " (" + describeRange(spec) + ")";
  if (spec.kind != OptionKind::Choice)
    return spec.defaultValue ? text + " (default " + spec.defaultValue + ")" : text;
  for (size_t i = 0; i < spec.choices.size(); ++i) {
    const OptionChoice &c = spec.choices[i];
    text += i == 0 ? (text.empty() ? "" : " ") : " | ";
    text += c.name;
    const bool isDefault = spec.defaultValue && std::string(c.name) == spec.defaultValue;
    if (isDefault && *c.meaning)
      text += std::string(" (default: ") + c.meaning + ")";
    else if (isDefault)
      text += " (default)";
    else if (*c.meaning)
      text += std::string(" (") + c.meaning + ")";
  }
  return text + spec.helpAfter;
}

/// `text` word-wrapped into lines of at most `width` characters after an
/// indent of `indent` (the first line's indent is already written).
std::string wrap(const std::string &text, size_t indent, size_t width) {
  std::string out, line;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(' ', begin);
    if (end == std::string::npos)
      end = text.size();
    const std::string word = text.substr(begin, end - begin);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    begin = end + 1;
  }
  return out + line + "\n";
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// Why a value was refused, for parseValue.
struct ValueError {
  std::string message;
  int exitCode;
};

std::string joinChoices(const OptionSpec &spec) {
  std::string names;
  for (const OptionChoice &c : spec.choices)
    names += (names.empty() ? "" : "|") + std::string(c.name);
  return names;
}

/// `value` checked against `spec` and stored in `options`; false with
/// `error` naming the option, what it expects and what it got.
bool parseValue(const OptionSpec &spec, const std::string &value, CompileOptions &options,
                ValueError &error) {
  const std::string flag = std::string("--") + spec.name;
  switch (spec.kind) {
  case OptionKind::Flag:
    options.*std::get<bool CompileOptions::*>(spec.field) = true;
    return true;
  case OptionKind::Text:
    options.*std::get<std::string CompileOptions::*>(spec.field) = value;
    return true;
  case OptionKind::List:
    options.*std::get<std::vector<std::string> CompileOptions::*>(spec.field) =
        cli::splitCommaList(value);
    return true;
  case OptionKind::Choice:
    for (const OptionChoice &c : spec.choices)
      if (value == c.name || (c.alias && value == c.alias)) {
        options.*std::get<std::string CompileOptions::*>(spec.field) = c.name;
        return true;
      }
    error = {flag + " expects " + joinChoices(spec) + ", got '" + value + "'", 2};
    return false;
  case OptionKind::Integer: {
    int64_t v = 0;
    if (!cli::parseInteger(value, v)) {
      error = {"flag " + flag + " expects an integer, got '" + value + "'", 2};
      return false;
    }
    if (v < spec.min || v > spec.max) {
      const std::string lo = std::to_string(spec.min), hi = std::to_string(spec.max);
      error = {flag +
                   (spec.intervalWording ? " must be in [" + lo + ", " + hi + "]"
                                         : " expects " + lo + ".." + hi) +
                   (*spec.unit ? std::string(" ") + spec.unit : "") + ", got " +
                   std::to_string(v),
               1};
      return false;
    }
    options.*std::get<int64_t CompileOptions::*>(spec.field) = v;
    return true;
  }
  case OptionKind::Real: {
    double v = 0;
    if (!cli::parseReal(value, v) || v < spec.realMin || v > spec.realMax) {
      error = {flag + " expects a number in [" + formatReal(spec.realMin) + ", " +
                   formatReal(spec.realMax) + "], got '" + value + "'",
               1};
      return false;
    }
    options.*std::get<double CompileOptions::*>(spec.field) = v;
    return true;
  }
  }
  return true;
}

/// The flags cli::Args accepts: every table entry, and each short name.
cli::Args argsForTable() {
  std::set<std::string> valueFlags, boolFlags;
  for (const OptionSpec &spec : compileOptionTable()) {
    std::set<std::string> &names = spec.kind == OptionKind::Flag ? boolFlags : valueFlags;
    names.insert(spec.name);
    if (spec.shortName)
      names.insert(spec.shortName);
  }
  return cli::Args(std::move(valueFlags), std::move(boolFlags));
}

/// Each table entry's value, given or default, into `options`.
bool readTableValues(const cli::Args &args, CompileOptions &options, OptionError &error) {
  for (const OptionSpec &spec : compileOptionTable()) {
    const bool given =
        args.has(spec.name) || (spec.shortName && args.has(spec.shortName));
    if (given)
      options.given.insert(spec.name);
    else if (!spec.defaultValue)
      continue;
    // The short name wins: the per-rank compiles append `-o RANK_DIR`.
    const std::string value =
        !given
            ? spec.defaultValue
            : args.get(spec.shortName ? spec.shortName : spec.name, args.get(spec.name));
    if (ValueError refused; !parseValue(spec, value, options, refused)) {
      error = {refused.message, refused.exitCode, false};
      return false;
    }
  }
  return true;
}

} // namespace

const std::vector<OptionSpec> &compileOptionTable() {
  static const std::vector<OptionSpec> table = buildTable();
  return table;
}

std::string compileUsage() {
  constexpr size_t kHelpColumn = 27, kWidth = 80;
  std::string usage = "usage: hyc compile INPUT -o OUT [options]\n\n"
                      "INPUT is a GGUF file, a llama2.c .bin, a Hugging Face directory\n"
                      "(config.json + model.safetensors) or a hyc IR .mlir file.\n\n"
                      "options:\n";
  for (const OptionSpec &spec : compileOptionTable()) {
    std::string left = "  ";
    if (spec.shortName)
      left += std::string("-") + spec.shortName + ", ";
    left += std::string("--") + spec.name;
    if (spec.kind != OptionKind::Flag)
      left += std::string(" ") + spec.metavar;
    left += left.size() + 1 < kHelpColumn ? std::string(kHelpColumn - left.size(), ' ')
                                          : "\n" + std::string(kHelpColumn, ' ');
    usage += left + wrap(describe(spec), kHelpColumn, kWidth);
  }
  return usage;
}

bool parseCompileOptions(int argc, char **argv, CompileOptions &options,
                         OptionError &error) {
  cli::Args args = argsForTable();
  if (std::string message; !args.parse(argc, argv, 1, message)) {
    error = {message, 2, true};
    return false;
  }
  options = CompileOptions();
  options.help = args.has("help");
  if (options.help)
    return true;
  if (args.positionals().size() != 1) {
    error = {"expected one INPUT, got " + std::to_string(args.positionals().size()), 2,
             true};
    return false;
  }
  options.input = args.positionals()[0];
  if (!readTableValues(args, options, error))
    return false;
  if (options.output.empty()) {
    error = {"missing -o OUT", 2, true};
    return false;
  }
  parsePhase(options.compileTo, options.lastPhase);
  if (std::string message; !checkOptionCombinations(options, message)) {
    error = {message, 1, false};
    return false;
  }
  return true;
}

bool integerQuant(const std::string &quant) {
  return quant == "w8a8" || quant == "w8a8-g128" || quant == "w8a8-g32" || quant == "w4a8";
}

bool checkOptionCombinations(const CompileOptions &o, std::string &error) {
  error.clear();
  const std::string tp = std::to_string(o.tp);
  if (o.quantLmHead == "int8" && !integerQuant(o.quant))
    error = "--quant-lm-head int8 needs an integer --quant (w8a8, w8a8-g128, w8a8-g32 or "
            "w4a8: the head's activations are quantized per token like the other "
            "layers), got --quant " +
            o.quant;
  else if (o.calibrationBuild && o.quant != "f32" && o.quant != "auto")
    error = "--calibration-build records fp32 activations: it needs --quant f32, got "
            "--quant " +
            o.quant;
  else if (o.calibrationBuild && o.isGiven("calibration"))
    error = "--calibration-build observes the model as it is: drop --calibration";
  else if (o.isGiven("smooth-alpha") && !o.isGiven("calibration"))
    error = "--smooth-alpha needs --calibration FILE";
  else if (o.tpRank >= o.tp)
    error = "--tp-rank expects 0.." + std::to_string(o.tp - 1) + " (--tp " + tp +
            "), got " + std::to_string(o.tpRank);
  else if (o.ep != 1 && o.ep != o.tp)
    error = "--ep " + std::to_string(o.ep) + " expects 1 or the --tp count " + tp +
            " (experts are placed over the tensor-parallel ranks)";
  else if (o.isGiven("ep-exchange") && o.ep == 1)
    error = "--ep-exchange needs --ep N (expert parallel)";
  else if (o.tp > 1 && o.isGiven("calibration"))
    error = "--calibration with --tp: SmoothQuant factors of split weights are not "
            "supported yet; compile without one of them";
  else if (o.tp > 1 && o.emit == "exe")
    error = "--emit=exe with --tp: a standalone executable runs one rank; use "
            "--emit=lib and `hyc run --tp " +
            tp + "`";
  else if (o.isMlirInput() && o.isGiven("calibration"))
    error = "--calibration smooths a checkpoint's weights; a .mlir input has none";
  else if (o.isMlirInput() && o.emitsArtifact())
    error = "a .mlir input has no weights; use --emit=mlir|llvm|obj";
  return error.empty();
}

} // namespace hyc::compiler
