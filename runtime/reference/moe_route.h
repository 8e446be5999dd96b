// One token's MoE routing, shared by the reference kernel and the threaded
// CPU kernel so that both select the same experts with the same weights
// bit for bit (routing ids must not depend on the target).
#ifndef HYRT_REFERENCE_MOE_ROUTE_H
#define HYRT_REFERENCE_MOE_ROUTE_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace hyrt::ref {

/// Working memory of routeToken, reused across the tokens of one thread.
struct RouteScratch {
  std::vector<double> scores, sel, groupScores;
  std::vector<char> allowed, groupAllowed;
};

/// Index of the largest value among allowed entries; ties go to the lower
/// index. Returns -1 when nothing is allowed.
inline int64_t argmaxAllowed(const double *v, const char *allowed, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i)
    if (allowed[i] && (best < 0 || v[i] > v[best]))
      best = i;
  return best;
}

/// Routes one token (logits l[E]) as hyrt_ref_moe_route documents: writes
/// w[top_k] and id[top_k].
inline void routeToken(const float *l, const float *correctionBias, int64_t E,
                       int64_t topK, int32_t scoring, int64_t nGroup,
                       int64_t topkGroup, int32_t groupScore, int32_t renormalize,
                       float routedScalingFactor, float *w, int32_t *id,
                       RouteScratch &s) {
  s.scores.resize(E);
  s.sel.resize(E);
  s.allowed.assign(E, 1);
  double *scores = s.scores.data(), *sel = s.sel.data();
  if (scoring == 0) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t e = 0; e < E; ++e)
      mx = std::max(mx, double(l[e]));
    double sum = 0.0;
    for (int64_t e = 0; e < E; ++e)
      sum += (scores[e] = std::exp(double(l[e]) - mx));
    for (int64_t e = 0; e < E; ++e)
      scores[e] /= sum;
  } else {
    for (int64_t e = 0; e < E; ++e)
      scores[e] = 1.0 / (1.0 + std::exp(-double(l[e])));
  }
  // Scores go through fp32 so that selection and weights see the same
  // values an fp32 implementation would.
  for (int64_t e = 0; e < E; ++e) {
    scores[e] = float(scores[e]);
    sel[e] = correctionBias ? double(float(scores[e] + correctionBias[e])) : scores[e];
  }
  if (nGroup > 1) {
    // Group score: the best member (max), or the sum of the best two.
    const int64_t perGroup = E / nGroup;
    s.groupScores.assign(nGroup, 0.0);
    for (int64_t g = 0; g < nGroup; ++g) {
      double first = -std::numeric_limits<double>::infinity(), second = first;
      for (int64_t e = g * perGroup; e < (g + 1) * perGroup; ++e) {
        if (sel[e] > first) {
          second = first;
          first = sel[e];
        } else if (sel[e] > second) {
          second = sel[e];
        }
      }
      s.groupScores[g] = first;
      if (groupScore == 1 && perGroup > 1)
        s.groupScores[g] += second;
    }
    std::vector<char> &left = s.groupAllowed;
    left.assign(nGroup, 1);
    std::vector<char> chosen(nGroup, 0);
    for (int64_t i = 0; i < topkGroup && i < nGroup; ++i) {
      const int64_t g = argmaxAllowed(s.groupScores.data(), left.data(), nGroup);
      chosen[g] = 1;
      left[g] = 0;
    }
    for (int64_t e = 0; e < E; ++e)
      s.allowed[e] = chosen[e / perGroup];
  }
  double sum = 0.0;
  for (int64_t j = 0; j < topK; ++j) {
    const int64_t e = argmaxAllowed(sel, s.allowed.data(), E);
    if (e < 0) { // top_k exceeds the experts left: pad with weight 0
      id[j] = 0;
      w[j] = 0.f;
      continue;
    }
    s.allowed[e] = 0;
    id[j] = int32_t(e);
    w[j] = float(scores[e]);
    sum += scores[e];
  }
  for (int64_t j = 0; j < topK; ++j) {
    double wj = w[j];
    if (renormalize && sum > 0.0)
      wj /= sum;
    w[j] = float(wj * double(routedScalingFactor));
  }
}

} // namespace hyrt::ref

#endif // HYRT_REFERENCE_MOE_ROUTE_H
