// An emulated AMX tile machine (palette 1: 8 tiles of 16 rows x 64 bytes).
// It decodes one VEX-encoded AMX instruction at a time and executes it as the
// Intel SDM's pseudocode describes, reading the caller's general registers
// and memory; what a CPU would refuse (#UD, #GP) becomes a fault message.
// Test support only: amx_trap.h runs generated kernels on it.
#pragma once

#include <array>
#include <cstdint>

namespace hyc::codegen::test {

/// Palette 1: tiles, rows per tile, bytes per row.
inline constexpr int kAmxTiles = 8;
inline constexpr int kAmxMaxRows = 16;
inline constexpr int kAmxBytesPerRow = 64;

/// The instructions the machine executes.
enum class AmxOp {
  ldtilecfg,
  sttilecfg,
  tilerelease,
  tilezero,
  tileloadd,
  tileloaddt1,
  tilestored,
  tdpbf16ps,
  tdpbssd,
  tdpbsud,
  tdpbusd,
  tdpbuud,
};
inline constexpr int kAmxOpCount = int(AmxOp::tdpbuud) + 1;

/// The instruction's mnemonic.
const char *amx_op_name(AmxOp op);

/// What an instruction can read of the CPU: the 16 general registers in
/// encoding order (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15) and its
/// own address (for RIP-relative operands).
struct AmxCpuView {
  uint64_t gpr[16] = {};
  uint64_t rip = 0;
};

/// Tile registers and tile configuration of one thread.
class TileMachine {
public:
  /// Decodes and executes the instruction at `code`. Returns its length in
  /// bytes, or 0 when it did not execute: fault() then says which exception
  /// a CPU would raise and why (or that the bytes are no AMX instruction).
  /// Memory operands are accessed directly; the caller catches faults.
  int step(const uint8_t *code, const AmxCpuView &cpu);

  /// Why the last step() returned 0 ("" after a successful step).
  const char *fault() const { return fault_; }
  /// The instruction step() is executing or last executed, e.g.
  /// "tileloadd tmm6, [r15+r14*1+0x40]", for reports of memory faults.
  const char *current() const { return current_; }

  /// TILES_CONFIGURED: a palette-1 configuration is loaded.
  bool configured() const { return configured_; }
  int rows(int tile) const { return rows_[tile]; }
  int colsb(int tile) const { return colsb_[tile]; }
  /// Row `row` of tile `tile`: 64 bytes.
  const uint8_t *row(int tile, int row) const {
    return tiles_[tile].data() + row * kAmxBytesPerRow;
  }
  /// How many times `op` executed since construction or reset_counts().
  uint64_t executed(AmxOp op) const { return counts_[int(op)]; }
  void reset_counts() { counts_ = {}; }

private:
  struct Decoded;
  int fail(const char *exception, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
  bool valid(int tile) const { return configured_ && rows_[tile] != 0; }
  void load_config(const uint8_t *mem);
  void store_config(uint8_t *mem) const;
  void release();
  int dot_product(const Decoded &d);

  std::array<std::array<uint8_t, kAmxMaxRows * kAmxBytesPerRow>, kAmxTiles>
      tiles_{};
  bool configured_ = false;
  uint8_t start_row_ = 0;
  std::array<uint16_t, kAmxTiles> colsb_{};
  std::array<uint8_t, kAmxTiles> rows_{};
  std::array<uint64_t, kAmxOpCount> counts_{};
  char fault_[320] = {};
  char current_[96] = {};
};

} // namespace hyc::codegen::test
