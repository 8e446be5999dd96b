// The ranks of a tensor-parallel artifact (`hyc compile --tp N`) on one
// machine: one process per rank, started by the command the user ran.
//
// Rank 0's artifact directory holds rank r's in ranks/r. start_ranks()
// forks ranks 1..N-1 before anything else runs (no threads yet), places
// each (hyrt/parallel/placement.h: whole NUMA nodes or a node's cores; its thread
// pool pins there, and the memory it touches first, its weights and KV
// pages, is preferred on its nodes) and gives it its artifact directory. Every process then
// opens its artifact and join_ranks() joins the shared-memory group and
// registers its all-reduce in the artifact (hyc_collectives_v0). The ranks
// run the same command in lockstep: the all-reduce sums in rank order, so
// every rank's logits are bit-identical and each samples the same token
// with no broadcast; only rank 0 writes output.
//
// Under Open MPI's mpirun the launcher starts the ranks (no fork); when it
// spreads them over several machines, the collectives run through
// hyrt/parallel/mpi_group.h (shared memory inside each machine, MPI between them).
//
// Failure: a rank that dies, or fails to open its artifact or to join,
// makes the others' next collective fail within milliseconds with an error
// naming it (ShmGroup watches its peers); finish_ranks() collects the
// children and names any that failed. The deadline of every wait is
// HYC_TP_TIMEOUT seconds (default 120).
#ifndef HYRT_TENSOR_PARALLEL_H
#define HYRT_TENSOR_PARALLEL_H

#include "hyrt/abi.h"
#include "hyrt/status.h"

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hyrt {

class Artifact;
class Engine;
class RankGroup;

struct TensorParallel {
  int rank = 0, size = 1;
  std::string dir;             ///< this rank's artifact directory
  std::vector<pid_t> children; ///< rank 0: the pids of ranks 1..size-1
  std::string group_name;      ///< the shared-memory segment (its prefix under MPI)
  std::unique_ptr<RankGroup> group;
  /// mpirun placed the ranks on several machines (or HYC_TP_RANKS_PER_NODE
  /// asks to run as if): Open MPI between nodes, shared memory inside.
  bool across_machines = false;
  int ranks_per_node = 0;      ///< HYC_TP_RANKS_PER_NODE; 0: by host name
  std::string error;           ///< the last failed collective's reason
  double collective_seconds = 0; ///< inside the artifact's all-reduces so far
  std::string placement;       ///< where the ranks run (describe_placement)
  /// Ranks > 0 wait for rank 0 without a deadline (serving: an idle server
  /// sends no step); dead or aborting peers still end their waits.
  bool follower_waits = false;
  /// Every rank has its artifact open and the all-reduce registered (the
  /// barrier of join_ranks passed): from here the ranks run alike.
  bool ready = false;
  TensorParallel();
  ~TensorParallel();
  TensorParallel(const TensorParallel &) = delete;
  TensorParallel &operator=(const TensorParallel &) = delete;
};

/// Reads `dir`'s manifest: an artifact of one rank returns with size 1 (and
/// `requested` must be 0 or 1). Otherwise `requested` (0: the artifact's)
/// must equal its tensor_parallel.size; forks ranks 1..size-1 and returns in
/// every process, with its rank, directory and CPU share set.
Status start_ranks(const std::string &dir, int64_t requested, TensorParallel *tp);

/// Joins the group (call it with a null artifact right after start_ranks,
/// before the slow part of opening an artifact), then, with the rank's open
/// artifact, registers the group's all-reduce in it and waits until every
/// rank has done so. A no-op for size 1. On failure the other ranks are
/// told (their waits end at once).
Status join_ranks(Artifact *artifact, TensorParallel *tp);

/// Serving (`hyc serve --tp`): only rank 0 hears requests and schedules.
/// lead_steps() makes its engine send every step it runs (tokens,
/// positions, sequences, block tables: a few KB) to the other ranks before
/// running it; follow_steps() runs on ranks > 0, executing each step on
/// their own engine (same page ids over their own KV pool, their heads)
/// until stop_followers(). The step's all-reduces then happen on every rank
/// in the same order.
void lead_steps(Engine *engine, TensorParallel *tp);
Status follow_steps(Engine *engine, TensorParallel *tp);
Status stop_followers(TensorParallel *tp);

/// Rank 0: "" while every other rank runs, else what happened to the first
/// that does not ("rank 1 (pid 42) was killed by signal 9", "... is stopped
/// (signal 19)", "... exited with status 3"). A forked group's children are
/// looked at without reaping, so finish_ranks() still collects them; ranks
/// that mpirun started on this machine (not rank 0's children) by the pids
/// they published in the shared-memory group and their /proc state ("rank 1
/// (pid 42) is gone", "... is stopped"). Ranks on other machines are left
/// to mpirun, which ends the job when one dies. A server calls it between
/// steps to notice a rank that died or froze while it was idle.
std::string check_ranks(const TensorParallel &tp);

/// Ends this rank's part. When !ok, tells the others to stop, with `why`
/// (this rank's error). Rank 0 then
/// waits for every child and returns an error naming a rank that exited
/// with an error or a signal. Ranks > 0 never return: they exit with
/// `exit_code` (after flushing stdio).
Status finish_ranks(TensorParallel *tp, bool ok, int exit_code, const std::string &why = "");

} // namespace hyrt

#endif // HYRT_TENSOR_PARALLEL_H
