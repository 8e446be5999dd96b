// Brgemm descriptor validation, kernel naming and dispatch to the per-ISA
// generators in x86/.
#include "codegen/brgemm.h"

#include "codegen/tiles.h"
#include "codegen/x86/brgemm_jit.h"

#include <sstream>

namespace hyc::codegen {

namespace {

bool is_grouped(BLayout layout) {
  return layout == BLayout::u8_grouped || layout == BLayout::u4_grouped;
}

/// The grouped layouts' own rules (after the table lookup succeeded).
std::string validate_grouped(const BrgemmDesc &d) {
  std::ostringstream err;
  if (d.a_type != DataType::s8 || d.c_type != DataType::f32) {
    err << "grouped " << data_type_name(d.b_type)
        << " kernels take s8 A and f32 C, found A="
        << data_type_name(d.a_type) << " C=" << data_type_name(d.c_type);
    return err.str();
  }
  if (d.n_block != 32) {
    err << "grouped kernels take N block 32, found " << d.n_block;
    return err.str();
  }
  return validate_grouped_format(grouped_format(d), d.k);
}

} // namespace

const char *codebook_name(Codebook c) {
  switch (c) {
  case Codebook::none:
    return "none";
  case Codebook::iq4nl:
    return "iq4nl";
  }
  return "?";
}

bool codebook_from_name(const std::string &name, Codebook *out) {
  for (Codebook c : {Codebook::none, Codebook::iq4nl})
    if (name == codebook_name(c)) {
      *out = c;
      return true;
    }
  return false;
}

GroupedFormat grouped_format(const BrgemmDesc &d) {
  GroupedFormat f;
  f.bits = d.b_type == DataType::u4 ? 4 : 8;
  f.group = d.group;
  f.super_group = d.super_group;
  f.asymmetric = d.asymmetric;
  f.codebook = d.codebook;
  return f;
}

std::string validate_grouped_format(const GroupedFormat &f, int64_t k) {
  std::ostringstream err;
  if (f.bits != 4 && f.bits != 8) {
    err << "grouped weights take 4 or 8 bit codes, found " << f.bits;
  } else if (f.group <= 0 || f.group % 16 != 0) {
    err << "group " << f.group << " must be a positive multiple of 16";
  } else if (f.group > 65536) {
    err << "group " << f.group
        << " exceeds 65536, where a group's int32 sum could overflow";
  } else if (f.super_group < 0 ||
             (f.super_group > 0 && f.super_group % f.group != 0)) {
    err << "super group " << f.super_group
        << " must be 0 (one-level scales) or a positive multiple of group "
        << f.group;
  } else if (f.super_group > 0 && k % f.super_group != 0) {
    err << "super group " << f.super_group << " does not divide K=" << k
        << " (the driver pads K to whole super-blocks)";
  } else if (k % f.group != 0) {
    err << "group " << f.group << " does not divide K=" << k
        << " (the driver pads K to whole groups)";
  } else if (f.codebook != Codebook::none && f.bits != 4) {
    err << "codebook " << codebook_name(f.codebook)
        << " looks up 4-bit codes, found " << f.bits << "-bit codes";
  } else if (f.codebook != Codebook::none && f.asymmetric) {
    err << "codebook " << codebook_name(f.codebook)
        << " weights are symmetric (zero point 128), found asymmetric";
  }
  return err.str();
}

const char *b_layout_name(BLayout layout) {
  switch (layout) {
  case BLayout::f32_k1:
    return "f32_k1";
  case BLayout::bf16_vnni2:
    return "bf16_vnni2";
  case BLayout::s8_vnni4:
    return "s8_vnni4";
  case BLayout::f8_vnni2:
    return "f8_vnni2";
  case BLayout::u8_grouped:
    return "u8_grouped";
  case BLayout::u4_grouped:
    return "u4_grouped";
  }
  return "?";
}

const char *data_type_name(DataType t) {
  switch (t) {
  case DataType::f32:
    return "f32";
  case DataType::bf16:
    return "bf16";
  case DataType::u8:
    return "u8";
  case DataType::s8:
    return "s8";
  case DataType::s32:
    return "s32";
  case DataType::f8:
    return "f8";
  case DataType::u4:
    return "u4";
  }
  return "unknown";
}

int data_type_size(DataType t) {
  switch (t) {
  case DataType::bf16:
    return 2;
  case DataType::u8:
  case DataType::s8:
  case DataType::f8:
  case DataType::u4:
    return 1;
  default:
    return 4;
  }
}

JitCode::JitCode(std::unique_ptr<Xbyak::CodeGenerator> gen, size_t text_size)
    : gen_(std::move(gen)), text_size_(text_size) {}
JitCode::JitCode(JitCode &&) noexcept = default;
JitCode &JitCode::operator=(JitCode &&) noexcept = default;
JitCode::~JitCode() = default;
const uint8_t *JitCode::data() const { return gen_->getCode(); }
size_t JitCode::size() const { return gen_->getSize(); }

BrgemmKernel::BrgemmKernel(const BrgemmDesc &desc, std::string name,
                           JitCode code)
    : desc_(desc), name_(std::move(name)), code_(std::move(code)),
      fn_(code_.entry<BrgemmFn>()) {}

std::string brgemm_name(const BrgemmDesc &d) {
  std::ostringstream os;
  os << "brgemm_" << data_type_name(d.a_type) << data_type_name(d.b_type)
     << data_type_name(d.c_type);
  if (is_grouped(d.b_layout)) {
    os << "_g" << d.group;
    if (d.super_group > 0)
      os << 's' << d.super_group;
    if (d.asymmetric)
      os << 'a';
    if (d.codebook == Codebook::iq4nl)
      os << "_iq4";
  }
  os << '_' << d.m_max << 'x' << d.n_block << 'x'
     << d.k << '_' << isa_name(d.isa);
  if (d.accumulate)
    os << "_acc";
  if (d.epilogue == Epilogue::bias)
    os << "_bias";
  if (d.stream_c)
    os << "_nt";
  return os.str();
}

std::string validate_brgemm(const BrgemmDesc &d) {
  std::ostringstream err;
  const bool grouped_b = d.b_type == DataType::u4 || d.b_type == DataType::u8;
  if (grouped_b && d.a_type != DataType::s8) {
    err << "grouped " << data_type_name(d.b_type)
        << " weights take s8 activations, found A=" << data_type_name(d.a_type);
    return err.str();
  }
  if (grouped_b && d.n_block != 32) {
    err << "grouped kernels take N block 32, found " << d.n_block;
    return err.str();
  }
  const BrgemmTile *tile =
      find_brgemm_tile(d.isa, d.a_type, d.b_type, d.n_block);
  if (!tile && grouped_b) {
    err << "no " << isa_name(d.isa) << " generator for grouped "
        << data_type_name(d.b_type)
        << " weights (avx512_vnni, avx2 and amx have one)";
    return err.str();
  }
  if (!tile) {
    err << "no " << isa_name(d.isa)
        << " generator for A=" << data_type_name(d.a_type)
        << " B=" << data_type_name(d.b_type) << " N block=" << d.n_block
        << " (see codegen/tiles.cpp)";
    return err.str();
  }
  if (d.m_max < 1 || d.m_max > tile->m_max) {
    err << "m_max=" << d.m_max << " outside 1.." << tile->m_max << " for "
        << isa_name(d.isa) << " with N block " << d.n_block;
    return err.str();
  }
  if (d.k < 1) {
    err << "K=" << d.k << " must be positive";
    return err.str();
  }
  if (d.b_layout != b_layout_for(d.b_type)) {
    err << "B layout " << b_layout_name(d.b_layout)
        << " does not match B type " << data_type_name(d.b_type)
        << " (expected " << b_layout_name(b_layout_for(d.b_type)) << ")";
    return err.str();
  }
  if (d.stream_c &&
      ((d.isa != Isa::avx512_bf16 && d.isa != Isa::avx512_vnni &&
        d.isa != Isa::avx512_core) ||
       d.b_type == DataType::f8 || d.c_type != DataType::f32 || d.accumulate ||
       d.epilogue != Epilogue::none)) {
    err << "non-temporal C stores need an AVX-512 kernel (not fp8) writing f32 "
           "C = A.B without accumulation or epilogue, found "
        << isa_name(d.isa) << " " << data_type_name(d.a_type)
        << data_type_name(d.b_type) << data_type_name(d.c_type)
        << (d.accumulate ? " accumulating" : "")
        << (d.epilogue == Epilogue::bias ? " with bias" : "");
    return err.str();
  }
  if (is_grouped(d.b_layout))
    return validate_grouped(d);
  if (d.group != 0 || d.asymmetric || d.super_group != 0 ||
      d.codebook != Codebook::none) {
    err << "group " << d.group << (d.asymmetric ? " (asymmetric)" : "");
    if (d.super_group != 0)
      err << " super group " << d.super_group;
    if (d.codebook != Codebook::none)
      err << " codebook " << codebook_name(d.codebook);
    err << " given for the ungrouped layout " << b_layout_name(d.b_layout);
    return err.str();
  }
  const bool int8 = d.a_type == DataType::u8;
  if (int8 ? (d.c_type != DataType::f32 && d.c_type != DataType::s32)
           : d.c_type != DataType::f32) {
    err << "C type " << data_type_name(d.c_type)
        << " unsupported for A=" << data_type_name(d.a_type) << " (expected f32"
        << (int8 ? " or s32)" : ")");
    return err.str();
  }
  if (d.epilogue == Epilogue::bias && d.c_type != DataType::f32) {
    err << "bias epilogue needs f32 C, found " << data_type_name(d.c_type);
    return err.str();
  }
  if (int8 && d.k > 65536) {
    err << "K=" << d.k
        << " exceeds 65536, where u8 x s8 sums could overflow int32";
    return err.str();
  }
  if (d.b_type == DataType::f8 &&
      (d.k % 128 != 0 || d.accumulate || d.epilogue != Epilogue::none)) {
    err << "bf16 x f8 kernels take K in whole blocks of 128 (found K=" << d.k
        << "), no accumulation and no epilogue (block factors are their scaling)";
    return err.str();
  }
  if (d.isa == Isa::amx) {
    const int unit = int8 ? 4 : 2;
    if (d.k % unit != 0) {
      err << "AMX kernels need K divisible by " << unit << " (whole "
          << (int8 ? "quads" : "pairs") << " of A per row), found K=" << d.k;
      return err.str();
    }
  }
  return {};
}

BrgemmGenResult generate_brgemm(const BrgemmDesc &desc) {
  BrgemmGenResult r;
  r.error = validate_brgemm(desc);
  if (!r.error.empty())
    return r;
  const BrgemmTile &tile =
      *find_brgemm_tile(desc.isa, desc.a_type, desc.b_type, desc.n_block);
  switch (desc.isa) {
  case Isa::avx512_bf16:
    return desc.b_type == DataType::f8 ? x86::generate_avx512_fp8(desc, tile)
                                       : x86::generate_avx512_bf16(desc, tile);
  case Isa::avx512_vnni:
    return is_grouped(desc.b_layout)
               ? x86::generate_avx512_vnni_grouped(desc, tile)
               : x86::generate_avx512_vnni(desc, tile);
  case Isa::avx512_core:
    return desc.b_type == DataType::bf16
               ? x86::generate_avx512_core_bf16(desc, tile)
               : x86::generate_avx512_fp32(desc, tile);
  case Isa::avx2:
    switch (desc.b_type) {
    case DataType::bf16:
      return x86::generate_avx2_bf16(desc, tile);
    case DataType::s8:
      return x86::generate_avx2_u8s8(desc, tile);
    case DataType::u4:
    case DataType::u8:
      return x86::generate_avx2_grouped(desc, tile);
    default:
      return x86::generate_avx2_fp32(desc, tile);
    }
  case Isa::amx:
    return is_grouped(desc.b_layout) ? x86::generate_amx_grouped(desc, tile)
                                     : x86::generate_amx(desc, tile);
  }
  r.error = "unknown ISA";
  return r;
}

JitCode generate_amx_tile_release() { return x86::generate_amx_release_code(); }

} // namespace hyc::codegen
