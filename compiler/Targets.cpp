//===- Targets.cpp - `--target`: the ISA variants an artifact carries -----===//

#include "compiler/Targets.h"

#include "codegen/cpu_isa.h"

#include <algorithm>

namespace hyc::compiler {

bool isaVariantNamed(const std::string &name, IsaVariant &out) {
  static const IsaVariant table[] = {
      {"reference", 0, "reference", false, false},
      {"avx2", 1, "avx2", false, false},
      {"avx512", 2, "avx512", false, false},
      {"avx512-bf16", 3, "avx512", true, false},
      {"amx", 4, "avx512", true, true},
  };
  for (const IsaVariant &v : table)
    if (v.name == name) {
      out = v;
      return true;
    }
  return false;
}

namespace {

/// A CPU-level name as the variant that level runs best, for `quant`
/// (levels whose extra instructions no kernel of `quant` uses fall back to
/// the variant below them). Empty when `name` is not a level.
std::string levelVariant(const std::string &name, const std::string &quant) {
  // FP8 runs on the bf16 kernels (its codes widened to bf16).
  const bool bf16 = quant == "bf16" || quant == "fp8", f32 = quant == "f32";
  for (const char *n : {"x86-64-v3", "haswell", "broadwell", "skylake", "znver1",
                        "znver2", "znver3", "alderlake"})
    if (name == n)
      return "avx2";
  for (const char *n : {"x86-64-v4", "skylake-avx512", "cascadelake", "icelake-server"})
    if (name == n)
      return "avx512";
  for (const char *n : {"znver4", "znver5", "cooperlake"})
    if (name == n)
      return bf16 ? "avx512-bf16" : "avx512";
  for (const char *n : {"sapphirerapids", "emeraldrapids", "graniterapids"})
    if (name == n)
      return f32 ? "avx512" : "amx";
  if (name == "native") {
    const codegen::HostIsa &h = codegen::host_isa();
    if (!f32 && h.amx_tile && h.amx_bf16 && h.amx_int8)
      return "amx";
    if (bf16 && h.avx512_bf16)
      return "avx512-bf16";
    if (h.avx512_core && ((quant.rfind("w8a8", 0) != 0 && quant != "w4a8") || h.avx512_vnni))
      return "avx512";
    return "avx2";
  }
  return "";
}

} // namespace

bool parseTargets(const std::string &target, const std::string &quant,
                  std::vector<IsaVariant> &out, std::string &error) {
  out.clear();
  auto add = [&](const std::string &name) {
    IsaVariant v;
    isaVariantNamed(name, v);
    if (std::none_of(out.begin(), out.end(),
                     [&](const IsaVariant &o) { return o.name == name; }))
      out.push_back(v);
  };
  size_t begin = 0;
  while (begin <= target.size()) {
    size_t comma = target.find(',', begin);
    if (comma == std::string::npos)
      comma = target.size();
    const std::string name = target.substr(begin, comma - begin);
    begin = comma + 1;
    IsaVariant v;
    if (name == "portable") {
      add("avx2");
      add("avx512");
      if (quant == "bf16" || quant == "fp8")
        add("avx512-bf16");
      if (quant != "f32")
        add("amx");
    } else if (isaVariantNamed(name, v)) {
      add(name);
    } else if (std::string level = levelVariant(name, quant); !level.empty()) {
      add(level);
    } else {
      error = "unknown --target '" + name +
              "' (expected portable, reference, avx2, avx512, avx512-bf16, amx, "
              "native, x86-64-v3, x86-64-v4, znver4, sapphirerapids or another "
              "CPU name of docs/targets.md, or a comma-separated list)";
      return false;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const IsaVariant &a, const IsaVariant &b) { return a.level < b.level; });
  if (out.size() > 1 && out.front().name == "reference") {
    error = "--target reference runs the fp32 reference kernels on every CPU; it "
            "cannot be combined with other variants (got '" + target + "')";
    return false;
  }
  return true;
}

} // namespace hyc::compiler
