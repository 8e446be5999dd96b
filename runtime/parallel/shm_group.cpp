// Shared-memory collectives of one machine's ranks (see hyrt/parallel/shm_group.h).
//
// Segment: a header (geometry, join count, abort word and message, one
// robust process-shared mutex per rank that the rank holds while it is in
// the group), one control line per rank (a flag per buffer and phase), then
// the data: slots[2][size][slot_bytes] and result[2][slot_bytes].
//
// Liveness: a rank locks its mutex at join and holds it until it leaves. A
// peer's trylock answers EBUSY while it lives, EOWNERDEAD once the kernel
// has released the lock of a dead owner (robust futex list; unlike a pid
// check this is not fooled by an unreaped zombie), and 0 after it left.
#include "hyrt/parallel/shm_group.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hyrt {

namespace {

constexpr uint64_t kMagic = 0x70756f7267636879ull; // "hycgroup"
constexpr int kMaxRanks = 64;
constexpr size_t kLine = 64;

struct Header {
  std::atomic<uint64_t> magic;
  int32_t size;
  uint64_t slot_bytes;
  std::atomic<int32_t> joined;
  std::atomic<int32_t> abort_rank; // -1: none
  std::atomic<int32_t> pid[kMaxRanks]; // each rank's, written as it joins
  char abort_why[256];
  pthread_mutex_t alive[kMaxRanks];
};

/// One rank's flags, a cache line each so that writers do not share lines.
struct alignas(kLine) Control {
  std::atomic<uint64_t> flag[2][2]; // [phase: data written, part reduced][buffer]
};

size_t headerBytes() { return (sizeof(Header) + 4095) / 4096 * 4096; }

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string errnoText(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

/// Records the group's first failure: every rank's waits end with `why`.
void postAbort(Header *h, int rank, const std::string &why) {
  int none = -1;
  if (h->abort_rank.load() >= 0)
    return;
  const size_t n = std::min(why.size(), sizeof(h->abort_why) - 1);
  std::memcpy(h->abort_why, why.data(), n);
  h->abort_why[n] = '\0';
  h->abort_rank.compare_exchange_strong(none, rank, std::memory_order_acq_rel);
}

} // namespace

struct ShmGroup::Impl {
  ShmGroupOptions o;
  void *base = nullptr;
  size_t bytes = 0;
  Header *h = nullptr;
  Control *ctrl = nullptr;
  char *slots = nullptr;  // [2][size][slot_bytes]
  char *result = nullptr; // [2][slot_bytes]
  uint64_t seq = 0;       // collectives this rank started
  bool holdsAlive = false;

  static size_t totalBytes(const ShmGroupOptions &o) {
    return headerBytes() + size_t(o.size) * sizeof(Control) +
           2 * size_t(o.size) * o.slot_bytes + 2 * o.slot_bytes;
  }

  void layout() {
    h = static_cast<Header *>(base);
    ctrl = reinterpret_cast<Control *>(static_cast<char *>(base) + headerBytes());
    slots = reinterpret_cast<char *>(ctrl + o.size);
    result = slots + 2 * size_t(o.size) * o.slot_bytes;
  }

  char *slot(int buf, int r) const {
    return slots + (size_t(buf) * o.size + r) * o.slot_bytes;
  }

  std::string where() const {
    return "shm group " + o.name + " (rank " + std::to_string(o.rank) + " of " +
           std::to_string(o.size) + ")";
  }

  /// Whether rank r is still in the group; its state in `why` if not.
  bool peerAlive(int r, std::string *why) {
    int rc = pthread_mutex_trylock(&h->alive[r]);
    if (rc == EBUSY)
      return true;
    if (rc == EOWNERDEAD) {
      pthread_mutex_consistent(&h->alive[r]);
      pthread_mutex_unlock(&h->alive[r]);
      *why = "rank " + std::to_string(r) + " died";
      return false;
    }
    if (rc == 0)
      pthread_mutex_unlock(&h->alive[r]);
    *why = "rank " + std::to_string(r) + " left the group";
    return false;
  }

  /// Why waiting on rank r cannot go on (a failure anywhere in the group,
  /// r gone), or "" while it can.
  std::string problem(int r) {
    const int a = h->abort_rank.load(std::memory_order_acquire);
    if (a >= 0)
      return "rank " + std::to_string(a) + " aborted: " + std::string(h->abort_why);
    std::string why;
    if (r != o.rank && !peerAlive(r, &why))
      return why;
    return "";
  }

  /// Waits until every rank's flag[phase][buf] has reached `target`.
  Status waitAll(int phase, int buf, uint64_t target, const char *op) {
    const double deadline = now() + o.timeout_s;
    for (int r = 0; r < o.size; ++r) {
      std::atomic<uint64_t> &f = ctrl[r].flag[phase][buf];
      for (uint64_t spins = 0; f.load(std::memory_order_acquire) < target; ++spins) {
        if (spins < 4096) {
          __builtin_ia32_pause();
          continue;
        }
        if ((spins & 255) == 0) {
          if (std::string p = problem(r); !p.empty())
            return Status::Error(where() + ": " + p + " while waiting in " + op +
                                 " (collective " + std::to_string(target) + ")");
          if (now() > deadline)
            return Status::Error(where() + ": timed out after " +
                                 std::to_string(int(o.timeout_s)) + " s waiting for rank " +
                                 std::to_string(r) + " in " + op + " (collective " +
                                 std::to_string(target) + ")");
        }
        std::this_thread::yield();
      }
    }
    return Status::Ok();
  }

  void raise(int phase, int buf, uint64_t value) {
    ctrl[o.rank].flag[phase][buf].store(value, std::memory_order_release);
  }

  /// The first phase of every collective: the next sequence number and its
  /// buffer, `len` floats of `src` into this rank's slot, the flag raised,
  /// and every rank's flag awaited (then every slot of `*buf` is readable).
  Status post(const float *src, size_t len, const char *op, uint64_t *seqOut, int *bufOut) {
    const uint64_t s = ++seq;
    const int buf = int(s & 1);
    if (len)
      std::memcpy(slot(buf, o.rank), src, len * sizeof(float));
    raise(0, buf, s);
    *seqOut = s;
    *bufOut = buf;
    return waitAll(0, buf, s, op);
  }

  /// out[i] = sum over ranks of slot(buf, r)[i] for i in [begin, end), in
  /// rank order (the same bits on every rank).
  void reduceInto(float *out, int buf, size_t begin, size_t end) const {
    const float *first = reinterpret_cast<const float *>(slot(buf, 0));
    std::copy(first + begin, first + end, out + begin);
    for (int r = 1; r < o.size; ++r) {
      const float *s = reinterpret_cast<const float *>(slot(buf, r));
      for (size_t i = begin; i < end; ++i)
        out[i] += s[i];
    }
  }
};

ShmGroup::ShmGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ShmGroup::~ShmGroup() {
  Impl &g = *impl_;
  if (g.holdsAlive)
    pthread_mutex_unlock(&g.h->alive[g.o.rank]);
  if (g.base)
    munmap(g.base, g.bytes);
  if (g.o.rank == 0)
    shm_unlink(g.o.name.c_str());
}

std::string unique_group_name(const std::string &prefix) {
  std::random_device rd;
  const unsigned long long nonce = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
  return prefix + std::to_string(::getpid()) + "-" + std::to_string(nonce);
}

int ShmGroup::rank() const { return impl_->o.rank; }
int ShmGroup::size() const { return impl_->o.size; }

Status ShmGroup::join(const ShmGroupOptions &o, std::unique_ptr<ShmGroup> *out) {
  const std::string who = "shm group " + o.name + " (rank " + std::to_string(o.rank) + ")";
  if (o.size < 1 || o.size > kMaxRanks || o.rank < 0 || o.rank >= o.size)
    return Status::Error(who + ": rank " + std::to_string(o.rank) + " of " +
                         std::to_string(o.size) + ", expected 0 <= rank < size <= " +
                         std::to_string(kMaxRanks));
  if (o.slot_bytes == 0 || o.slot_bytes % kLine != 0)
    return Status::Error(who + ": slot_bytes " + std::to_string(o.slot_bytes) +
                         ", expected a positive multiple of 64");
  if (o.name.size() < 2 || o.name[0] != '/' || o.name.find('/', 1) != std::string::npos)
    return Status::Error(who + ": name '" + o.name + "', expected '/' and a name without '/'");
  auto impl = std::make_unique<Impl>();
  impl->o = o;
  impl->bytes = Impl::totalBytes(o);
  const double deadline = now() + o.timeout_s;
  int fd = -1;
  if (o.rank == 0) {
    shm_unlink(o.name.c_str()); // a segment left by a crashed run
    fd = shm_open(o.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return Status::Error(who + ": " + errnoText("shm_open"));
    if (ftruncate(fd, off_t(impl->bytes)) != 0) {
      const Status s = Status::Error(who + ": " + errnoText("ftruncate") + " (" +
                                     std::to_string(impl->bytes) + " bytes)");
      close(fd);
      shm_unlink(o.name.c_str());
      return s;
    }
  } else {
    // Rank 0 may not have created it yet.
    while ((fd = shm_open(o.name.c_str(), O_RDWR, 0600)) < 0) {
      if (errno != ENOENT)
        return Status::Error(who + ": " + errnoText("shm_open"));
      if (o.peer_check)
        if (std::string why = o.peer_check(); !why.empty())
          return Status::Error(who + ": " + why);
      if (now() > deadline)
        return Status::Error(who + ": rank 0 did not create the segment within " +
                             std::to_string(int(o.timeout_s)) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // ...and may not have sized it yet (it sizes before initializing the
    // header, so a header with the magic means a sized segment).
    struct stat st {};
    while (fstat(fd, &st) == 0 && size_t(st.st_size) < headerBytes()) {
      if (now() > deadline) {
        close(fd);
        return Status::Error(who + ": rank 0 did not size the segment within " +
                             std::to_string(int(o.timeout_s)) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    void *header = mmap(nullptr, headerBytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (header == MAP_FAILED) {
      close(fd);
      return Status::Error(who + ": " + errnoText("mmap"));
    }
    Header *h = static_cast<Header *>(header);
    std::string why;
    while (h->magic.load(std::memory_order_acquire) != kMagic && why.empty()) {
      if (now() > deadline)
        why = "rank 0 did not initialize the segment within " +
              std::to_string(int(o.timeout_s)) + " s";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (why.empty() && (h->size != o.size || h->slot_bytes != o.slot_bytes)) {
      why = "rank " + std::to_string(o.rank) + " joined with size " + std::to_string(o.size) +
            " and slot_bytes " + std::to_string(o.slot_bytes) + ", the group has " +
            std::to_string(h->size) + " and " + std::to_string(h->slot_bytes) +
            " (ranks disagree on size or slot_bytes)";
      postAbort(h, o.rank, why); // the others stop now, not at their deadline
    }
    munmap(header, headerBytes());
    if (!why.empty()) {
      close(fd);
      return Status::Error(who + ": " + why);
    }
  }
  impl->base = mmap(nullptr, impl->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (impl->base == MAP_FAILED) {
    impl->base = nullptr;
    return Status::Error(who + ": " + errnoText("mmap"));
  }
  impl->layout();
  // From here the group object owns the mapping: an error below unmaps it,
  // releases this rank's place and (rank 0) removes the segment.
  std::unique_ptr<ShmGroup> group(new ShmGroup(std::move(impl)));
  Impl &g = *group->impl_;
  Header *h = g.h;
  if (o.rank == 0) {
    h->size = o.size;
    h->slot_bytes = o.slot_bytes;
    h->joined.store(0);
    h->abort_rank.store(-1);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    for (int r = 0; r < kMaxRanks; ++r) {
      pthread_mutex_init(&h->alive[r], &attr);
      h->pid[r].store(0);
    }
    pthread_mutexattr_destroy(&attr);
    h->magic.store(kMagic, std::memory_order_release);
  }
  if (pthread_mutex_lock(&h->alive[o.rank]) == EOWNERDEAD)
    pthread_mutex_consistent(&h->alive[o.rank]);
  g.holdsAlive = true;
  h->pid[o.rank].store(int32_t(::getpid()), std::memory_order_release);
  h->joined.fetch_add(1, std::memory_order_acq_rel);
  while (h->joined.load(std::memory_order_acquire) < o.size) {
    if (const int a = h->abort_rank.load(); a >= 0)
      return Status::Error(who + ": rank " + std::to_string(a) + " aborted while joining: " +
                           std::string(h->abort_why));
    if (o.peer_check)
      if (std::string why = o.peer_check(); !why.empty()) {
        postAbort(h, o.rank, why);
        return Status::Error(who + ": " + why);
      }
    if (now() > deadline) {
      std::string missing;
      for (int r = 0; r < o.size; ++r) {
        const int rc = pthread_mutex_trylock(&h->alive[r]);
        if (rc == 0 || rc == EOWNERDEAD) {
          if (rc == EOWNERDEAD)
            pthread_mutex_consistent(&h->alive[r]);
          pthread_mutex_unlock(&h->alive[r]);
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      return Status::Error(who + ": ranks " + missing + " did not join within " +
                           std::to_string(int(o.timeout_s)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  *out = std::move(group);
  return Status::Ok();
}

void ShmGroup::abort(const std::string &why) { postAbort(impl_->h, impl_->o.rank, why); }

std::vector<pid_t> ShmGroup::local_pids() const {
  std::vector<pid_t> pids(size_t(impl_->o.size));
  for (int r = 0; r < impl_->o.size; ++r)
    pids[size_t(r)] = pid_t(impl_->h->pid[r].load(std::memory_order_acquire));
  return pids;
}

Status ShmGroup::all_reduce_sum(float *data, size_t n) {
  Impl &g = *impl_;
  const size_t piece = g.o.slot_bytes / sizeof(float);
  for (size_t off = 0; off < n; off += piece) {
    const size_t len = std::min(piece, n - off);
    uint64_t seq = 0;
    int buf = 0;
    if (Status s = g.post(data + off, len, "all_reduce", &seq, &buf); !s.ok())
      return s;
    if (len * sizeof(float) < g.o.reduce_scatter_bytes || g.o.size == 1) {
      g.reduceInto(data + off, buf, 0, len);
      continue;
    }
    // Reduce-scatter: this rank's part into the shared result, then
    // all-gather the parts.
    float *res = reinterpret_cast<float *>(g.result + size_t(buf) * g.o.slot_bytes);
    const size_t part = (len + g.o.size - 1) / g.o.size;
    const size_t b = std::min(len, part * g.o.rank), e = std::min(len, b + part);
    g.reduceInto(res, buf, b, e);
    g.raise(1, buf, seq);
    if (Status s = g.waitAll(1, buf, seq, "all_reduce"); !s.ok())
      return s;
    std::memcpy(data + off, res, len * sizeof(float));
  }
  return Status::Ok();
}

Status ShmGroup::all_gather(const float *in, size_t n, float *out) {
  Impl &g = *impl_;
  const size_t piece = g.o.slot_bytes / sizeof(float);
  for (size_t off = 0; off < n; off += piece) {
    const size_t len = std::min(piece, n - off);
    uint64_t seq = 0;
    int buf = 0;
    if (Status s = g.post(in + off, len, "all_gather", &seq, &buf); !s.ok())
      return s;
    for (int r = 0; r < g.o.size; ++r)
      std::memcpy(out + size_t(r) * n + off, g.slot(buf, r), len * sizeof(float));
  }
  return Status::Ok();
}

Status ShmGroup::barrier() {
  uint64_t seq = 0;
  int buf = 0;
  return impl_->post(nullptr, 0, "barrier", &seq, &buf);
}

Status ShmGroup::all_to_all_v(const float *send, const int64_t *send_counts, float *recv,
                              int64_t *recv_counts, size_t recv_capacity) {
  Impl &g = *impl_;
  const int n = g.o.size, me = g.o.rank;
  // Stage 1: counts to every destination and this rank's capacity.
  std::vector<int64_t> mine(static_cast<size_t>(n) + 1);
  std::copy(send_counts, send_counts + n, mine.begin());
  mine[size_t(n)] = int64_t(recv_capacity);
  if ((size_t(n) + 1) * sizeof(int64_t) > g.o.slot_bytes)
    return Status::Error(g.where() + ": all_to_all_v: slots too small for the counts");
  uint64_t seq = 0;
  int buf = 0;
  if (Status s = g.post(reinterpret_cast<const float *>(mine.data()), 2 * (size_t(n) + 1),
                        "all_to_all_v", &seq, &buf);
      !s.ok())
    return s;
  std::vector<int64_t> table(size_t(n) * size_t(n + 1));
  for (int r = 0; r < n; ++r)
    std::memcpy(&table[size_t(r) * size_t(n + 1)], g.slot(buf, r),
                sizeof(int64_t) * size_t(n + 1));
  AllToAllPlan plan;
  if (Status s = plan_all_to_all(n, me, table, &plan); !s.ok())
    return Status::Error(g.where() + ": " + s.message());
  for (int src = 0; src < n; ++src)
    recv_counts[src] = plan.size[size_t(src)];
  int64_t total = 0;
  for (int d = 0; d < n; ++d)
    total += send_counts[d];
  // Stage 2: one batched exchange, a slot per round.
  const int64_t piece = int64_t(g.o.slot_bytes / sizeof(float));
  for (int64_t lo = 0; lo < plan.longest; lo += piece) {
    const int64_t hi = lo + piece;
    const int64_t len = std::max<int64_t>(0, std::min(hi, total) - lo);
    if (Status s = g.post(send + std::min(lo, total), size_t(len), "all_to_all_v", &seq, &buf);
        !s.ok())
      return s;
    for (int src = 0; src < n; ++src) {
      const int64_t from = plan.from[size_t(src)];
      const int64_t b = std::max(lo, from), e = std::min(hi, from + plan.size[size_t(src)]);
      if (e > b)
        std::memcpy(recv + plan.to[size_t(src)] + (b - from),
                    reinterpret_cast<const float *>(g.slot(buf, src)) + (b - lo),
                    sizeof(float) * size_t(e - b));
    }
  }
  return Status::Ok();
}

} // namespace hyrt
