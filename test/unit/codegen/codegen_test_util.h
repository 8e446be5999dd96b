// Helpers shared by the codegen unit tests: random inputs, guard-page buffers
// (a kernel that reads past A's last row faults), and whether this host can
// execute a kernel's ISA.
#pragma once

#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace hyc::codegen::test {

/// Memory whose end touches an inaccessible page.
class GuardedBuffer {
public:
  explicit GuardedBuffer(size_t bytes);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer &) = delete;
  GuardedBuffer &operator=(const GuardedBuffer &) = delete;
  /// The last `bytes` bytes before the guard page.
  uint8_t *data() { return data_; }

private:
  uint8_t *map_ = nullptr;
  size_t map_bytes_ = 0;
  uint8_t *data_ = nullptr;
};

/// Whether kernels for `isa` can run here. True when CPUID/XCR0 report the
/// ISA; also true when a forked probe executes it although CPUID hides it
/// (hypervisors mask AVX512_BF16 on CPUs that have it). `note` says which.
bool can_run(Isa isa, std::string *note);

/// Uniform floats in [-1, 1).
float uniform(std::mt19937 &rng);

/// n activation or weight scales of a u8 x s8 -> f32 kernel, in
/// [0.01, 0.03) (uniform's draws, in order).
std::vector<float> dequant_scales(std::mt19937 &rng, size_t n);

} // namespace hyc::codegen::test

/// Skips the current test with a message when `isa` cannot run here.
#define HYC_REQUIRE_ISA(isa)                                                   \
  do {                                                                         \
    std::string note_;                                                         \
    if (!::hyc::codegen::test::can_run(isa, &note_))                           \
      GTEST_SKIP() << note_;                                                   \
    if (!note_.empty())                                                        \
      RecordProperty("isa_note", note_);                                       \
  } while (0)
