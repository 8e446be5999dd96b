// The emulated tile machine (see amx_tile_machine.h). Semantics follow the
// Operation sections of the Intel SDM (LDTILECFG, STTILECFG, TILERELEASE,
// TILEZERO, TILELOADD[T1], TILESTORED, TDPBF16PS, TDPB[SU][SU]D) and the
// exception classes AMX-E1..E5; where the SDM's wording leaves a case open
// the machine refuses it (comments say which), so a kernel relying on it
// fails here rather than on hardware.
#include "amx_tile_machine.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace hyc::codegen::test {

namespace {

const char *const kGprNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp",
                                   "rsi", "rdi", "r8",  "r9",  "r10", "r11",
                                   "r12", "r13", "r14", "r15"};

// TDPBF16PS runs its FMAs with DAZ = FTZ = 1 and round-to-nearest-even,
// whatever MXCSR says; the flushes are explicit here and the handler's
// MXCSR is the default one (RNE).
float daz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.f, x) : x;
}
float ftz(float x) { return daz(x); }

float bf16_at(const uint8_t *p) {
  uint32_t bits = uint32_t(p[0] | (p[1] << 8)) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return daz(f);
}

int32_t byte_value(uint8_t b, bool is_signed) {
  return is_signed ? int32_t(int8_t(b)) : int32_t(b);
}

} // namespace

const char *amx_op_name(AmxOp op) {
  static const char *const kNames[kAmxOpCount] = {
      "ldtilecfg", "sttilecfg",   "tilerelease", "tilezero",
      "tileloadd", "tileloaddt1", "tilestored",  "tdpbf16ps",
      "tdpbssd",   "tdpbsud",     "tdpbusd",     "tdpbuud"};
  return kNames[int(op)];
}

/// One decoded instruction.
struct TileMachine::Decoded {
  AmxOp op;
  int length = 0;
  int reg = 0;  // ModRM.reg: the tile of loads, stores, tilezero, tdp dest
  int rm = 0;   // ModRM.rm: tdp's first source (A)
  int vvvv = 0; // VEX.vvvv: tdp's second source (B)
  // Memory operand: base + (index << scale) + disp.
  uint64_t base_disp = 0; // base + disp (RIP-relative: next RIP + disp)
  uint64_t stride = 0;    // index << scale; 0 without an index
};

int TileMachine::fail(const char *exception, const char *fmt, ...) {
  char why[224];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(why, sizeof(why), fmt, args);
  va_end(args);
  std::snprintf(fault_, sizeof(fault_), "%s%s%s: %s", exception,
                *exception ? " in " : "", current_, why);
  return 0;
}

int TileMachine::step(const uint8_t *p, const AmxCpuView &cpu) {
  fault_[0] = '\0';
  std::snprintf(current_, sizeof(current_),
                "the instruction %02x %02x %02x %02x %02x at 0x%llx", p[0],
                p[1], p[2], p[3], p[4], (unsigned long long)cpu.rip);
  // Every AMX instruction is VEX map 0F38, which only the 3-byte form
  // (C4) encodes. Prefixes before VEX are #UD for VEX instructions.
  if (p[0] != 0xC4 || (p[1] & 0x1F) != 2)
    return fail("", "not an AMX instruction (the emulator only knows AMX)");
  const uint8_t b1 = p[1], b2 = p[2], opcode = p[3], modrm = p[4];
  const int vex_r = !(b1 & 0x80), vex_x = !(b1 & 0x40), vex_b = !(b1 & 0x20);
  const bool vex_w = b2 & 0x80, vex_l = b2 & 0x04;
  const int vvvv = (~b2 >> 3) & 0xF, pp = b2 & 3;
  const int mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
  const bool regform = mod == 3;

  Decoded d;
  bool known = true;
  switch (opcode) {
  case 0x49:
    if (pp == 0 && regform && reg == 0 && rm == 0)
      d.op = AmxOp::tilerelease;
    else if (pp == 0 && !regform && reg == 0)
      d.op = AmxOp::ldtilecfg;
    else if (pp == 1 && !regform && reg == 0)
      d.op = AmxOp::sttilecfg;
    else if (pp == 3 && regform && rm == 0)
      d.op = AmxOp::tilezero;
    else
      known = false;
    break;
  case 0x4B:
    if (regform || pp == 0)
      known = false;
    else
      d.op = pp == 3   ? AmxOp::tileloadd
             : pp == 1 ? AmxOp::tileloaddt1
                       : AmxOp::tilestored;
    break;
  case 0x5C:
    known = regform && pp == 2;
    d.op = AmxOp::tdpbf16ps;
    break;
  case 0x5E: {
    static const AmxOp kByPp[4] = {AmxOp::tdpbuud, AmxOp::tdpbusd,
                                   AmxOp::tdpbsud, AmxOp::tdpbssd};
    known = regform;
    d.op = kByPp[pp];
    break;
  }
  default:
    known = false;
  }
  if (!known)
    return fail("",
                "VEX.0F38 opcode 0x%02x (pp=%d, ModRM 0x%02x) is no AMX "
                "instruction the emulator knows",
                opcode, pp, modrm);
  d.reg = reg;
  d.rm = rm;
  d.vvvv = vvvv;

  // Memory operand.
  int len = 5;
  bool has_sib = false;
  char operand[64] = "";
  if (!regform) {
    int base_reg = -1, index_reg = -1, scale = 0;
    bool rip_relative = false, disp32 = mod == 2;
    if (rm == 4) {
      const uint8_t sib = p[5];
      len = 6;
      has_sib = true;
      scale = sib >> 6;
      const int index = ((sib >> 3) & 7) | (vex_x << 3);
      if (index != 4) // rsp cannot be an index: "no index"
        index_reg = index;
      if ((sib & 7) == 5 && mod == 0)
        disp32 = true; // no base
      else
        base_reg = (sib & 7) | (vex_b << 3);
    } else if (mod == 0 && rm == 5) {
      rip_relative = disp32 = true;
    } else {
      base_reg = rm | (vex_b << 3);
    }
    int64_t disp = 0;
    if (mod == 1) {
      disp = int8_t(p[len]);
      len += 1;
    } else if (disp32) {
      int32_t v;
      std::memcpy(&v, p + len, 4);
      disp = v;
      len += 4;
    }
    d.base_disp = uint64_t(disp) + (rip_relative    ? cpu.rip + len
                                    : base_reg >= 0 ? cpu.gpr[base_reg]
                                                    : 0);
    d.stride = index_reg >= 0 ? cpu.gpr[index_reg] << scale : 0;
    int at = std::snprintf(operand, sizeof(operand), "[%s",
                           rip_relative    ? "rip"
                           : base_reg >= 0 ? kGprNames[base_reg]
                                           : "");
    if (index_reg >= 0)
      at += std::snprintf(operand + at, sizeof(operand) - at, "+%s*%d",
                          kGprNames[index_reg], 1 << scale);
    if (disp)
      at += std::snprintf(operand + at, sizeof(operand) - at, "%s0x%llx",
                          disp < 0 ? "-" : "+",
                          (unsigned long long)(disp < 0 ? -disp : disp));
    std::snprintf(operand + at, sizeof(operand) - at, "]");
  }
  d.length = len;

  const char *name = amx_op_name(d.op);
  switch (d.op) {
  case AmxOp::ldtilecfg:
  case AmxOp::sttilecfg:
    std::snprintf(current_, sizeof(current_), "%s %s", name, operand);
    break;
  case AmxOp::tilerelease:
    std::snprintf(current_, sizeof(current_), "%s", name);
    break;
  case AmxOp::tilezero:
    std::snprintf(current_, sizeof(current_), "%s tmm%d", name, reg);
    break;
  case AmxOp::tileloadd:
  case AmxOp::tileloaddt1:
    std::snprintf(current_, sizeof(current_), "%s tmm%d, %s", name, reg,
                  operand);
    break;
  case AmxOp::tilestored:
    std::snprintf(current_, sizeof(current_), "%s %s, tmm%d", name, operand,
                  reg);
    break;
  default:
    std::snprintf(current_, sizeof(current_), "%s tmm%d, tmm%d, tmm%d", name,
                  reg, rm, vvvv);
  }
  std::snprintf(current_ + std::strlen(current_),
                sizeof(current_) - std::strlen(current_), " at 0x%llx",
                (unsigned long long)cpu.rip);

  // Encoding checks every AMX instruction shares.
  if (vex_w || vex_l)
    return fail("#UD", "VEX.W and VEX.L must be 0");
  const bool tdp = d.op >= AmxOp::tdpbf16ps;
  if (!tdp && vvvv != 0)
    return fail("#UD", "VEX.vvvv must be 1111b");
  const bool names_tile = d.op != AmxOp::ldtilecfg &&
                          d.op != AmxOp::sttilecfg &&
                          d.op != AmxOp::tilerelease;
  // Palette 1 has tmm0-7: an extension bit naming tmm8+ is refused.
  if (names_tile && vex_r)
    return fail("#UD", "VEX.R names a tile above tmm7");
  if (tdp && (vex_b || vvvv > 7))
    return fail("#UD", "VEX.B or VEX.vvvv names a tile above tmm7");
  const bool sibmem = d.op == AmxOp::tileloadd || d.op == AmxOp::tileloaddt1 ||
                      d.op == AmxOp::tilestored;
  if (sibmem && !has_sib)
    return fail("#UD", "the memory operand needs a SIB byte (the index "
                       "register is the row stride)");

  switch (d.op) {
  case AmxOp::ldtilecfg: {
    uint8_t mem[64];
    std::memcpy(mem, reinterpret_cast<const void *>(d.base_disp), 64);
    load_config(mem);
    if (fault_[0])
      return 0;
    break;
  }
  case AmxOp::sttilecfg:
    store_config(reinterpret_cast<uint8_t *>(d.base_disp));
    break;
  case AmxOp::tilerelease:
    release();
    break;
  case AmxOp::tilezero:
    if (!configured_)
      return fail("#UD", "no tile configuration is loaded");
    tiles_[reg].fill(0);
    start_row_ = 0;
    break;
  case AmxOp::tileloadd:
  case AmxOp::tileloaddt1:
  case AmxOp::tilestored: {
    if (!configured_)
      return fail("#UD", "no tile configuration is loaded");
    // The SDM's load and store loops run over the tile's configured rows;
    // a tile the configuration leaves out (rows = colsb = 0) is refused
    // here, where a CPU would move nothing.
    if (!valid(reg))
      return fail("#UD", "tmm%d is not configured (rows = colsb = 0)", reg);
    const int nbytes = colsb_[reg];
    uint8_t *tile = tiles_[reg].data();
    for (int r = start_row_; r < rows_[reg]; ++r) {
      auto *mem = reinterpret_cast<uint8_t *>(d.base_disp + r * d.stride);
      uint8_t *row = tile + r * kAmxBytesPerRow;
      if (d.op == AmxOp::tilestored) {
        std::memcpy(mem, row, nbytes);
      } else {
        std::memcpy(row, mem, nbytes);
        std::memset(row + nbytes, 0, kAmxBytesPerRow - nbytes);
      }
    }
    if (d.op != AmxOp::tilestored)
      std::memset(tile + rows_[reg] * kAmxBytesPerRow, 0,
                  (kAmxMaxRows - rows_[reg]) * kAmxBytesPerRow);
    start_row_ = 0;
    break;
  }
  default:
    if (!dot_product(d))
      return 0;
  }
  ++counts_[int(d.op)];
  return d.length;
}

void TileMachine::load_config(const uint8_t *mem) {
  const int palette = mem[0];
  if (palette > 1) {
    fail("#GP", "palette %d (this machine has palette 1; 0 releases)", palette);
    return;
  }
  if (palette == 0) { // the init state, as TILERELEASE leaves it
    release();
    return;
  }
  for (int i = 2; i < 16; ++i)
    if (mem[i]) {
      fail("#GP", "reserved byte %d of the configuration is 0x%02x", i, mem[i]);
      return;
    }
  std::array<uint16_t, kAmxTiles> colsb;
  std::array<uint8_t, kAmxTiles> rows;
  for (int t = 0; t < kAmxTiles; ++t) {
    colsb[t] = uint16_t(mem[16 + 2 * t] | (mem[17 + 2 * t] << 8));
    rows[t] = mem[48 + t];
    if (colsb[t] > kAmxBytesPerRow) {
      fail("#GP", "tmm%d colsb=%d exceeds %d bytes per row", t, colsb[t],
           kAmxBytesPerRow);
      return;
    }
    if (rows[t] > kAmxMaxRows) {
      fail("#GP", "tmm%d rows=%d exceeds %d", t, rows[t], kAmxMaxRows);
      return;
    }
    if ((rows[t] == 0) != (colsb[t] == 0)) {
      fail("#GP", "tmm%d has rows=%d but colsb=%d (both or neither are 0)", t,
           rows[t], colsb[t]);
      return;
    }
  }
  for (int i = 32; i < 48; ++i) // colsb of tiles 8-15, absent in palette 1
    if (mem[i]) {
      fail("#GP", "byte %d (colsb of a tile palette 1 lacks) is 0x%02x", i,
           mem[i]);
      return;
    }
  for (int i = 56; i < 64; ++i)
    if (mem[i]) {
      fail("#GP", "byte %d (rows of a tile palette 1 lacks) is 0x%02x", i,
           mem[i]);
      return;
    }
  for (auto &t : tiles_)
    t.fill(0);
  configured_ = true;
  start_row_ = mem[1];
  colsb_ = colsb;
  rows_ = rows;
}

void TileMachine::store_config(uint8_t *mem) const {
  uint8_t out[64] = {};
  if (configured_) {
    out[0] = 1;
    out[1] = start_row_;
    for (int t = 0; t < kAmxTiles; ++t) {
      out[16 + 2 * t] = uint8_t(colsb_[t]);
      out[17 + 2 * t] = uint8_t(colsb_[t] >> 8);
      out[48 + t] = rows_[t];
    }
  }
  std::memcpy(mem, out, 64);
}

void TileMachine::release() {
  for (auto &t : tiles_)
    t.fill(0);
  configured_ = false;
  start_row_ = 0;
  colsb_ = {};
  rows_ = {};
}

int TileMachine::dot_product(const Decoded &d) {
  const int c = d.reg, a = d.rm, b = d.vvvv;
  if (!configured_)
    return fail("#UD", "no tile configuration is loaded");
  if (c == a || c == b || a == b)
    return fail("#UD", "the three tile operands must differ");
  for (int t : {c, a, b})
    if (!valid(t))
      return fail("#UD", "tmm%d is not configured (rows = colsb = 0)", t);
  for (int t : {c, a, b})
    if (colsb_[t] % 4)
      return fail("#UD", "tmm%d colsb=%d is not a whole number of dwords", t,
                  colsb_[t]);
  if (rows_[c] != rows_[a])
    return fail("#UD", "M mismatch: tmm%d has %d rows, A tmm%d has %d", c,
                rows_[c], a, rows_[a]);
  if (colsb_[a] / 4 != rows_[b])
    return fail("#UD",
                "K mismatch: A tmm%d has %d dwords per row, B tmm%d "
                "has %d rows",
                a, colsb_[a] / 4, b, rows_[b]);
  if (colsb_[c] != colsb_[b])
    return fail("#UD", "N mismatch: tmm%d colsb=%d, B tmm%d colsb=%d", c,
                colsb_[c], b, colsb_[b]);

  const int n_count = colsb_[c] / 4, k_count = colsb_[a] / 4;
  uint8_t *ct = tiles_[c].data();
  const uint8_t *at = tiles_[a].data(), *bt = tiles_[b].data();
  for (int m = 0; m < rows_[c]; ++m) {
    uint8_t *crow = ct + m * kAmxBytesPerRow;
    const uint8_t *arow = at + m * kAmxBytesPerRow;
    if (d.op == AmxOp::tdpbf16ps) {
      // SDM: per output, one fp32 accumulator for the even and one for the
      // odd products (temp1, FMA with DAZ/FTZ/RNE over k); then their sum,
      // then that sum added to the destination element.
      float temp[2 * (kAmxBytesPerRow / 4)] = {};
      for (int k = 0; k < k_count; ++k) {
        const uint8_t *brow = bt + k * kAmxBytesPerRow;
        for (int n = 0; n < n_count; ++n)
          for (int i = 0; i < 2; ++i) {
            float &acc = temp[2 * n + i];
            acc = ftz(std::fma(bf16_at(arow + 4 * k + 2 * i),
                               bf16_at(brow + 4 * n + 2 * i), daz(acc)));
          }
      }
      for (int n = 0; n < n_count; ++n) {
        float dst;
        std::memcpy(&dst, crow + 4 * n, 4);
        const float pair = ftz(daz(temp[2 * n]) + daz(temp[2 * n + 1]));
        dst = ftz(daz(dst) + pair);
        std::memcpy(crow + 4 * n, &dst, 4);
      }
    } else {
      const bool a_signed = d.op == AmxOp::tdpbssd || d.op == AmxOp::tdpbsud;
      const bool b_signed = d.op == AmxOp::tdpbssd || d.op == AmxOp::tdpbusd;
      for (int n = 0; n < n_count; ++n) {
        uint32_t acc; // dword arithmetic wraps modulo 2^32
        std::memcpy(&acc, crow + 4 * n, 4);
        for (int k = 0; k < k_count; ++k) {
          const uint8_t *bq = bt + k * kAmxBytesPerRow + 4 * n;
          const uint8_t *aq = arow + 4 * k;
          int32_t sum = 0; // four products fit easily
          for (int i = 0; i < 4; ++i)
            sum += byte_value(aq[i], a_signed) * byte_value(bq[i], b_signed);
          acc += uint32_t(sum);
        }
        std::memcpy(crow + 4 * n, &acc, 4);
      }
    }
    std::memset(crow + colsb_[c], 0, kAmxBytesPerRow - colsb_[c]);
  }
  std::memset(ct + rows_[c] * kAmxBytesPerRow, 0,
              (kAmxMaxRows - rows_[c]) * kAmxBytesPerRow);
  start_row_ = 0;
  return 1;
}

} // namespace hyc::codegen::test
