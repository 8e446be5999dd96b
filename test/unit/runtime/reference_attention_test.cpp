// Tests for the KV append, extend, paged (decode) and MLA attention reference
// kernels on a paged cache with a scrambled block table.
#include "hyrt/reference.h"
#include "ref_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using hyrt_test::PagedSetup;
using hyrt_test::random_vec;
using hyrt_test::StepSetup;

namespace {

constexpr int64_t kHkv = 2, kHeads = 4, kDk = 8, kDv = 6;

/// Dense per-sequence q/k/v for every position, and a naive causal GQA
/// attention over them.
struct DenseSeqs {
  std::vector<int32_t> lens;
  std::vector<std::vector<float>> q, k, v; // [s][pos][heads][dim]
  explicit DenseSeqs(std::vector<int32_t> l) : lens(std::move(l)) {
    for (size_t s = 0; s < lens.size(); ++s) {
      q.push_back(random_vec(lens[s] * kHeads * kDk, 100 + s));
      k.push_back(random_vec(lens[s] * kHkv * kDk, 200 + s));
      v.push_back(random_vec(lens[s] * kHkv * kDv, 300 + s, -2.f, 2.f));
    }
  }
  /// Gathers rows [prefix, prefix+new) of each sequence in step order.
  std::vector<float> gather(const std::vector<std::vector<float>> &src,
                            int64_t row, const std::vector<int32_t> &prefix,
                            const std::vector<int32_t> &new_len) const {
    std::vector<float> out;
    for (size_t s = 0; s < lens.size(); ++s)
      out.insert(out.end(), src[s].begin() + prefix[s] * row,
                 src[s].begin() + (prefix[s] + new_len[s]) * row);
    return out;
  }
  std::vector<float> naive(const std::vector<int32_t> &prefix,
                           const std::vector<int32_t> &new_len,
                           float scale) const {
    std::vector<float> out;
    for (size_t s = 0; s < lens.size(); ++s)
      for (int32_t p = prefix[s]; p < prefix[s] + new_len[s]; ++p)
        for (int64_t h = 0; h < kHeads; ++h) {
          const int64_t g = h / (kHeads / kHkv);
          std::vector<double> w(p + 1);
          double mx = -1e300, sum = 0;
          for (int32_t j = 0; j <= p; ++j) {
            double d = 0;
            for (int64_t i = 0; i < kDk; ++i)
              d += double(q[s][(p * kHeads + h) * kDk + i]) *
                   k[s][(j * kHkv + g) * kDk + i];
            w[j] = d * scale;
            mx = std::max(mx, w[j]);
          }
          for (double &x : w)
            sum += (x = std::exp(x - mx));
          for (int64_t i = 0; i < kDv; ++i) {
            double acc = 0;
            for (int32_t j = 0; j <= p; ++j)
              acc += w[j] / sum * v[s][(j * kHkv + g) * kDv + i];
            out.push_back(float(acc));
          }
        }
    return out;
  }
};

void expect_near(const std::vector<float> &a, const std::vector<float> &b,
                 float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol) << "at " << i;
}

class RefAttentionPaged : public ::testing::TestWithParam<int64_t> {};

} // namespace

TEST_P(RefAttentionPaged, PrefixFromCacheEqualsAllInStepAndDecode) {
  const int64_t page_size = GetParam();
  const float scale = 1.f / std::sqrt(float(kDk));
  DenseSeqs d({8, 6});
  PagedSetup cache(2, 2, page_size, 8 / page_size + 1, kHkv, kDk, kDv);
  const int64_t layer = 1;

  // Everything as in-step tokens.
  const std::vector<int32_t> zero = {0, 0}, all = {8, 6};
  StepSetup full(zero, all, cache);
  std::vector<float> out_full(14 * kHeads * kDv);
  const auto q_all = d.gather(d.q, kHeads * kDk, zero, all);
  const auto k_all = d.gather(d.k, kHkv * kDk, zero, all);
  const auto v_all = d.gather(d.v, kHkv * kDv, zero, all);
  hyrt_ref_attention(&cache.kv, &full.step, layer, q_all.data(), k_all.data(),
                     v_all.data(), kHeads, scale, out_full.data());
  expect_near(out_full, d.naive(zero, all, scale), 1e-5f);

  // Prefix chunk, appended to the cache.
  const std::vector<int32_t> pre = {4, 2};
  StepSetup first(zero, pre, cache);
  const auto k_pre = d.gather(d.k, kHkv * kDk, zero, pre);
  const auto v_pre = d.gather(d.v, kHkv * kDv, zero, pre);
  hyrt_ref_kv_cache_append(&cache.kv, &first.step, layer, k_pre.data(),
                           v_pre.data());

  // Extend over the cached prefix.
  const std::vector<int32_t> ext = {3, 3};
  StepSetup second(pre, ext, cache);
  const auto q_ext = d.gather(d.q, kHeads * kDk, pre, ext);
  const auto k_ext = d.gather(d.k, kHkv * kDk, pre, ext);
  const auto v_ext = d.gather(d.v, kHkv * kDv, pre, ext);
  std::vector<float> out_ext(6 * kHeads * kDv);
  hyrt_ref_attention(&cache.kv, &second.step, layer, q_ext.data(),
                     k_ext.data(), v_ext.data(), kHeads, scale,
                     out_ext.data());
  // Same rows as the all-in-step run: seq 0 positions 4..6, seq 1 2..4.
  const int64_t row = kHeads * kDv;
  std::vector<float> want(out_full.begin() + 4 * row,
                          out_full.begin() + 7 * row);
  want.insert(want.end(), out_full.begin() + 10 * row,
              out_full.begin() + 13 * row);
  expect_near(out_ext, want, 1e-5f);

  // paged_attention after appending the extend chunk gives the same.
  hyrt_ref_kv_cache_append(&cache.kv, &second.step, layer, k_ext.data(),
                           v_ext.data());
  std::vector<float> out_paged(out_ext.size());
  hyrt_ref_paged_attention(&cache.kv, &second.step, layer, q_ext.data(),
                           kHeads, scale, out_paged.data());
  expect_near(out_paged, out_ext, 1e-6f);

  // Decode the last token of each sequence.
  const std::vector<int32_t> dec_pre = {7, 5}, one = {1, 1};
  StepSetup dec(dec_pre, one, cache);
  const auto q_dec = d.gather(d.q, kHeads * kDk, dec_pre, one);
  const auto k_dec = d.gather(d.k, kHkv * kDk, dec_pre, one);
  const auto v_dec = d.gather(d.v, kHkv * kDv, dec_pre, one);
  hyrt_ref_kv_cache_append(&cache.kv, &dec.step, layer, k_dec.data(),
                           v_dec.data());
  std::vector<float> out_dec(2 * row), out_dec_ext(2 * row);
  hyrt_ref_paged_attention(&cache.kv, &dec.step, layer, q_dec.data(), kHeads,
                           scale, out_dec.data());
  hyrt_ref_attention(&cache.kv, &dec.step, layer, q_dec.data(), k_dec.data(),
                     v_dec.data(), kHeads, scale, out_dec_ext.data());
  expect_near(out_dec, d.naive(dec_pre, one, scale), 1e-5f);
  expect_near(out_dec, out_dec_ext, 1e-6f);
}

INSTANTIATE_TEST_SUITE_P(PageSizes, RefAttentionPaged,
                         ::testing::Values(int64_t(2), int64_t(4)));

// Rows land where abi.h says: page from the block table, then KV head,
// then slot (head-major pages), for two KV heads.
TEST(RefKvCacheAppend, WritesPageFromBlockTableBitExact) {
  PagedSetup cache(1, 2, 2, 3, 2, 3, 2);
  StepSetup step({0, 3}, {3, 2}, cache); // seq 1 positions 3, 4
  const auto k = random_vec(5 * 2 * 3, 7), v = random_vec(5 * 2 * 2, 8);
  hyrt_ref_kv_cache_append(&cache.kv, &step.step, 0, k.data(), v.data());
  for (int64_t t = 0; t < 5; ++t) {
    const int64_t s = step.token_seq[t], p = step.positions[t];
    const int64_t page = cache.block_tables[s * 3 + p / 2];
    for (int64_t h = 0; h < 2; ++h) {
      const float *krow = &cache.k_pool[0][((page * 2 + h) * 2 + p % 2) * 3];
      const float *vrow = &cache.v_pool[0][((page * 2 + h) * 2 + p % 2) * 2];
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(krow[i], k[(t * 2 + h) * 3 + i]) << "token " << t << " head " << h;
      for (int i = 0; i < 2; ++i)
        EXPECT_EQ(vrow[i], v[(t * 2 + h) * 2 + i]) << "token " << t << " head " << h;
    }
  }
  // K only (v == NULL) leaves v untouched.
  PagedSetup c2(1, 1, 2, 2, 1, 3, 2);
  StepSetup s2({0}, {1}, c2);
  hyrt_ref_kv_cache_append(&c2.kv, &s2.step, 0, k.data(), nullptr);
  for (float x : c2.v_pool[0])
    EXPECT_EQ(x, -7.f);
}

TEST(RefAttention, GqaHeadMapping) {
  // 4 query heads over 2 KV heads: heads 0,1 read KV head 0, heads 2,3 KV
  // head 1. Values are constant per KV head so the output names the head.
  PagedSetup cache(1, 1, 4, 1, 2, 2, 1);
  StepSetup step({0}, {3}, cache);
  const auto q = random_vec(3 * 4 * 2, 9), k = random_vec(3 * 2 * 2, 10);
  std::vector<float> v(3 * 2);
  for (int t = 0; t < 3; ++t) {
    v[t * 2 + 0] = 1.f;
    v[t * 2 + 1] = 2.f;
  }
  std::vector<float> out(3 * 4);
  hyrt_ref_attention(&cache.kv, &step.step, 0, q.data(), k.data(), v.data(),
                     4, 1.f, out.data());
  for (int t = 0; t < 3; ++t) {
    EXPECT_NEAR(out[t * 4 + 0], 1.f, 1e-6);
    EXPECT_NEAR(out[t * 4 + 1], 1.f, 1e-6);
    EXPECT_NEAR(out[t * 4 + 2], 2.f, 1e-6);
    EXPECT_NEAR(out[t * 4 + 3], 2.f, 1e-6);
  }
}

TEST(RefAttention, CausalFirstTokenSeesOnlyItself) {
  PagedSetup cache(1, 1, 2, 2, 1, 2, 2);
  StepSetup step({0}, {3}, cache);
  const auto q = random_vec(3 * 2, 11), k = random_vec(3 * 2, 12),
             v = random_vec(3 * 2, 13);
  std::vector<float> out(3 * 2);
  hyrt_ref_attention(&cache.kv, &step.step, 0, q.data(), k.data(), v.data(),
                     1, 0.5f, out.data());
  EXPECT_FLOAT_EQ(out[0], v[0]);
  EXPECT_FLOAT_EQ(out[1], v[1]);
}

TEST(RefMlaAttention, MatchesExplicitPerHeadKeysAndValues) {
  const int64_t R = 6, rope = 4, H = 3, nope = 5, vd = 4, ps = 2;
  const float scale = 0.3f;
  const std::vector<int32_t> lens = {5, 3}, pre = {2, 1}, ext = {3, 2};
  const auto w_kv_b = random_vec(H * (nope + vd) * R, 21);
  std::vector<std::vector<float>> latent, q_nope, q_pe;
  for (int s = 0; s < 2; ++s) {
    latent.push_back(random_vec(lens[s] * (R + rope), 30 + s));
    q_nope.push_back(random_vec(lens[s] * H * nope, 40 + s));
    q_pe.push_back(random_vec(lens[s] * H * rope, 50 + s));
  }
  auto gather = [&](const std::vector<std::vector<float>> &src, int64_t row,
                    const std::vector<int32_t> &from,
                    const std::vector<int32_t> &n) {
    std::vector<float> out;
    for (int s = 0; s < 2; ++s)
      out.insert(out.end(), src[s].begin() + from[s] * row,
                 src[s].begin() + (from[s] + n[s]) * row);
    return out;
  };

  // Latent cache, filled in two chunks; MLA runs on the second chunk.
  PagedSetup mla(1, 2, ps, 3, 1, R + rope, 0);
  StepSetup a({0, 0}, pre, mla), b(pre, ext, mla);
  const auto lat_a = gather(latent, R + rope, {0, 0}, pre);
  const auto lat_b = gather(latent, R + rope, pre, ext);
  hyrt_ref_kv_cache_append(&mla.kv, &a.step, 0, lat_a.data(), nullptr);
  hyrt_ref_kv_cache_append(&mla.kv, &b.step, 0, lat_b.data(), nullptr);
  const auto qn = gather(q_nope, H * nope, pre, ext);
  const auto qp = gather(q_pe, H * rope, pre, ext);
  std::vector<float> out(5 * H * vd);
  hyrt_ref_mla_attention(&mla.kv, &b.step, 0, qn.data(), qp.data(),
                         w_kv_b.data(), H, nope, rope, vd, R, scale,
                         out.data());

  // Explicit per-head K = [W_k,h c ; k_pe], V = W_v,h c in an ordinary cache
  // with H KV heads, then paged attention with q = [q_nope ; q_pe].
  std::vector<std::vector<float>> kx(2), vx(2), qx(2);
  for (int s = 0; s < 2; ++s)
    for (int p = 0; p < lens[s]; ++p) {
      const float *c = &latent[s][p * (R + rope)];
      for (int64_t h = 0; h < H; ++h) {
        const float *wh = &w_kv_b[h * (nope + vd) * R];
        for (int64_t d = 0; d < nope; ++d) {
          double acc = 0;
          for (int64_t r = 0; r < R; ++r)
            acc += double(wh[d * R + r]) * c[r];
          kx[s].push_back(float(acc));
        }
        for (int64_t d = 0; d < rope; ++d)
          kx[s].push_back(c[R + d]);
        for (int64_t d = 0; d < vd; ++d) {
          double acc = 0;
          for (int64_t r = 0; r < R; ++r)
            acc += double(wh[(nope + d) * R + r]) * c[r];
          vx[s].push_back(float(acc));
        }
        for (int64_t d = 0; d < nope; ++d)
          qx[s].push_back(q_nope[s][(p * H + h) * nope + d]);
        for (int64_t d = 0; d < rope; ++d)
          qx[s].push_back(q_pe[s][(p * H + h) * rope + d]);
      }
    }
  PagedSetup plain(1, 2, ps, 3, H, nope + rope, vd);
  StepSetup all({0, 0}, lens, plain), b2(pre, ext, plain);
  const auto k_all = gather(kx, H * (nope + rope), {0, 0}, lens);
  const auto v_all = gather(vx, H * vd, {0, 0}, lens);
  hyrt_ref_kv_cache_append(&plain.kv, &all.step, 0, k_all.data(),
                           v_all.data());
  const auto q_b = gather(qx, H * (nope + rope), pre, ext);
  std::vector<float> want(out.size());
  hyrt_ref_paged_attention(&plain.kv, &b2.step, 0, q_b.data(), H, scale,
                           want.data());
  expect_near(out, want, 1e-5f);
}
