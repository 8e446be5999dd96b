// Collectives between the ranks (processes) of one machine through shared
// memory: the intra-node half of tensor / expert parallelism (issue 14).
//
// One POSIX shared-memory segment per group, created by rank 0 and opened by
// the others; each rank owns a slot (double-buffered) and a flag per buffer.
//   all_reduce (small): every rank copies its vector into its slot, raises
//     its flag to the collective's sequence number, waits for every flag,
//     and reduces all slots itself in rank order (no second barrier; every
//     rank gets the same bits). The next collective uses the other buffer,
//     which is safe: a rank can only reach it after every rank has raised
//     the flag of the one in between, i.e. finished reading this one.
//   all_reduce (large): reduce-scatter then all-gather: rank r reduces the
//     r-th part of every slot into the shared result and raises a second
//     flag; everyone copies the parts out.
//   all_gather, barrier: the same flags.
//   all_to_all_v (staged): every rank posts its counts per destination; then
//     its blocks go through its slot in rounds of a slot each, and every
//     rank copies out the parts addressed to it.
// Vectors longer than a slot go through in slot-sized pieces.
//
// Every wait has a deadline and watches its peers: a rank that died (its
// pid is gone), a rank that reported a failure (the group's abort word), or
// a deadline passing ends the wait with an error naming the rank, so no
// rank hangs on a lost peer.
#ifndef HYRT_SHM_GROUP_H
#define HYRT_SHM_GROUP_H

#include "hyrt/parallel/rank_group.h"
#include "hyrt/status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hyrt {

struct ShmGroupOptions {
  std::string name;               ///< segment name, e.g. "/hyc-1234" (unique per run)
  int rank = 0;                   ///< this process, 0..size-1
  int size = 1;                   ///< ranks in the group
  size_t slot_bytes = 8u << 20;   ///< bytes per rank and buffer (a multiple of 64)
  double timeout_s = 10.0;        ///< deadline of every wait (joining included)
  size_t reduce_scatter_bytes = 256u << 10; ///< all_reduce pieces from this size on
  /// Called while join() waits for the others (ranks that have not joined
  /// yet hold no liveness lock to watch): a non-empty reason ends the wait
  /// with that error and aborts the group. Rank 0 of `hyc run --tp` uses it
  /// to notice a child rank that exited before joining.
  std::function<std::string()> peer_check;
};

/// `prefix` + this process's pid + a random nonce: a segment name no earlier
/// run can have left behind. With the pid alone, a segment that outlived
/// its run (rank 0 killed before it unlinked it) met a later process with
/// the same pid once pids wrapped, and a rank could open that stale segment
/// before rank 0 replaced it ("ranks disagree on size").
std::string unique_group_name(const std::string &prefix);

class ShmGroup final : public RankGroup {
public:
  /// Joins the group: rank 0 creates the segment (an old one of the same
  /// name is replaced), the others open it once it exists; returns when
  /// every rank has joined, or an error naming the ranks missing at the
  /// deadline, or what failed (shm_open, the segment's geometry).
  static Status join(const ShmGroupOptions &options, std::unique_ptr<ShmGroup> *out);
  ~ShmGroup() override;
  ShmGroup(const ShmGroup &) = delete;
  ShmGroup &operator=(const ShmGroup &) = delete;

  int rank() const override;
  int size() const override;
  Status all_reduce_sum(float *data, size_t n) override;
  Status all_gather(const float *in, size_t n, float *out) override;
  Status barrier() override;
  /// Counts through the slots, then the blocks in slot-sized rounds: each
  /// rank copies only the parts addressed to it.
  Status all_to_all_v(const float *send, const int64_t *send_counts, float *recv,
                      int64_t *recv_counts, size_t recv_capacity) override;
  void abort(const std::string &why) override;
  std::string transport() const override { return "shared memory"; }
  std::vector<pid_t> local_pids() const override;

  struct Impl;

private:
  explicit ShmGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace hyrt

#endif // HYRT_SHM_GROUP_H
