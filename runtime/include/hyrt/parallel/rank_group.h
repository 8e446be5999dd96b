// The collectives that tensor-parallel ranks run, whatever carries them:
// shared memory between the ranks of one machine (hyrt/parallel/shm_group.h), or
// shared memory inside each machine and Open MPI between them
// (hyrt/parallel/mpi_group.h). Every rank gets the same bits from every collective,
// which is what lets the ranks sample alike without a broadcast.
#ifndef HYRT_RANK_GROUP_H
#define HYRT_RANK_GROUP_H

#include "hyrt/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hyrt {

class RankGroup {
public:
  virtual ~RankGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// data[0..n) = the elementwise sum over the ranks' data (in place).
  virtual Status all_reduce_sum(float *data, size_t n) = 0;
  /// out[r * n .. (r + 1) * n) = rank r's in[0..n), on every rank.
  virtual Status all_gather(const float *in, size_t n, float *out) = 0;
  /// Returns when every rank has called it.
  virtual Status barrier() = 0;
  /// Staged all-to-all of variable sizes (expert parallel's token
  /// exchange). `send` holds this rank's blocks for ranks 0..size-1 back to
  /// back, send_counts[d] floats for rank d. Stage 1 exchanges the counts,
  /// stage 2 moves the blocks in one batched exchange: `recv` gets the
  /// blocks from ranks 0..size-1 back to back and recv_counts[s] their
  /// sizes. Fails, on every rank, when a rank's blocks exceed its
  /// recv_capacity (floats). This default goes through all_gather (every
  /// rank sees every block); ShmGroup moves only the blocks.
  virtual Status all_to_all_v(const float *send, const int64_t *send_counts, float *recv,
                              int64_t *recv_counts, size_t recv_capacity);
  /// Tells every rank that this one failed (their waits end with `why`).
  virtual void abort(const std::string &why) = 0;
  /// What carries the collectives, for messages and `hyc run --verbose`.
  virtual std::string transport() const = 0;
  /// The pid of each rank (index = rank) that runs on this machine and
  /// published it, 0 for the others; empty when the transport does not
  /// know (rank 0 watches these under mpirun, where they are not its
  /// children).
  virtual std::vector<pid_t> local_pids() const { return {}; }
};

/// What every rank derives alike from stage 1 of all_to_all_v: `table`
/// holds a row of n + 1 per rank, its send counts to ranks 0..n-1 and its
/// receive capacity. For rank `me`: each source's block for it, where it
/// starts in the source's buffer (`from`) and in `recv` (`to`), and its
/// size; `longest`, the largest send total (the exchange's length).
struct AllToAllPlan {
  int64_t longest = 0;
  std::vector<int64_t> from, to, size;
};
/// The plan, or (on every rank alike, so none waits) an error naming a
/// rank that would receive more than its capacity.
Status plan_all_to_all(int n, int me, const std::vector<int64_t> &table, AllToAllPlan *plan);

} // namespace hyrt

#endif // HYRT_RANK_GROUP_H
