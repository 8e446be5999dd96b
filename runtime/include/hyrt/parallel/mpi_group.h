// Ranks on several machines, started by Open MPI's mpirun: shared memory
// among the ranks of each machine (a ShmGroup per node), Open MPI between
// the machines' first ranks (the node leaders).
//
//   all_reduce: the node's ranks sum through shared memory; the leaders
//     exchange their node sums (MPI_Iallgather) and each adds them in node
//     order, so every leader holds the same bits; each leader hands the
//     result to its node (a shared-memory all-reduce to which the other
//     ranks add -0, exact).
//   all_gather: every rank's block beside -0s through the all-reduce
//     (exact: x + (-0) = x for every x).
//   barrier: the node, the leaders, the node.
//
// Nodes are the machines' host names (MPI_Get_processor_name), or, with
// ranks_per_node > 0, consecutive blocks of that many ranks: one machine can
// then run the between-machines path (tests, and checking a deployment's
// launch line on one box).
//
// Every collective's MPI wait polls a non-blocking request against the
// deadline, so a machine lost mid-step ends in an error, not a hang (setup
// and MPI_Finalize block in Open MPI; with its default error handler an
// MPI error stops the job with Open MPI's own message). A failing rank
// prints its reason and calls MPI_Abort, which stops every rank of the job
// (mpirun names it); so does a rank whose setup fails once MPI is up.
// Nodes are found by host name: containers that share one on different
// machines would be taken for one node (their shared-memory join then
// times out, naming the ranks missing). Open MPI is opened at run time
// (mpi_library.h).
#ifndef HYRT_MPI_GROUP_H
#define HYRT_MPI_GROUP_H

#include "hyrt/parallel/rank_group.h"

#include <memory>
#include <string>

namespace hyrt {

struct MpiGroupOptions {
  std::string shm_prefix;       ///< node segments are shm_prefix + "-n<node>"
  int ranks_per_node = 0;       ///< 0: by host name
  double timeout_s = 120.0;     ///< deadline of every wait
  size_t slot_bytes = 8u << 20; ///< of the node's shared-memory group
};

/// Initializes MPI (once per process) and joins the group of all mpirun's
/// ranks; an error names what failed (Open MPI missing, a node's
/// shared-memory group, a deadline).
Status join_mpi_group(const MpiGroupOptions &options, std::unique_ptr<RankGroup> *out);

} // namespace hyrt

#endif // HYRT_MPI_GROUP_H
