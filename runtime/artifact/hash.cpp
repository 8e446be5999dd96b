// Per-tensor checksums of weights.bin: XXH3-64 (Debian libxxhash-dev), used
// inline so that libhyrt.a adds no library to what a standalone executable
// links.
#include "hyrt/artifact/artifact.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <new>

namespace hyrt {

namespace {
std::string hex(XXH64_hash_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
} // namespace

std::string tensor_hash(const void *data, size_t n) { return hex(XXH3_64bits(data, n)); }

TensorHasher::TensorHasher() : state_(XXH3_createState()) {
  if (!state_)
    throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t *>(state_));
}

TensorHasher::~TensorHasher() { XXH3_freeState(static_cast<XXH3_state_t *>(state_)); }

void TensorHasher::update(const void *data, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t *>(state_), data, n);
}

std::string TensorHasher::hex() const {
  return hyrt::hex(XXH3_64bits_digest(static_cast<const XXH3_state_t *>(state_)));
}

} // namespace hyrt
