// --quant auto's table: the checkpoint's own precision where hyc holds it
// exactly (f32, bf16, FP8 blocks, channel-INT8), bf16 with the reason where
// it does not (f16, GGUF block types); the type with most GEMM bytes
// decides a mixed file; a calibration build is f32.
#include "compiler/QuantChoice.h"

#include <gtest/gtest.h>

namespace hyc::compiler {
namespace {

TEST(QuantChoice, TheStoredTypeDecides) {
  EXPECT_EQ(chooseQuant({{"F32", 100}}, false).quant, "f32");
  EXPECT_EQ(chooseQuant({{"BF16", 100}}, false).quant, "bf16");
  EXPECT_EQ(chooseQuant({{"F8_E4M3", 100}, {"F32", 10}}, false).quant, "fp8");
  EXPECT_EQ(chooseQuant({{"I8", 100}, {"F32", 10}}, false).quant, "w8a8");
  const QuantChoice f16 = chooseQuant({{"F16", 100}}, false);
  EXPECT_EQ(f16.quant, "bf16");
  EXPECT_NE(f16.reason.find("--quant f32 keeps them exactly"), std::string::npos) << f16.reason;
  for (const char *block : {"Q8_0", "Q4_K", "Q6_K", "IQ4_XS", "Q4_0"}) {
    const QuantChoice c = chooseQuant({{block, 100}}, false);
    EXPECT_EQ(c.quant, "bf16") << block;
    EXPECT_NE(c.reason.find(block), std::string::npos) << c.reason;
  }
  EXPECT_EQ(chooseQuant({}, false).quant, "f32");
}

TEST(QuantChoice, MostBytesDecideAMixedFileAndCalibrationIsF32) {
  // A Q4_K_M file: mostly Q4_K with some Q6_K and f32 tensors.
  const QuantChoice q4km = chooseQuant({{"Q4_K", 700}, {"Q6_K", 200}, {"F32", 100}}, false);
  EXPECT_EQ(q4km.quant, "bf16");
  EXPECT_NE(q4km.reason.find("as Q4_K"), std::string::npos) << q4km.reason;
  EXPECT_EQ(chooseQuant({{"F32", 600}, {"BF16", 500}}, false).quant, "f32");
  EXPECT_EQ(chooseQuant({{"F32", 400}, {"BF16", 500}}, false).quant, "bf16");
  EXPECT_EQ(chooseQuant({{"BF16", 500}}, true).quant, "f32");
}

} // namespace
} // namespace hyc::compiler
