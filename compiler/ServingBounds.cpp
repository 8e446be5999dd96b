//===- ServingBounds.cpp - default bounds sized for serving ---------------===//
#include "compiler/ServingBounds.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace hyc::compiler {

int64_t defaultMaxSeqLen(int64_t context, int64_t weightBytes, int64_t kvBytesPerToken,
                         int64_t maxSeqs, int64_t memoryBytes) {
  constexpr int64_t kCap = 8192, kFloor = 2048;
  const int64_t floor = std::min(context, kFloor);
  int64_t len = std::min(context, kCap);
  if (memoryBytes <= 0)
    return len;
  const double budget = 0.8 * double(memoryBytes);
  while (len > floor &&
         double(weightBytes) + double(maxSeqs) * double(len) * double(kvBytesPerToken) > budget)
    len = std::max(floor, len / 2);
  return len;
}

int64_t machineMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : 0;
}

std::string humanBytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", bytes / 1e6);
  return buf;
}

} // namespace hyc::compiler
