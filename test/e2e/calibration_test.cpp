// Calibration and SmoothQuant: `hyc compile --calibration-build` observes
// every quantizable GEMM input, `hyc calibrate` writes the per-channel
// maxima, `hyc compile --calibration` folds SmoothQuant factors into the
// RMSNorm and GEMM weights. On stories260K (llama2.c, dim 64, 5 layers):
// the recorded maxima against ones computed here from the checkpoint file,
// the smoothing against the unsmoothed model in fp32 (where it must change
// nothing), and the errors for calibration files that do not fit.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace hyc::e2e {
namespace {

const std::vector<std::string> kBounds = {"--max-seq-len", "128", "--max-batch-tokens", "48",
                                          "--kv-cache", "f32"};

std::string stories() { return sharedDir() + "/models/stories260K/stories260K.bin"; }

/// Three short paragraphs (a paragraph runs from BOS; the third is cut by
/// --samples 2).
std::string sampleText() {
  const std::string path = tempDir() + "/calibration-text.txt";
  std::ofstream(path) << "Once upon a time, there was a little girl named Lily.\n"
                         "She liked to play outside.\n\n"
                         "The big dog ran to the park. He was very happy!\n\n"
                         "This paragraph is never run.\n";
  return path;
}

/// The calibration file of stories260K over sampleText(), made once.
const std::string &storiesCalibration() {
  static const std::string path = [] {
    const std::vector<std::string> flags = {"--max-seq-len", "128", "--max-batch-tokens",
                                            "16", "--kv-cache", "f32",
                                            "--calibration-build"};
    const std::string art = compileOnce(stories(), flags);
    const std::string out = tempDir() + "/stories260K.calibration.json";
    CommandResult r = runHyc({"calibrate", art, "--text", sampleText(), "--samples", "2",
                              "-o", out});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }();
  return path;
}

/// The inputs[] entry feeding `weight`.
const nlohmann::json *inputFeeding(const nlohmann::json &doc, const std::string &weight) {
  for (const nlohmann::json &in : doc["inputs"])
    for (const nlohmann::json &f : in["feeds"])
      if (f == weight)
        return &in;
  return nullptr;
}

// Layer 0's q/k/v read RMSNorm(embedding row) * input_layernorm weight, so
// their input maxima follow from the checkpoint alone: read here straight
// from the llama2.c file (header of 7 int32, then the embedding table
// [vocab][dim], then the attention norms [layers][dim]), over the tokens
// the artifact's tokenizer gives the two sampled paragraphs.
TEST(Calibration, RecordsTheTruePerChannelMaxima) {
  if (!haveShared())
    GTEST_SKIP() << "../shared is absent";
  const nlohmann::json doc = nlohmann::json::parse(readFile(storiesCalibration()));
  EXPECT_EQ(doc["format"], "hyc-calibration");
  EXPECT_EQ(doc["samples"], 2);
  // Per layer: q/k/v, o, gate/up and down inputs; never the head's.
  EXPECT_EQ(doc["inputs"].size(), 5u * 4u);
  EXPECT_EQ(inputFeeding(doc, "lm_head.weight"), nullptr);
  EXPECT_EQ(inputFeeding(doc, "model.embed_tokens.weight"), nullptr);
  const nlohmann::json *qkv = inputFeeding(doc, "model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ((*qkv)["feeds"], nlohmann::json({"model.layers.0.self_attn.q_proj.weight",
                                             "model.layers.0.self_attn.k_proj.weight",
                                             "model.layers.0.self_attn.v_proj.weight"}));
  const nlohmann::json *gateUp = inputFeeding(doc, "model.layers.3.mlp.up_proj.weight");
  ASSERT_NE(gateUp, nullptr);
  EXPECT_EQ((*gateUp)["feeds"].size(), 2u);

  std::ifstream file(stories(), std::ios::binary);
  int32_t header[7];
  file.read(reinterpret_cast<char *>(header), sizeof(header));
  const int64_t dim = header[0], layers = header[2], vocab = std::abs(header[5]);
  ASSERT_EQ(dim, 64);
  std::vector<float> table(size_t(vocab * dim)), norms(size_t(layers * dim));
  file.read(reinterpret_cast<char *>(table.data()), std::streamsize(table.size() * 4));
  file.read(reinterpret_cast<char *>(norms.data()), std::streamsize(norms.size() * 4));
  ASSERT_TRUE(file);

  LoadedModel m = loadModel(compileOnce(stories(), kBounds));
  ASSERT_TRUE(m.artifact && m.artifact->tokenizer());
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  std::vector<double> want(size_t(dim), 0.0);
  int64_t rows = 0;
  for (const char *p : {"Once upon a time, there was a little girl named Lily.\n"
                        "She liked to play outside.",
                        "The big dog ran to the park. He was very happy!"}) {
    for (int32_t t : tok.encode(p, /*add_bos=*/true)) {
      const float *x = table.data() + int64_t(t) * dim;
      double ss = 0;
      for (int64_t j = 0; j < dim; ++j)
        ss += double(x[j]) * x[j];
      const double inv = 1.0 / std::sqrt(ss / double(dim) + 1e-5);
      for (int64_t j = 0; j < dim; ++j)
        want[size_t(j)] = std::max(want[size_t(j)], std::fabs(x[j] * inv * norms[size_t(j)]));
      ++rows;
    }
  }
  EXPECT_EQ((*qkv)["rows"], rows);
  const std::vector<float> got = (*qkv)["absmax"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), size_t(dim));
  // Each recorded maximum is one fp32 output of the reference RMSNorm: a
  // sum of dim = 64 squares (relative error <= 64 u, u = 2^-24), halved by
  // the square root, then a few rounded products: within 64 u of the exact
  // value computed here in double.
  const double rtol = 64.0 * std::ldexp(1.0, -24);
  for (int64_t j = 0; j < dim; ++j)
    EXPECT_NEAR(got[size_t(j)], want[size_t(j)], rtol * want[size_t(j)]) << "channel " << j;
}

// Powers of two go through fp32 products exactly: (x / s)(w s) == x w, and
// norm(h) * (w / s) == (norm(h) * w) / s. So an fp32 artifact smoothed with
// any calibration computes the very same logits, bit for bit; applying s on
// one side only (or to different channels) would not. The weights file
// shows that the factors are not all 1, and W8A8 shows that the quantized
// weights are the smoothed ones.
TEST(Calibration, SmoothingIsExactInFp32AndReachesTheQuantizedWeights) {
  if (!haveShared())
    GTEST_SKIP() << "../shared is absent";
  std::vector<std::string> smoothed = kBounds;
  smoothed.insert(smoothed.end(), {"--calibration", storiesCalibration()});
  const std::string plainArt = compileOnce(stories(), kBounds);
  const std::string smoothArt = compileOnce(stories(), smoothed);
  EXPECT_NE(readFile(plainArt + "/weights.bin"), readFile(smoothArt + "/weights.bin"));
  std::vector<int32_t> t = {1};
  for (int i = 1; i < 40; ++i)
    t.push_back(int32_t(3 + (i * 37) % 500));
  const std::vector<float> plain = teacherForced(plainArt, "", t);
  const std::vector<float> smooth = teacherForced(smoothArt, "", t);
  ASSERT_FALSE(plain.empty());
  ASSERT_EQ(plain.size(), smooth.size());
  EXPECT_EQ(maxAbsDiff(plain, smooth), 0.0);

  std::vector<std::string> w8 = kBounds, w8Smoothed = smoothed;
  w8.insert(w8.end(), {"--quant", "w8a8"});
  w8Smoothed.insert(w8Smoothed.end(), {"--quant", "w8a8"});
  const std::vector<float> q = teacherForced(compileOnce(stories(), w8), "", t);
  const std::vector<float> qs = teacherForced(compileOnce(stories(), w8Smoothed), "", t);
  ASSERT_EQ(q.size(), qs.size());
  EXPECT_GT(maxAbsDiff(q, qs), 0.0);
}

// The decision is visible after the global phase.
TEST(Calibration, GlobalDumpShowsTheSmoothGroups) {
  if (!haveShared())
    GTEST_SKIP() << "../shared is absent";
  CommandResult r = runHyc({"compile", stories(), "--calibration", storiesCalibration(),
                            "--smooth-alpha", "0.25", "--emit", "mlir", "--compile-to",
                            "global", "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("{alpha = 2.500000e-01 : f64, gemms = "
                       "[\"model.layers.4.mlp.gate_proj.weight\", "
                       "\"model.layers.4.mlp.up_proj.weight\"], "
                       "norm = \"model.layers.4.post_attention_layernorm.weight\"}"),
            std::string::npos)
      << r.out.substr(0, 2000);
  EXPECT_NE(r.err.find("SmoothQuant on 10 norm -> GEMM groups"), std::string::npos) << r.err;
}

/// `hyc compile stories260K --calibration FILE` to the global phase.
CommandResult compileWith(const std::string &calibration,
                          const std::string &model = stories()) {
  return runHyc({"compile", model, "--calibration", calibration, "--emit", "mlir",
                 "--compile-to", "global", "-o", tempDir() + "/ignored.mlir"});
}

std::string writeText(const std::string &name, const std::string &text) {
  const std::string path = tempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Calibration, BadFilesAreRefusedWithWhatWasExpected) {
  if (!haveShared())
    GTEST_SKIP() << "../shared is absent";
  CommandResult r = compileWith(tempDir() + "/does-not-exist.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("does-not-exist.json: cannot read"), std::string::npos) << r.err;

  r = compileWith(writeText("malformed.json", "{\"format\": \"hyc-calibration\", "));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("malformed.json: not a JSON object"), std::string::npos) << r.err;

  nlohmann::json doc = nlohmann::json::parse(readFile(storiesCalibration()));
  doc["inputs"][0]["absmax"][3] = -1.0;
  r = compileWith(writeText("negative.json", doc.dump()));
  EXPECT_NE(r.err.find("inputs[0].absmax[3] is -1.0, expected a finite maximum >= 0"),
            std::string::npos)
      << r.err;

  // Same names, other widths: stories260K's maxima (dim 64) for babyllama
  // (dim 128).
  const std::string baby = sharedDir() + "/models/babyllama-tok105/model5000.bin";
  r = compileWith(storiesCalibration(), baby);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has 64 channels, expected 128"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(the length of model.layers.0.input_layernorm.weight)"),
            std::string::npos)
      << r.err;

  // Other names: a group the file has no maxima for.
  doc = nlohmann::json::parse(readFile(storiesCalibration()));
  for (nlohmann::json &in : doc["inputs"])
    for (nlohmann::json &f : in["feeds"])
      f = "other." + f.get<std::string>();
  r = compileWith(writeText("renamed.json", doc.dump()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no maxima for the input of model.layers.0.self_attn.q_proj.weight, "
                       "model.layers.0.self_attn.k_proj.weight, "
                       "model.layers.0.self_attn.v_proj.weight"),
            std::string::npos)
      << r.err;
}

TEST(Calibration, CommandErrors) {
  if (!haveShared())
    GTEST_SKIP() << "../shared is absent";
  // A serving artifact has no observers.
  CommandResult r = runHyc({"calibrate", compileOnce(stories(), kBounds), "--text",
                            sampleText(), "-o", tempDir() + "/x.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("observes no activations"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--calibration-build"), std::string::npos) << r.err;
  // Observers see fp32 rows only.
  r = runHyc({"compile", stories(), "--calibration-build", "--quant", "w8a8", "-o",
              tempDir() + "/never"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--calibration-build records fp32 activations: it needs --quant f32, "
                       "got --quant w8a8"),
            std::string::npos)
      << r.err;
  r = runHyc({"compile", stories(), "--smooth-alpha", "2", "--calibration",
              storiesCalibration(), "-o", tempDir() + "/never"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--smooth-alpha expects a number in [0, 1], got '2'"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace hyc::e2e
