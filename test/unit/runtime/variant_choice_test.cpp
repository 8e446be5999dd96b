// The loader's choice among an artifact's ISA variants, on CPU descriptions
// injected as feature lists (an AMX Xeon, a Zen 4, an AVX2 desktop): which
// variant runs, what HYC_ISA may force, and the errors naming what is
// missing. Execution on those CPUs is not faked: only the choice is tested.
#include "hyrt/artifact/artifact.h"
#include "hyrt/support/decode_streams.h"

#include <gtest/gtest.h>

namespace {

using hyrt::Variant;

Variant variant(const std::string &name, std::vector<std::string> features) {
  Variant v;
  v.name = name;
  v.library = "model." + name + ".so";
  v.cpu_features = std::move(features);
  return v;
}

/// The variants `hyc compile --quant bf16` (target portable) writes, with
/// the features its kernels need.
std::vector<Variant> bf16Portable() {
  const std::vector<std::string> avx512 = {"avx512bw", "avx512dq", "avx512f", "avx512vl",
                                           "sse2"};
  std::vector<std::string> bf16 = avx512, amx = avx512;
  bf16.push_back("avx512_bf16");
  amx.insert(amx.end(), {"avx512_bf16", "amx_tile", "amx_bf16"});
  return {variant("avx2", {"avx2", "fma", "sse2"}), variant("avx512", avx512),
          variant("avx512-bf16", bf16), variant("amx", amx)};
}

const std::vector<std::string> kSapphireRapids = {
    "sse2",     "avx",         "avx2",        "fma",         "f16c",     "avx512f",
    "avx512dq", "avx512cd",    "avx512bw",    "avx512vl",    "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "avx_vnni", "amx_tile",    "amx_bf16",    "amx_int8"};
const std::vector<std::string> kZen4 = {"sse2",     "avx",      "avx2",        "fma",
                                        "f16c",     "avx512f",  "avx512dq",    "avx512cd",
                                        "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"};
const std::vector<std::string> kHaswell = {"sse2", "avx", "avx2", "fma", "f16c"};

struct Choice {
  bool ok = false;
  int64_t index = -1;
  std::string text; ///< why, or the error
};

Choice choose(const std::vector<Variant> &variants, const std::vector<std::string> &host,
              const std::string &forced = "", const std::string &amxNote = "") {
  Choice c;
  std::string why;
  hyrt::Status s = hyrt::choose_variant(variants, host, forced, amxNote, &c.index, &why);
  c.ok = s.ok();
  c.text = s.ok() ? why : s.message();
  return c;
}

TEST(VariantChoice, EachHostRunsItsBestVariant) {
  const std::vector<Variant> v = bf16Portable();
  Choice spr = choose(v, kSapphireRapids);
  ASSERT_TRUE(spr.ok) << spr.text;
  EXPECT_EQ(v[size_t(spr.index)].name, "amx");
  EXPECT_EQ(spr.text, "amx: best of avx2, avx512, avx512-bf16, amx that this CPU runs");

  Choice zen = choose(v, kZen4);
  ASSERT_TRUE(zen.ok) << zen.text;
  EXPECT_EQ(v[size_t(zen.index)].name, "avx512-bf16");
  EXPECT_NE(zen.text.find("(not amx lacks amx_tile, amx_bf16)"), std::string::npos)
      << zen.text;

  Choice hsw = choose(v, kHaswell);
  ASSERT_TRUE(hsw.ok) << hsw.text;
  EXPECT_EQ(v[size_t(hsw.index)].name, "avx2");
}

TEST(VariantChoice, AmxRefusedByTheOsSaysWhy) {
  // CPUID says AMX, the kernel did not grant tile data: the runtime's
  // detection leaves the amx_* features out and gives the reason.
  std::vector<std::string> host = kSapphireRapids;
  host.resize(host.size() - 3);
  const std::string note = "arch_prctl(ARCH_REQ_XCOMP_PERM) refused AMX tile data";
  Choice c = choose(bf16Portable(), host, "", note);
  ASSERT_TRUE(c.ok) << c.text;
  EXPECT_EQ(bf16Portable()[size_t(c.index)].name, "avx512-bf16");
  EXPECT_NE(c.text.find("amx_bf16 (" + note + ")"), std::string::npos) << c.text;
  Choice forced = choose(bf16Portable(), host, "amx", note);
  EXPECT_FALSE(forced.ok);
  EXPECT_EQ(forced.text, "HYC_ISA=amx: this CPU lacks amx_tile, amx_bf16 (" + note +
                             "), which variant amx needs");
}

TEST(VariantChoice, HycIsaForcesAVariantTheHostRuns) {
  const std::vector<Variant> v = bf16Portable();
  Choice c = choose(v, kSapphireRapids, "avx2");
  ASSERT_TRUE(c.ok) << c.text;
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(c.text, "avx2: forced by HYC_ISA (variants: avx2, avx512, avx512-bf16, amx)");
  c = choose(v, kZen4, "amx");
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.text, "HYC_ISA=amx: this CPU lacks amx_tile, amx_bf16, which variant amx needs");
  c = choose({variant("avx2", {"avx2", "fma"}), variant("avx512", {"avx512f"})}, kZen4,
             "avx512-bf16");
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.text, "HYC_ISA=avx512-bf16: the artifact has no variant 'avx512-bf16' (it "
                    "has: avx2, avx512)");
}

TEST(VariantChoice, NoRunnableVariantNamesWhatEachLacks) {
  Choice c = choose({variant("avx512", {"avx512f", "avx512bw"}),
                     variant("amx", {"avx512f", "amx_tile", "warp_drive"})},
                    kHaswell);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.text.find("this CPU can run none of the artifact's variants (avx512 lacks "
                        "avx512f, avx512bw; amx lacks avx512f, amx_tile, warp_drive "
                        "(unknown to this runtime); host has: sse2 avx avx2 fma f16c)"),
            std::string::npos)
      << c.text;
  EXPECT_FALSE(choose({}, kHaswell).ok);
}

TEST(VariantChoice, OrderDecidesAmongRunnableVariants) {
  // The manifest lists variants lowest first; the last runnable one wins,
  // whatever its name.
  const std::vector<Variant> v = {variant("avx512", {"avx512f"}), variant("avx2", {"avx2"})};
  Choice c = choose(v, kZen4);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.index, 1);
}

// The loader passes over a variant whose kernel self-test failed: the
// next best one runs, and the reason says which was refused and why.
TEST(VariantChoice, AVariantRefusedBySelfTestGivesWayToTheNextBest) {
  const std::vector<Variant> v = bf16Portable();
  int64_t index = -1;
  std::string why;
  const std::vector<hyrt::RefusedVariant> refused = {
      {"amx", "failed its kernel self-test (kernel hyc_brgemm_bf16bf16f32_32x32x64_amx)"}};
  ASSERT_TRUE(hyrt::choose_variant(v, kSapphireRapids, "", "", &index, &why, refused).ok());
  EXPECT_EQ(v[size_t(index)].name, "avx512-bf16");
  EXPECT_EQ(why, "avx512-bf16: best of avx2, avx512, avx512-bf16 that this CPU runs (not amx "
                 "failed its kernel self-test (kernel hyc_brgemm_bf16bf16f32_32x32x64_amx))");
  // Every runnable variant refused: an error naming each.
  std::vector<hyrt::RefusedVariant> all;
  for (const char *name : {"avx2", "avx512", "avx512-bf16", "amx"})
    all.push_back({name, "failed its kernel self-test (kernel k)"});
  const hyrt::Status s = hyrt::choose_variant(v, kZen4, "", "", &index, &why, all);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no variant this CPU runs passed the kernel self-test (avx2 failed"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("amx lacks amx_tile"), std::string::npos) << s.message();
}

// The host's choice of weight streams (hyrt/support/decode_streams.h): the
// environment's 1 or 2 wins; otherwise two only on AMD family 26 and later
// (measured faster there), one on Zen 4 (measured slower) and on hosts
// never measured; a malformed value is named in the reason and ignored.
TEST(DecodeStreams, TheHostRuleAndItsOverride) {
  EXPECT_EQ(hyrt::chooseDecodeStreams(nullptr, true, 26).streams, 2);
  EXPECT_EQ(hyrt::chooseDecodeStreams(nullptr, true, 27).streams, 2);
  EXPECT_EQ(hyrt::chooseDecodeStreams(nullptr, true, 25).streams, 1);
  EXPECT_EQ(hyrt::chooseDecodeStreams(nullptr, false, 6).streams, 1);
  EXPECT_EQ(hyrt::chooseDecodeStreams("1", true, 26).streams, 1);
  EXPECT_EQ(hyrt::chooseDecodeStreams("2", false, 6).streams, 2);
  EXPECT_EQ(hyrt::chooseDecodeStreams("2", false, 6).why, "HYRT_DECODE_STREAMS=2");
  const hyrt::DecodeStreams bad = hyrt::chooseDecodeStreams("3x", true, 25);
  EXPECT_EQ(bad.streams, 1);
  EXPECT_NE(bad.why.find("HYRT_DECODE_STREAMS=\"3x\" ignored: expected 1 or 2"),
            std::string::npos)
      << bad.why;
  EXPECT_NE(hyrt::chooseDecodeStreams(nullptr, true, 25).why.find("Zen 4"), std::string::npos);
  // This host's decision is one of the two forms, with a reason.
  EXPECT_TRUE(hyrt::decodeStreams().streams == 1 || hyrt::decodeStreams().streams == 2);
  EXPECT_FALSE(hyrt::decodeStreams().why.empty());
}

// What the tools print: the host's choice for a variant whose kernels have
// both forms (AVX-512), one stream for the avx2 kernels whatever the host.
TEST(DecodeStreams, TheLineNamesTheVariantsForm) {
  const std::vector<std::string> avx2 = {"avx2", "fma", "sse2"},
                                 avx512 = {"avx512_vnni", "avx512f", "sse2"};
  EXPECT_EQ(hyrt::decodeGemvLine(avx2),
            "1 weight stream per thread (the avx2 kernels have no two-stream form)");
  EXPECT_NE(hyrt::decodeGemvLine(avx512).find(hyrt::decodeStreams().why), std::string::npos);
  EXPECT_EQ(hyrt::decodeGemvLine(avx512).rfind("(W8A8, bf16): " +
                                                    std::to_string(hyrt::decodeStreams().streams),
                                                0),
            0u);
}

} // namespace
