//===- BenchProfile.cpp - `hyc bench --profile`: time per op kind ---------===//

#include "compiler/BenchProfile.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

namespace hyc::compiler {

void PhaseProfile::start(hyrt_profile_v0 *p) {
  p->num_kinds = 0;
  p->current = -1;
  p->enabled = 1;
}

void PhaseProfile::stop(hyrt_profile_v0 *p, int64_t stepsDone) {
  p->enabled = 0;
  for (int32_t i = 0; i < p->num_kinds; ++i) {
    Kind &k = kinds[p->entries[i].kind];
    k.seconds += p->entries[i].seconds;
    k.calls += p->entries[i].calls;
  }
  steps += stepsDone;
}

double PhaseProfile::totalSeconds() const {
  double t = 0;
  for (const auto &[name, k] : kinds)
    t += k.seconds;
  return t;
}

namespace {

/// Kinds of both phases, by decode time then prefill time, largest first.
std::vector<std::string> rowOrder(const PhaseProfile &prefill,
                                  const PhaseProfile &decode) {
  std::set<std::string> names;
  for (const auto &[n, k] : prefill.kinds)
    names.insert(n);
  for (const auto &[n, k] : decode.kinds)
    names.insert(n);
  std::vector<std::string> rows(names.begin(), names.end());
  auto secs = [](const PhaseProfile &p, const std::string &n) {
    auto it = p.kinds.find(n);
    return it == p.kinds.end() ? 0.0 : it->second.seconds;
  };
  std::sort(rows.begin(), rows.end(), [&](const std::string &a, const std::string &b) {
    const double da = secs(decode, a), db = secs(decode, b);
    return da != db ? da > db : secs(prefill, a) > secs(prefill, b);
  });
  return rows;
}

/// ms per step and share of the phase for one kind ("-" when absent).
std::string cell(const PhaseProfile &p, const std::string &name) {
  auto it = p.kinds.find(name);
  if (it == p.kinds.end() || p.steps == 0)
    return "        -      ";
  char buf[64];
  const double total = p.totalSeconds();
  std::snprintf(buf, sizeof buf, "%9.3f %4.0f%%", it->second.seconds * 1e3 / double(p.steps),
                total > 0 ? 100.0 * it->second.seconds / total : 0.0);
  return buf;
}

std::string display(const std::string &kind) {
  return kind.rfind("hyrt_", 0) == 0 ? kind.substr(5) : kind;
}

} // namespace

void printProfile(const PhaseProfile &prefill, const PhaseProfile &decode) {
  std::printf("  profile, ms per step (prefill step = one prompt, decode step = "
              "one token for the batch):\n");
  std::printf("    %-32s %15s %15s\n", "op kind", "prefill", "decode");
  for (const std::string &name : rowOrder(prefill, decode))
    std::printf("    %-32s %s %s\n", display(name).c_str(), cell(prefill, name).c_str(),
                cell(decode, name).c_str());
  auto total = [](const PhaseProfile &p) {
    return p.steps ? p.totalSeconds() * 1e3 / double(p.steps) : 0.0;
  };
  std::printf("    %-32s %9.3f       %9.3f\n", "total in kernels", total(prefill),
              total(decode));
}

std::string profileJson(const PhaseProfile &prefill, const PhaseProfile &decode) {
  auto phase = [](const PhaseProfile &p) {
    std::string out = "{";
    bool first = true;
    for (const auto &[name, k] : p.kinds) {
      char buf[256];
      const double steps = double(std::max<int64_t>(p.steps, 1));
      std::snprintf(buf, sizeof buf,
                    "%s\"%s\": {\"ms_per_step\": %.4f, \"calls_per_step\": %.2f}",
                    first ? "" : ", ", display(name).c_str(), k.seconds * 1e3 / steps,
                    double(k.calls) / steps);
      out += buf;
      first = false;
    }
    return out + "}";
  };
  return "\"profile\": {\"prefill\": " + phase(prefill) +
         ", \"decode\": " + phase(decode) + "}";
}

} // namespace hyc::compiler
