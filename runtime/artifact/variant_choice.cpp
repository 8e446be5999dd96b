// Which of an artifact's ISA variants runs on this host (hyrt/artifact/artifact.h).
// A pure function of the variants and a CPU description, so that tests can
// inject a CPU (an AMX Xeon, an AVX2-only desktop) without running on one.
#include "hyrt/artifact/artifact.h"
#include "hyrt/artifact/cpu_features.h"

#include <algorithm>

namespace hyrt {

namespace {

/// The features of `v` that `host` lacks, comma separated ("" when none).
std::string missing_features(const Variant &v, const std::vector<std::string> &host,
                             const std::string &amx_note) {
  std::string missing;
  bool amx = false;
  for (const std::string &f : v.cpu_features)
    if (std::find(host.begin(), host.end(), f) == host.end()) {
      const std::vector<std::string> &known = known_cpu_features();
      missing += (missing.empty() ? "" : ", ") + f +
                 (std::find(known.begin(), known.end(), f) == known.end()
                      ? " (unknown to this runtime)"
                      : "");
      amx = amx || f.rfind("amx_", 0) == 0;
    }
  if (amx && !amx_note.empty())
    missing += " (" + amx_note + ")";
  return missing;
}

std::string names(const std::vector<Variant> &variants) {
  std::string out;
  for (const Variant &v : variants)
    out += (out.empty() ? "" : ", ") + v.name;
  return out;
}

} // namespace

Status choose_variant(const std::vector<Variant> &variants,
                      const std::vector<std::string> &host_features,
                      const std::string &forced, const std::string &amx_note,
                      int64_t *index, std::string *why) {
  if (variants.empty())
    return Status::Error("the artifact has no variants");
  if (!forced.empty()) {
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].name != forced)
        continue;
      const std::string missing = missing_features(variants[i], host_features, amx_note);
      if (!missing.empty())
        return Status::Error("HYC_ISA=" + forced + ": this CPU lacks " + missing +
                             ", which variant " + forced + " needs");
      *index = int64_t(i);
      *why = forced + ": forced by HYC_ISA (variants: " + names(variants) + ")";
      return Status::Ok();
    }
    return Status::Error("HYC_ISA=" + forced + ": the artifact has no variant '" +
                         forced + "' (it has: " + names(variants) + ")");
  }
  std::string runnable, refused;
  int64_t best = -1;
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string missing = missing_features(variants[i], host_features, amx_note);
    if (missing.empty()) {
      best = int64_t(i);
      runnable += (runnable.empty() ? "" : ", ") + variants[i].name;
    } else {
      refused += (refused.empty() ? "" : "; ") + variants[i].name + " lacks " + missing;
    }
  }
  if (best < 0) {
    std::string have;
    for (const std::string &f : host_features)
      have += (have.empty() ? "" : " ") + f;
    return Status::Error("this CPU can run none of the artifact's variants (" + refused +
                         "; host has: " + have + ")");
  }
  *index = best;
  *why = variants[size_t(best)].name + ": best of " + runnable + " that this CPU runs" +
         (refused.empty() ? "" : " (not " + refused + ")");
  return Status::Ok();
}

} // namespace hyrt
