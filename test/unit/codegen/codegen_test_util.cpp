// Test helpers: guard pages, ISA probes in a child process, random values.
#include "codegen_test_util.h"

#include "codegen/tiles.h"

#include <cmath>
#include <stdexcept>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hyc::codegen::test {

GuardedBuffer::GuardedBuffer(size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t body = (bytes + page - 1) / page * page;
  map_bytes_ = body + page;
  void *p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("mmap failed");
  map_ = static_cast<uint8_t *>(p);
  mprotect(map_ + body, page, PROT_NONE);
  data_ = map_ + body - bytes;
}

GuardedBuffer::~GuardedBuffer() { munmap(map_, map_bytes_); }

namespace {

/// Runs a one-row kernel for `isa` in a child; true if it exits normally.
bool probe_in_child(Isa isa) {
  DataType a = DataType::f32, b = DataType::f32;
  if (isa == Isa::avx512_bf16 || isa == Isa::amx)
    a = b = DataType::bf16;
  if (isa == Isa::avx512_vnni)
    a = DataType::u8, b = DataType::s8;
  BrgemmDesc d = make_brgemm_desc(isa, a, b, DataType::f32, 64);
  d.m_max = 1;
  BrgemmGenResult r = generate_brgemm(d);
  if (!r)
    return false;
  const pid_t pid = fork();
  if (pid == 0) {
    alignas(64) static uint8_t A[4096], B[8192], C[4096];
    static float scale[64];
    BrgemmPostArgs post;
    post.a_scale = post.b_scale = post.bias = scale;
    r.kernel->fn()(A, 64, B, C, 32, 1, &post);
    _exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid)
    return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

bool can_run(Isa isa, std::string *note) {
  note->clear();
  if (host_supports(isa))
    return true;
  if (isa != Isa::amx && probe_in_child(isa)) {
    *note = std::string("CPUID does not report ") + isa_name(isa) +
            " but its instructions execute here (masked by the hypervisor); "
            "testing anyway";
    return true;
  }
  *note = std::string("host cannot execute ") + isa_name(isa) + " kernels";
  if (isa == Isa::amx && !host_isa().amx_note.empty())
    *note += " (" + host_isa().amx_note + ")";
  return false;
}

float uniform(std::mt19937 &rng) {
  return std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
}

std::vector<float> dequant_scales(std::mt19937 &rng, size_t n) {
  std::vector<float> v(n);
  for (float &x : v)
    x = 0.01f + std::fabs(uniform(rng)) * 0.02f;
  return v;
}

} // namespace hyc::codegen::test
