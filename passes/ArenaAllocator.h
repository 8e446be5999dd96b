//===- ArenaAllocator.h - static activation memory planning -----*- C++ -*-===//
//
// The arena planner of the call lowering: buffers sized at their maximum
// shape get first-fit offsets in one arena, reusing space whose last user
// has run. No MLIR; unit-testable on its own.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_ARENAALLOCATOR_H
#define HYC_PASSES_ARENAALLOCATOR_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace hyc {

/// First-fit allocator over [0, inf) with explicit frees; tracks the peak.
class ArenaAllocator {
public:
  explicit ArenaAllocator(int64_t alignment) : alignment(alignment) {}

  int64_t allocate(int64_t bytes) {
    bytes = (bytes + alignment - 1) / alignment * alignment;
    int64_t offset = 0;
    for (auto &[start, size] : live) {
      if (offset + bytes <= start)
        break;
      offset = std::max(offset, start + size);
    }
    live.push_back({offset, bytes});
    llvm::sort(live);
    peak = std::max(peak, offset + bytes);
    return offset;
  }

  void release(int64_t offset) {
    auto it = llvm::find_if(live, [&](auto &p) { return p.first == offset; });
    if (it != live.end())
      live.erase(it);
  }

  int64_t peakBytes() const { return peak; }

  /// Space above every planned buffer, live for the whole function.
  int64_t reserveAtEnd(int64_t bytes) {
    int64_t offset = (peak + alignment - 1) / alignment * alignment;
    peak = offset + (bytes + alignment - 1) / alignment * alignment;
    return offset;
  }

private:
  int64_t alignment;
  int64_t peak = 0;
  llvm::SmallVector<std::pair<int64_t, int64_t>> live;
};

//===----------------------------------------------------------------------===//
// Lowering of one entry function
//===----------------------------------------------------------------------===//

} // namespace hyc

#endif // HYC_PASSES_ARENAALLOCATOR_H
