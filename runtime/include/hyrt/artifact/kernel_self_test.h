// hyrt/artifact/kernel_self_test.h - the load-time self-test of a variant's
// generated kernels (docs/artifact.md, "The kernel self-test"): before the
// first step the loader runs each kernel family the library lists in
// hyc_kernels_v0 on a small fixed problem and compares it with a scalar sum
// computed here, so that a variant whose code computes wrongly on this host
// is refused and the next best one runs.
#pragma once

#include "hyrt/abi.h"

#include <string>
#include <vector>

namespace hyrt {

/// What the self-test found for one table.
struct KernelSelfTestResult {
  bool passed = true;
  int families = 0; ///< (isa, types, layout, N block, accumulate, epilogue)
  int kernels = 0;  ///< kernels run: per family, the smallest K of each K mod 64
  int calls = 0;    ///< kernel calls (m = 1, a middle value and m_max each)
  double ms = 0;    ///< wall time, inputs and scalar sums included
  /// The first kernel that failed, and why: "<name> (m=7): C[3][17] = 1.5,
  /// expected 2.25 (largest error 0.75, tolerance 0)"; empty when passed.
  std::string failed_kernel, failure;
  /// Kernels whose family this runtime cannot run (unknown types or
  /// layout, another table version): listed, not run, not a failure.
  std::vector<std::string> untested;
  /// "avx512bf16 bf16bf16f32 (K 64, 172), ...": the families and Ks run.
  std::string ran;
};

/// Runs one kernel per family and K class of `table` for m = 1, a middle
/// value and m_max on deterministic inputs built in the packed B layout,
/// and compares every element of C with a scalar sum over the same bytes
/// (exact where every partial sum is representable in fp32, else within
/// (K + 4) * 2^-24 * sum |a*b|); elements outside the m x n_block block
/// must be left as they were. The host must run every kernel's ISA.
KernelSelfTestResult self_test_kernels(const hyrt_kernel_table_v0 &table);

/// One line for `--verbose`: "passed: 2 kernel families (3 kernels, 9
/// calls) in 1.2 ms: ..." or "FAILED: ...".
std::string describe_self_test(const KernelSelfTestResult &r);

} // namespace hyrt
