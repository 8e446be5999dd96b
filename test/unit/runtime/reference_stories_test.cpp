// End-to-end check of the reference kernels, KV cache manager, step builder,
// greedy sampler and llama2.c tokenizer: greedy decoding of the real
// stories260K model must reproduce the sample llama2.c publishes.
#include "hyrt/engine/kv_cache.h"
#include "hyrt/reference.h"
#include "hyrt/engine/sampler.h"
#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace {

const std::string kDir = std::string(HYC_SHARED_DIR) + "/models/stories260K";

/// Weights of a legacy llama2.c checkpoint (shared classifier), read here
/// directly: the test must not depend on models/.
struct Stories {
  int32_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
  std::vector<float> all;
  const float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3,
      *rms_final;

  bool load(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    int32_t hdr[7];
    if (!f.read(reinterpret_cast<char *>(hdr), sizeof(hdr)))
      return false;
    dim = hdr[0], hidden = hdr[1], layers = hdr[2], heads = hdr[3];
    kv_heads = hdr[4], vocab = hdr[5], seq_len = hdr[6];
    const std::string bytes((std::istreambuf_iterator<char>(f)),
                            std::istreambuf_iterator<char>());
    all.resize(bytes.size() / 4);
    std::memcpy(all.data(), bytes.data(), all.size() * 4);
    const int64_t hd = dim / heads, kv_dim = kv_heads * hd;
    const float *p = all.data();
    auto take = [&p](int64_t n) {
      const float *q = p;
      p += n;
      return q;
    };
    emb = take(int64_t(vocab) * dim);
    rms_att = take(int64_t(layers) * dim);
    wq = take(int64_t(layers) * dim * dim);
    wk = take(int64_t(layers) * kv_dim * dim);
    wv = take(int64_t(layers) * kv_dim * dim);
    wo = take(int64_t(layers) * dim * dim);
    rms_ffn = take(int64_t(layers) * dim);
    w1 = take(int64_t(layers) * hidden * dim);
    w2 = take(int64_t(layers) * dim * hidden);
    w3 = take(int64_t(layers) * hidden * dim);
    rms_final = take(dim);
    return vocab > 0 && p <= all.data() + all.size();
  }
};

} // namespace

TEST(ReferenceStories260K, GreedyMatchesPublishedSample) {
  Stories m;
  if (!std::ifstream(kDir + "/stories260K.bin").good())
    GTEST_SKIP() << "shared models not found at " << kDir;
  ASSERT_TRUE(m.load(kDir + "/stories260K.bin"));
  hyrt::TokenizerData td;
  ASSERT_TRUE(hyrt::read_llama2c_tokenizer(kDir + "/tok512.bin", m.vocab, &td)
                  .ok());
  hyrt::Tokenizer tok;
  ASSERT_TRUE(tok.init(td).ok());
  std::ifstream ef(kDir + "/expected-greedy-256.txt");
  std::stringstream ss;
  ss << ef.rdbuf();
  const std::string expected = ss.str();

  const int64_t D = m.dim, H = m.heads, Hkv = m.kv_heads, hd = D / H,
                F = m.hidden, kv_dim = Hkv * hd;
  hyrt::KvCacheConfig cc;
  cc.num_layers = m.layers;
  cc.page_size = 16;
  cc.max_pages_per_seq = m.seq_len / 16;
  cc.num_pages = cc.max_pages_per_seq;
  cc.num_kv_heads = Hkv;
  cc.k_head_dim = hd;
  cc.v_head_dim = hd;
  hyrt::KvCacheManager cache;
  ASSERT_TRUE(cache.init(cc).ok());
  std::vector<float> inv_freq(hd / 2);
  for (int64_t i = 0; i < hd / 2; ++i)
    inv_freq[i] = 1.0f / std::pow(10000.0f, float(2 * i) / float(hd));

  std::vector<float> x(D), xb(D), q(D), k(kv_dim), v(kv_dim), att(D), o(D),
      h1(F), h3(F);
  std::string text;
  int32_t token = tok.bos_id();
  for (int step = 0; step < 256 && text.size() < expected.size(); ++step) {
    hyrt::StepBatch batch;
    ASSERT_TRUE(batch.build(cache, {{0, {token}}}, m.vocab).ok());
    hyrt_step_v0 *s = batch.abi();
    hyrt_ref_embedding(m.emb, m.vocab, D, s->tokens, 1, x.data());
    for (int64_t l = 0; l < m.layers; ++l) {
      hyrt_ref_rms_norm(x.data(), nullptr, m.rms_att + l * D, 1, D, 1e-5f,
                        xb.data(), nullptr);
      hyrt_ref_matmul(xb.data(), m.wq + l * D * D, nullptr, 1, D, D, q.data());
      hyrt_ref_matmul(xb.data(), m.wk + l * kv_dim * D, nullptr, 1, kv_dim, D,
                      k.data());
      hyrt_ref_matmul(xb.data(), m.wv + l * kv_dim * D, nullptr, 1, kv_dim, D,
                      v.data());
      hyrt_ref_rope(q.data(), s->positions, 1, H, hd, hd, 0, inv_freq.data(),
                    1.f, q.data());
      hyrt_ref_rope(k.data(), s->positions, 1, Hkv, hd, hd, 0,
                    inv_freq.data(), 1.f, k.data());
      hyrt_ref_kv_cache_append(cache.view(), s, l, k.data(), v.data());
      hyrt_ref_paged_attention(cache.view(), s, l, q.data(), H,
                               1.f / std::sqrt(float(hd)), att.data());
      hyrt_ref_matmul(att.data(), m.wo + l * D * D, nullptr, 1, D, D,
                      o.data());
      hyrt_ref_add(x.data(), o.data(), D, x.data());
      hyrt_ref_rms_norm(x.data(), nullptr, m.rms_ffn + l * D, 1, D, 1e-5f,
                        xb.data(), nullptr);
      hyrt_ref_matmul(xb.data(), m.w1 + l * F * D, nullptr, 1, F, D,
                      h1.data());
      hyrt_ref_matmul(xb.data(), m.w3 + l * F * D, nullptr, 1, F, D,
                      h3.data());
      hyrt_ref_silu_mul(h1.data(), h3.data(), F, h1.data());
      hyrt_ref_matmul(h1.data(), m.w2 + l * D * F, nullptr, 1, D, F, o.data());
      hyrt_ref_add(x.data(), o.data(), D, x.data());
    }
    hyrt_ref_rms_norm(x.data(), nullptr, m.rms_final, 1, D, 1e-5f, xb.data(),
                      nullptr);
    hyrt_ref_matmul(xb.data(), m.emb, nullptr, 1, m.vocab, D, s->logits);
    ASSERT_TRUE(batch.commit(cache).ok());
    const int32_t next = hyrt::argmax(s->logits, m.vocab);
    if (next == tok.bos_id())
      break;
    text += tok.decode(token, next);
    token = next;
  }
  EXPECT_EQ(text, expected.substr(0, text.size()));
  EXPECT_GE(text.size() + 1, expected.size()) << text;
}
