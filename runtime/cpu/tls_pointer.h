// Pointers into a thread's buffers that stay in registers.
//
// Why: the artifact links this runtime into its shared library, where each
// use of a thread_local is a call to __tls_get_addr (the general- and
// local-dynamic TLS models; an executable, such as the benches and tests,
// relaxes it to one %fs-relative load, which is why they never saw it).
// GCC treats a thread_local's address as a constant it may recompute, and
// under register pressure it does so inside the kernels' loops: a call that
// spills every vector register around it (the extend attention kernel had
// one per row group and block, bench/README.md "thread_local in the
// artifact"). A pointer passed through pinned() has an origin the compiler
// cannot see, so it is kept like any other value.
#ifndef HYRT_CPU_TLS_POINTER_H
#define HYRT_CPU_TLS_POINTER_H

namespace hyrt::cpu {

/// p itself, opaque to the optimizer (no instruction is emitted).
template <typename T> inline T *pinned(T *p) {
  asm("" : "+r"(p));
  return p;
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_TLS_POINTER_H
