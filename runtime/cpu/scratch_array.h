// Internal to runtime/cpu: a thread's scratch buffer that grows without
// keeping its contents. std::vector::resize value-initializes every new
// element and copies the old ones into each larger allocation; a kernel
// that rewrites its scratch on every call pays both for nothing (the MLA
// plain form's expanded rows grow with every chunk of a long prompt: tens
// of megabytes zero-filled and copied per chunk).
#ifndef HYRT_CPU_SCRATCH_ARRAY_H
#define HYRT_CPU_SCRATCH_ARRAY_H

#include <cstddef>
#include <memory>
#include <type_traits>

namespace hyrt::cpu {

template <typename T> class ScratchArray {
  static_assert(std::is_trivially_default_constructible_v<T>,
                "scratch elements are left uninitialized");

public:
  /// At least n elements, uninitialized: the contents of an earlier call
  /// are kept only while no growth was needed. Grows by half again when it
  /// grows, so a sequence of slightly larger requests reallocates rarely.
  T *get(size_t n) {
    if (n > capacity_) {
      const size_t grown = n + n / 2;
      data_.reset(new T[grown]); // default-initialized: no zero fill
      capacity_ = grown;
    }
    return data_.get();
  }

private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

} // namespace hyrt::cpu

#endif // HYRT_CPU_SCRATCH_ARRAY_H
