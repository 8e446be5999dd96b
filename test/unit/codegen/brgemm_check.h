// The generic brgemm check: one generated kernel against a plain reference of
// the same op over the same (bf16-rounded / int8) inputs, for every m.
#pragma once

#include "codegen/brgemm.h"

#include <functional>
#include <initializer_list>
#include <string>

namespace hyc::codegen::test {

struct BrgemmCase {
  Isa isa;
  DataType a_type, b_type, c_type;
  int n_block;
  int k;
  bool accumulate;
  Epilogue epilogue;
  int n_valid; ///< columns that exist in W; the rest of the block is padding
  /// Non-temporal C stores (BrgemmDesc::stream_c): C rows then start
  /// 64-byte aligned (ldc a multiple of 16 floats, the buffer aligned).
  bool stream_c = false;
  /// BrgemmPostArgs::k_streams of every call: 2 asks the few-row bodies
  /// that have it for the two-stream loop, 0 for the one-stream loop.
  int64_t k_streams = 0;
};

/// Makes one kernel call for check_brgemm: `call(fn)` calls the entry point
/// fn with the case's operands. A runner calls it inside another execution
/// environment (the AMX runner, amx_trap.h) or on another entry point (a
/// mutated copy of the code); it returns "" or why the call did not
/// complete. Without a runner, check_brgemm calls kernel.fn() directly.
using BrgemmRunner = std::function<std::string(
    const BrgemmKernel &kernel, const std::function<void(BrgemmFn)> &call)>;

/// Generates the kernel and, for every m in 1..m_max, runs it on A placed so
/// its last row ends at a guard page, then checks every C element inside the
/// block against the reference and every element outside against its old
/// value. Reports through gtest EXPECT/ADD_FAILURE.
void check_brgemm(const BrgemmCase &c, const BrgemmRunner &run = {});

/// check_brgemm over every K in ks and N block in n_blocks, zero-init and
/// accumulate, with and without the bias epilogue (f32 C only), with the
/// block's last 5 columns as padding. Stops at the first fatal failure.
void check_brgemm_grid(Isa isa, DataType a, DataType b, DataType c,
                       std::initializer_list<int> ks,
                       std::initializer_list<int> n_blocks,
                       const BrgemmRunner &run = {}, int64_t k_streams = 0);

} // namespace hyc::codegen::test
