// Shared by the grouped integer kernel tests (brgemm_grouped_test.cpp,
// brgemm_grouped_two_level_test.cpp): one panel's weights in every grouped
// format, the test's own unpacker of packed panels, random and extreme
// problems, the scalar reference that follows brgemm.h's order with
// std::fma, and the bit-exact kernel check.
#pragma once

#include "codegen/brgemm.h"
#include "codegen/pack.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hyc::codegen::test {

constexpr int kGroupedCols = 32;

/// A grouped format from its parts.
GroupedFormat grouped(int bits, int64_t group, int64_t super_group = 0,
                      bool asymmetric = false,
                      Codebook codebook = Codebook::none);

/// Weights of `cols` columns in the form the packers take: codes [cols][k]
/// (code book indices with a code book) and the format's scale parts.
struct GroupedWeights {
  GroupedFormat f;
  int k = 0, cols = 0;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, mins; ///< one-level: [cols][k/group] fp16
  std::vector<int8_t> sc;             ///< two-level: [cols][k/group]
  std::vector<uint8_t> m;             ///< two-level: [cols][k/group]
  std::vector<uint16_t> d, dmin;      ///< two-level: [cols][k/super] fp16

  GroupedWeights(const GroupedFormat &format, int k, int cols);
  int groups() const { return k / int(f.group); }
  int supers() const { return f.super_group > 0 ? k / int(f.super_group) : 0; }
  bool two_level() const { return f.super_group > 0; }
  /// 8 or 128 when symmetric (128 with a code book), 0 when asymmetric.
  int zero_point() const;
  /// What padding columns hold (pack.h): the zero point, or 0 where no
  /// code has it.
  int padding_code() const;
  /// The code as the kernel multiplies it (looked up in the code book).
  int value(int n, int kk) const;
  /// scale_g[n] and min_g[n] as brgemm.h defines them.
  float scale(int n, int g) const;
  float min(int n, int g) const;
};

/// Packs the first n_valid columns of w with the packer of its format.
PackedB pack_weights(const GroupedWeights &w, int n_valid);
/// The test's own reading of one packed panel (32 columns).
GroupedWeights unpack_panel(const PackedB &p, int64_t panel);

/// One panel's problem: weights (padding columns beyond n_valid hold what
/// the packer puts there), s8 A with per-token scales (two-level formats:
/// per-group scales, brgemm.h) and per-group sums.
struct Problem {
  GroupedWeights w;
  int n_valid, rows;
  std::vector<int8_t> a;
  std::vector<int32_t> a_sum;           ///< [rows][groups]
  std::vector<float> a_scale;           ///< [rows], one-level formats
  std::vector<float> a_group_scale;     ///< [rows][groups], two-level ones
  std::vector<float> bias, c_old;
  int k() const { return w.k; }
  /// post->a_sum as the kernel reads it: the sums, or {sum, scale} pairs.
  std::vector<int32_t> post_sums(int rows) const;
};

enum class Fill { random, extremes };

/// Random weights and activations; `extremes` puts codes at 0 and their
/// top, sub-scales at -128/127/-32/31, sub-mins at 0/63/255 and
/// activations at 127/-128.
Problem make_problem(const GroupedFormat &f, int k, int rows, int n_valid,
                     Fill fill, uint32_t seed);

/// brgemm.h's order, element by element, with std::fma for every fused op.
float reference(const Problem &p, int m, int n, bool accumulate, bool bias);

/// Runs one kernel call: directly when empty, else through an AMX runner
/// (amx_trap.h: natively or on the emulated tile machine). Returns "" when
/// the call completed, else what stopped it.
using KernelRun = std::function<std::string(const std::function<void()> &)>;

/// Runs the kernel for every m in 1..m_max with A ending at a guard page
/// and C inside a wider buffer; every element must equal the reference's
/// bits (padding columns: exactly the epilogue of 0), every element outside
/// the block must keep its sentinel.
void check_kernel(Isa isa, const Problem &p, bool accumulate, bool bias,
                  const KernelRun &run = {});

} // namespace hyc::codegen::test
