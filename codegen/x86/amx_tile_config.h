// Internal: what the AMX generators (x86/amx.cpp, x86/amx_grouped.cpp) share:
// the palette-1 tile configuration they embed after their code, one per tile
// shape, and the check that loads one only when it is not already in place.
#pragma once

#include <xbyak/xbyak.h>

#include <array>
#include <cstdint>

namespace hyc::codegen::x86 {

/// The 64-byte operand of ldtilecfg (palette 1).
struct TileConfig {
  std::array<uint8_t, 64> bytes{};
  TileConfig() { bytes[0] = 1; }
  void set(int tile, int rows, int colsb) {
    bytes[16 + 2 * tile] = uint8_t(colsb & 0xFF);
    bytes[16 + 2 * tile + 1] = uint8_t(colsb >> 8);
    bytes[48 + tile] = uint8_t(rows);
  }
};

/// The tile shapes both AMX generators use for m rows: C in tmm0-3 (2x2
/// tiles of 16 x 16 dwords; rows m and m - 16), A in tmm4-5 (`a_colsb`
/// bytes a row), B in tmm6-7 (`b_rows` rows of 64 bytes). The second row
/// of tiles stays unconfigured for m <= 16.
TileConfig tile_config_2x2(int m, int a_colsb, int b_rows);

/// Loads the configuration at `cfg` unless it is the one in place: a thread
/// keeps its tiles configured from call to call and pays ldtilecfg (which
/// also zeroes every tile) only when the shape changes. sttilecfg writes 64
/// zero bytes while no configuration is loaded, which never equals a
/// palette-1 configuration. Uses 64 bytes at [rsp + probe] (64-byte
/// aligned), zmm0, k1 and `tmp`.
void emit_load_tile_config(Xbyak::CodeGenerator &g, Xbyak::Label &cfg, int probe,
                           const Xbyak::Reg64 &tmp);

} // namespace hyc::codegen::x86
