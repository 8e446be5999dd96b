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
                      int64_t *index, std::string *why,
                      const std::vector<RefusedVariant> &refused) {
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
  std::string runnable, refused_text;
  int64_t best = -1, self_test_refused = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string missing = missing_features(variants[i], host_features, amx_note);
    auto gone = std::find_if(refused.begin(), refused.end(),
                             [&](const RefusedVariant &r) { return r.name == variants[i].name; });
    if (missing.empty() && gone != refused.end()) {
      ++self_test_refused;
      refused_text += (refused_text.empty() ? "" : "; ") + variants[i].name + " " + gone->why;
    } else if (missing.empty()) {
      best = int64_t(i);
      runnable += (runnable.empty() ? "" : ", ") + variants[i].name;
    } else {
      refused_text += (refused_text.empty() ? "" : "; ") + variants[i].name + " lacks " + missing;
    }
  }
  if (best < 0 && self_test_refused > 0)
    return Status::Error("no variant this CPU runs passed the kernel self-test (" +
                         refused_text + ")");
  if (best < 0) {
    std::string have;
    for (const std::string &f : host_features)
      have += (have.empty() ? "" : " ") + f;
    return Status::Error("this CPU can run none of the artifact's variants (" + refused_text +
                         "; host has: " + have + ")");
  }
  *index = best;
  *why = variants[size_t(best)].name + ": best of " + runnable + " that this CPU runs" +
         (refused_text.empty() ? "" : " (not " + refused_text + ")");
  return Status::Ok();
}

} // namespace hyrt
