// Trap-and-emulate for AMX (see amx_trap.h). The SIGILL handler decodes the
// faulting instruction at the context's RIP, executes it on the runner's
// TileMachine with the context's general registers, and advances RIP by its
// length. Failures leave the call through siglongjmp to run(). The handler
// formats messages with snprintf: the interrupted code is generated kernel
// code, which holds no lock snprintf could need.
#include "amx_trap.h"

#include "codegen/cpu_isa.h"

#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ucontext.h>

namespace hyc::codegen::test {

namespace {

/// The run in progress: signal handlers cannot take arguments, so one
/// process-wide slot (runs do not nest and happen on one thread).
struct ActiveRun {
  TileMachine *machine = nullptr;
  uint64_t *trapped = nullptr;
  sigjmp_buf exit;
  volatile sig_atomic_t in_emulation = 0;
  char error[512] = {};
};
ActiveRun *g_run = nullptr;

// ucontext's registers in x86 encoding order.
constexpr int kGregOf[16] = {
    REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
    REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

void on_sigill(int, siginfo_t *, void *context) {
  auto *uc = static_cast<ucontext_t *>(context);
  greg_t *g = uc->uc_mcontext.gregs;
  AmxCpuView cpu;
  for (int i = 0; i < 16; ++i)
    cpu.gpr[i] = uint64_t(g[kGregOf[i]]);
  cpu.rip = uint64_t(g[REG_RIP]);
  g_run->in_emulation = 1;
  const int length =
      g_run->machine->step(reinterpret_cast<const uint8_t *>(cpu.rip), cpu);
  g_run->in_emulation = 0;
  if (length == 0) {
    std::snprintf(g_run->error, sizeof(g_run->error), "SIGILL: %s",
                  g_run->machine->fault());
    siglongjmp(g_run->exit, 1);
  }
  ++*g_run->trapped;
  g[REG_RIP] += length;
}

void on_fault(int sig, siginfo_t *info, void *context) {
  auto *uc = static_cast<ucontext_t *>(context);
  const char *name = sig == SIGSEGV ? "SIGSEGV" : "SIGBUS";
  if (g_run->in_emulation)
    std::snprintf(g_run->error, sizeof(g_run->error),
                  "%s: memory fault at address %p during %s", name,
                  info->si_addr, g_run->machine->current());
  else
    std::snprintf(g_run->error, sizeof(g_run->error),
                  "%s: native code at 0x%llx faulted at address %p", name,
                  (unsigned long long)uc->uc_mcontext.gregs[REG_RIP],
                  info->si_addr);
  g_run->in_emulation = 0;
  siglongjmp(g_run->exit, 1);
}

/// Installs the handlers for the lifetime of the object, restoring the
/// previous ones after.
class ScopedHandlers {
public:
  explicit ScopedHandlers(bool emulate) {
    install(SIGSEGV, on_fault, 0);
    install(SIGBUS, on_fault, 1);
    if (emulate)
      install(SIGILL, on_sigill, 2);
  }
  ~ScopedHandlers() {
    for (int i = 0; i < 3; ++i)
      if (installed_[i])
        sigaction(signals_[i], &old_[i], nullptr);
  }
  ScopedHandlers(const ScopedHandlers &) = delete;
  ScopedHandlers &operator=(const ScopedHandlers &) = delete;

private:
  void install(int sig, void (*handler)(int, siginfo_t *, void *), int slot) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    signals_[slot] = sig;
    installed_[slot] = sigaction(sig, &sa, &old_[slot]) == 0;
  }
  int signals_[3] = {};
  bool installed_[3] = {};
  struct sigaction old_[3];
};

} // namespace

AmxRunner::AmxRunner() {
  const HostIsa &host = host_isa();
  if (host_supports(Isa::amx)) {
    way_ = AmxWay::native;
    why_ = "AMX runs natively (CPUID AMX-TILE/BF16/INT8, XCR0 and Linux's "
           "tile permission)";
  } else if (!host.avx512_core) {
    way_ = AmxWay::unavailable;
    why_ = "no AVX-512 on this host: the AMX kernels' AVX-512 instructions "
           "cannot run, natively or around an emulated tile machine";
  } else {
    way_ = AmxWay::emulated;
    why_ = "AMX instructions trap (SIGILL) into the emulated tile machine";
    if (!host.amx_note.empty())
      why_ += " (" + host.amx_note + ")";
    else
      why_ += " (no AMX on this CPU)";
  }
}

std::string AmxRunner::run(const std::function<void()> &call) {
  if (way_ == AmxWay::unavailable)
    return why_;
  ActiveRun active;
  active.machine = &machine_;
  active.trapped = &trapped_;
  if (g_run)
    return "AmxRunner::run does not nest";
  g_run = &active;
  std::string error;
  {
    ScopedHandlers handlers(way_ == AmxWay::emulated);
    if (sigsetjmp(active.exit, 1) == 0)
      call();
    else
      error = active.error;
  }
  g_run = nullptr;
  return error;
}

void report_amx(const AmxRunner &amx) {
  std::printf("[   AMX    ] %s; %llu tile instructions emulated\n",
              amx.why().c_str(), (unsigned long long)amx.trapped());
}

} // namespace hyc::codegen::test
