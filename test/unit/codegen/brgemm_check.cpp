// Reference check for one brgemm kernel (see brgemm_check.h). Tolerances:
// fp32 accumulation of exact bf16/fp32 products against a double reference,
// 1e-5 of sum |a*b|; int8 exact in int32, and the fp32 dequantization
// recomputed in the kernel's order.
#include "brgemm_check.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"
#include "codegen_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace hyc::codegen::test {

namespace {

PackedB pack_for(const BrgemmCase &c, const std::vector<float> &wf,
                 const std::vector<int8_t> &wq) {
  switch (c.b_type) {
  case DataType::bf16:
    return pack_b_bf16_from_f32(wf.data(), c.n_valid, c.k, c.k);
  case DataType::s8:
    return pack_b_s8(wq.data(), c.n_valid, c.k, c.k);
  default:
    return pack_b_f32(wf.data(), c.n_valid, c.k, c.k);
  }
}

} // namespace

void check_brgemm(const BrgemmCase &c, const BrgemmRunner &run) {
  BrgemmDesc desc = make_brgemm_desc(c.isa, c.a_type, c.b_type, c.c_type, c.k,
                                     c.n_block, c.accumulate, c.epilogue);
  desc.stream_c = c.stream_c;
  BrgemmGenResult gen = generate_brgemm(desc);
  ASSERT_TRUE(gen) << gen.error;
  const BrgemmKernel &kernel = *gen.kernel;
  SCOPED_TRACE(kernel.name() + " n_valid=" + std::to_string(c.n_valid));

  const int M = desc.m_max, K = c.k, NB = c.n_block;
  const bool int8 = c.a_type == DataType::u8;
  // Non-temporal rows start on 64-byte lines; either way C has columns past
  // the block that must keep their values.
  const int lda = K + 3, ldc = c.stream_c ? (NB + 5 + 15) / 16 * 16 : NB + 5;
  std::mt19937 rng(1234 + K * 7 + NB + (c.accumulate ? 1 : 0));

  // Inputs, already rounded to what the kernel sees.
  std::vector<float> af(size_t(M) * K), wf(size_t(c.n_valid) * K, 0.f);
  std::vector<uint8_t> aq(size_t(M) * K);
  std::vector<int8_t> wq(size_t(c.n_valid) * K);
  for (size_t i = 0; i < af.size(); ++i) {
    af[i] = uniform(rng);
    if (c.a_type == DataType::bf16)
      af[i] = bf16_to_f32(f32_to_bf16(af[i]));
    aq[i] = uint8_t(rng() & 0xFF);
  }
  for (size_t i = 0; i < wf.size(); ++i) {
    wf[i] = uniform(rng);
    if (c.b_type == DataType::bf16)
      wf[i] = bf16_to_f32(f32_to_bf16(wf[i]));
    wq[i] = int8_t(int(rng() % 255) - 127);
  }
  const PackedB packed = pack_for(c, wf, wq);
  ASSERT_GE(packed.n_panels * 32, NB);

  std::vector<float> bias(NB);
  for (float &v : bias)
    v = uniform(rng);
  const std::vector<float> a_scale = dequant_scales(rng, size_t(M)),
                           b_scale = dequant_scales(rng, size_t(NB));
  BrgemmPostArgs post;
  post.bias = bias.data();
  post.a_scale = a_scale.data();
  post.b_scale = b_scale.data();
  post.k_streams = c.k_streams;

  const int a_elem = data_type_size(c.a_type);
  for (int m = 1; m <= M; ++m) {
    SCOPED_TRACE("m=" + std::to_string(m));
    // A with its last row's end on a guard page; row padding holds NaN
    // (0xFF bytes for u8), which a kernel reading past K would pick up.
    const size_t a_bytes = (size_t(m - 1) * lda + K) * a_elem;
    GuardedBuffer a_buf(a_bytes);
    std::memset(a_buf.data(), 0xFF, a_bytes);
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < K; ++k) {
        uint8_t *dst = a_buf.data() + (size_t(i) * lda + k) * a_elem;
        const float v = af[size_t(i) * K + k];
        if (c.a_type == DataType::bf16) {
          const uint16_t h = f32_to_bf16(v);
          std::memcpy(dst, &h, 2);
        } else if (c.a_type == DataType::f32) {
          std::memcpy(dst, &v, 4);
        } else {
          *dst = aq[size_t(i) * K + k];
        }
      }

    std::vector<float> cf(size_t(M + 1) * ldc + 16);
    std::vector<int32_t> ci(cf.size());
    for (size_t i = 0; i < cf.size(); ++i) {
      cf[i] = uniform(rng);
      ci[i] = int32_t(rng() % 200001) - 100000;
    }
    const std::vector<float> cf_old = cf;
    const std::vector<int32_t> ci_old = ci;
    // C starts at the first 64-byte boundary of the buffer (16 spare floats).
    const size_t c0 = (64 - reinterpret_cast<uintptr_t>(cf.data()) % 64) % 64 / 4;
    void *c_ptr = c.c_type == DataType::s32 ? static_cast<void *>(ci.data())
                                            : static_cast<void *>(cf.data() + c0);
    const auto call = [&](BrgemmFn fn) {
      fn(a_buf.data(), lda, packed.panel(0), c_ptr, ldc, m, &post);
    };
    if (run) {
      const std::string error = run(kernel, call);
      ASSERT_TRUE(error.empty()) << error;
    } else {
      call(kernel.fn());
    }

    for (int i = 0; i <= M; ++i)
      for (int j = 0; j < ldc; ++j) {
        const size_t at = size_t(i) * ldc + j + (c.c_type == DataType::s32 ? 0 : c0);
        const bool inside = i < m && j < NB;
        if (!inside) {
          if (c.c_type == DataType::s32)
            ASSERT_EQ(ci[at], ci_old[at])
                << "wrote outside at " << i << "," << j;
          else
            ASSERT_EQ(std::memcmp(&cf[at], &cf_old[at], 4), 0)
                << "wrote outside at " << i << "," << j;
          continue;
        }
        if (int8) {
          int64_t s = 0;
          if (j < c.n_valid)
            for (int k = 0; k < K; ++k)
              s += (int64_t(aq[size_t(i) * K + k]) - 128) *
                   wq[size_t(j) * K + k];
          if (c.c_type == DataType::s32) {
            const int64_t want = (c.accumulate ? ci_old[at] : 0) + s;
            ASSERT_EQ(ci[at], want) << "at " << i << "," << j;
            continue;
          }
          float want = float(s);
          want *= b_scale[j];
          want *= a_scale[i];
          if (c.accumulate)
            want += cf_old[at];
          if (c.epilogue == Epilogue::bias)
            want += bias[j];
          ASSERT_NEAR(cf[at], want, 1e-6f * (std::fabs(want) + 1.f))
              << "at " << i << "," << j;
          continue;
        }
        double s = 0, mag = 0;
        if (j < c.n_valid)
          for (int k = 0; k < K; ++k) {
            const double p =
                double(af[size_t(i) * K + k]) * wf[size_t(j) * K + k];
            s += p;
            mag += std::fabs(p);
          }
        if (c.accumulate) {
          s += cf_old[at];
          mag += std::fabs(cf_old[at]);
        }
        if (c.epilogue == Epilogue::bias) {
          s += bias[j];
          mag += std::fabs(bias[j]);
        }
        ASSERT_NEAR(cf[at], s, 1e-5 * mag + 1e-30) << "at " << i << "," << j;
      }
  }
}

void check_brgemm_grid(Isa isa, DataType a, DataType b, DataType c,
                       std::initializer_list<int> ks,
                       std::initializer_list<int> n_blocks,
                       const BrgemmRunner &run, int64_t k_streams) {
  struct Flags {
    bool accumulate;
    Epilogue epilogue;
  };
  constexpr Flags kFlags[] = {{false, Epilogue::none},
                              {true, Epilogue::none},
                              {false, Epilogue::bias},
                              {true, Epilogue::bias}};
  for (int nb : n_blocks)
    for (int k : ks)
      for (const Flags &f : kFlags) {
        if (f.epilogue == Epilogue::bias && c != DataType::f32)
          continue;
        check_brgemm({isa, a, b, c, nb, k, f.accumulate, f.epilogue, nb - 5, false, k_streams},
                     run);
        if (::testing::Test::HasFatalFailure())
          return;
      }
}

} // namespace hyc::codegen::test
