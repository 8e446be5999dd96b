// The generic brgemm check: one generated kernel against a plain reference of
// the same op over the same (bf16-rounded / int8) inputs, for every m.
#pragma once

#include "codegen/brgemm.h"

namespace hyc::codegen::test {

struct BrgemmCase {
  Isa isa;
  DataType a_type, b_type, c_type;
  int n_block;
  int k;
  bool accumulate;
  Epilogue epilogue;
  int n_valid; ///< columns that exist in W; the rest of the block is padding
};

/// Generates the kernel and, for every m in 1..m_max, runs it on A placed so
/// its last row ends at a guard page, then checks every C element inside the
/// block against the reference and every element outside against its old
/// value. Reports through gtest EXPECT/ADD_FAILURE.
void check_brgemm(const BrgemmCase &c);

} // namespace hyc::codegen::test
