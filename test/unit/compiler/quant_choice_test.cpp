// --quant auto's table: the checkpoint's own precision where hyc holds it
// exactly (f32, bf16, FP8 blocks, channel-INT8, GGUF Q4_0 / Q8_0 and packed
// int4 as codes), bf16 with the reason where it does not (f16, other GGUF
// block types); the type with most GEMM bytes decides a mixed file; a
// calibration build is f32.
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
  for (const char *block : {"Q2_K", "Q3_K"}) {
    const QuantChoice c = chooseQuant({{block, 100}}, false);
    EXPECT_EQ(c.quant, "bf16") << block;
    EXPECT_NE(c.reason.find(block), std::string::npos) << c.reason;
  }
  EXPECT_EQ(chooseQuant({}, false).quant, "f32");
}

// Block types the kernels hold exactly (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K, IQ4_XS, IQ4_NL) are kept as codes, each matrix in its own format: 4-bit
// when most elements are 4-bit types, else 8-bit; a file that mixes them
// with another block type goes to bf16 saying why.
TEST(QuantChoice, BlockTypesTheKernelsHoldKeepTheirCodes) {
  const QuantChoice q4 = chooseQuant({{"Q4_0", 100}}, false);
  EXPECT_EQ(q4.quant, "w4a8");
  EXPECT_NE(q4.reason.find("kept as stored"), std::string::npos) << q4.reason;
  EXPECT_EQ(chooseQuant({{"Q8_0", 100}}, false).quant, "w8a8-g32");
  EXPECT_EQ(chooseQuant({{"Q4_0", 100}, {"Q8_0", 10}}, false).quant, "w4a8");
  EXPECT_EQ(chooseQuant({{"Q4_0", 10}, {"Q8_0", 100}}, false).quant, "w8a8-g32");
  for (const char *block : {"Q4_K", "IQ4_XS", "IQ4_NL", "Q4_1"})
    EXPECT_EQ(chooseQuant({{block, 100}, {"Q6_K", 20}}, false).quant, "w4a8") << block;
  for (const char *block : {"Q5_0", "Q5_1", "Q5_K", "Q6_K"})
    EXPECT_EQ(chooseQuant({{block, 100}}, false).quant, "w8a8-g32") << block;
  const QuantChoice q41 = chooseQuant({{"Q4_1", 100}, {"Q8_0", 10}}, false);
  EXPECT_NE(q41.reason.find("4-bit codes with fp16 scales and mins per 32, kept as stored"),
            std::string::npos)
      << q41.reason;
  // Q5_0 beside Q4_0: 4-bit when most elements are Q4_0 (Q5_0 matrices keep
  // 8-bit codes), 8-bit otherwise.
  EXPECT_EQ(chooseQuant({{"Q4_0", 100}, {"Q5_0", 10}}, false).quant, "w4a8");
  EXPECT_EQ(chooseQuant({{"Q4_0", 10}, {"Q5_0", 100}}, false).quant, "w8a8-g32");
  const QuantChoice mixed = chooseQuant({{"Q4_0", 100}, {"Q2_K", 10}}, false);
  EXPECT_EQ(mixed.quant, "bf16");
  EXPECT_NE(mixed.reason.find("other block types"), std::string::npos) << mixed.reason;
}

// AWQ, GPTQ and compressed-tensors int4 (group 128, zero points) are kept
// as codes; float matrices beside them (modules_to_not_convert) do not
// change that. A group the q4z layout cannot hold (64, 32), or int4 mixed
// with another quantized type, goes to bf16.
TEST(QuantChoice, PackedInt4KeepsItsCodes) {
  const QuantChoice awq = chooseQuant({{"AWQ_INT4", 100}}, false);
  EXPECT_EQ(awq.quant, "w4a8");
  EXPECT_NE(awq.reason.find("AWQ int4, group 128 with zero points, kept as stored"),
            std::string::npos)
      << awq.reason;
  EXPECT_EQ(chooseQuant({{"AWQ_INT4", 100}, {"F16", 20}}, false).quant, "w4a8");
  const QuantChoice g64 = chooseQuant({{"AWQ_INT4_G64", 100}}, false);
  EXPECT_EQ(g64.quant, "bf16");
  EXPECT_NE(g64.reason.find("AWQ_INT4_G64"), std::string::npos) << g64.reason;
  EXPECT_EQ(chooseQuant({{"AWQ_INT4", 100}, {"I8", 10}}, false).quant, "bf16");
  EXPECT_EQ(chooseQuant({{"AWQ_INT4", 100}}, true).quant, "f32");
  const QuantChoice gptq = chooseQuant({{"GPTQ_INT4", 100}, {"F16", 20}}, false);
  EXPECT_EQ(gptq.quant, "w4a8");
  EXPECT_NE(gptq.reason.find("GPTQ int4, group 128 with zero points, kept as stored"),
            std::string::npos)
      << gptq.reason;
  const QuantChoice ct = chooseQuant({{"CT_INT4", 100}}, false);
  EXPECT_EQ(ct.quant, "w4a8");
  EXPECT_NE(ct.reason.find("compressed-tensors int4"), std::string::npos) << ct.reason;
  EXPECT_EQ(chooseQuant({{"GPTQ_INT4_G32", 100}}, false).quant, "bf16");
}

TEST(QuantChoice, MostBytesDecideAMixedFileAndCalibrationIsF32) {
  // A Q4_K_M file: mostly Q4_K with some Q6_K and f32 tensors.
  const QuantChoice q4km = chooseQuant({{"Q4_K", 700}, {"Q6_K", 200}, {"F32", 100}}, false);
  EXPECT_EQ(q4km.quant, "w4a8");
  EXPECT_NE(q4km.reason.find("as Q4_K, Q6_K"), std::string::npos) << q4km.reason;
  // A Q2_K file cannot be kept: bf16, naming the type that holds most.
  const QuantChoice q2k = chooseQuant({{"Q2_K", 700}, {"Q3_K", 200}}, false);
  EXPECT_EQ(q2k.quant, "bf16");
  EXPECT_NE(q2k.reason.find("as Q2_K"), std::string::npos) << q2k.reason;
  EXPECT_EQ(chooseQuant({{"F32", 600}, {"BF16", 500}}, false).quant, "f32");
  EXPECT_EQ(chooseQuant({{"F32", 400}, {"BF16", 500}}, false).quant, "bf16");
  EXPECT_EQ(chooseQuant({{"BF16", 500}}, true).quant, "f32");
}

} // namespace
} // namespace hyc::compiler
