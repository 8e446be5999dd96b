// Runs code that uses AMX on any AVX-512 host: natively where the CPU and OS
// allow AMX; elsewhere every AMX instruction raises SIGILL (#UD, or #NM
// without Linux's tile permission) and a handler, installed only for the
// call, executes it on an emulated TileMachine (amx_tile_machine.h) and
// resumes after it. Test support only.
#pragma once

#include "amx_tile_machine.h"

#include <cstdint>
#include <functional>
#include <string>

namespace hyc::codegen::test {

/// How AMX code runs here.
enum class AmxWay {
  native,      ///< the CPU executes it (AMX-TILE/BF16/INT8 and permission)
  emulated,    ///< AMX instructions trap into the emulated tile machine
  unavailable, ///< no AVX-512: the kernels' other instructions cannot run
};

/// One thread's AMX context: run() executes calls on it. The tile state
/// (configuration and tiles) persists from call to call, as a thread's does.
class AmxRunner {
public:
  AmxRunner();

  AmxWay way() const { return way_; }
  /// One line saying which way and why (for test logs and skip messages).
  const std::string &why() const { return why_; }

  /// Runs call() (way() must not be unavailable). Returns "" when it
  /// completed, else what stopped it: an instruction a CPU would refuse
  /// (#UD, #GP, naming the instruction and why), a memory fault in an
  /// emulated access, a fault or unknown instruction in the native code.
  /// The call is abandoned at that point (siglongjmp), so it must not own
  /// objects with destructors.
  std::string run(const std::function<void()> &call);

  /// The emulated machine (meaningful when way() is emulated).
  TileMachine &machine() { return machine_; }
  /// Instructions emulated by run() so far.
  uint64_t trapped() const { return trapped_; }

private:
  AmxWay way_;
  std::string why_;
  TileMachine machine_;
  uint64_t trapped_ = 0;
};

/// A call runner that sends every call through `amx` (for checks that take
/// one, e.g. grouped_test_util.h's check_kernel).
inline std::function<std::string(const std::function<void()> &)>
through_amx(AmxRunner &amx) {
  return [&amx](const std::function<void()> &call) { return amx.run(call); };
}

/// Says (in the test log) which way the kernels ran.
void report_amx(const AmxRunner &amx);

} // namespace hyc::codegen::test

/// Skips the current test with the reason when AMX code cannot run here, and
/// records which way it runs.
#define HYC_REQUIRE_AMX_RUNNER(runner)                                         \
  do {                                                                         \
    if ((runner).way() == ::hyc::codegen::test::AmxWay::unavailable)           \
      GTEST_SKIP() << (runner).why();                                          \
    RecordProperty("amx_way", (runner).why());                                 \
  } while (0)

/// As HYC_REQUIRE_AMX_RUNNER, for checks of the emulator itself (skipped
/// where AMX runs natively).
#define HYC_REQUIRE_EMULATED_AMX(runner)                                       \
  do {                                                                         \
    HYC_REQUIRE_AMX_RUNNER(runner);                                            \
    if ((runner).way() != ::hyc::codegen::test::AmxWay::emulated)              \
      GTEST_SKIP() << "checks the emulator itself; here " << (runner).why();   \
  } while (0)
