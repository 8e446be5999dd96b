// Where the ranks of a tensor-parallel run go on this machine (issue 14):
// which cores each rank's thread pool pins to and which NUMA nodes hold its
// weights and KV pages, from the hwloc topology of the host or of a
// synthetic description (for tests: "pack:2 numa:2 core:8 pu:1").
//
// Rules, in order (docs/architecture.md, "Scale-out"):
//  - The units are the NUMA nodes that have cores, in topology order
//    (package by package).
//  - tp = 0 asks for the default: one rank per NUMA node.
//  - tp dividing the node count: each rank takes nodes/tp consecutive
//    nodes (a package, on a machine of 2 nodes per package and tp =
//    packages), all their cores, its memory interleaved over those nodes.
//  - tp a multiple of the node count: each node's cores are split into
//    tp/nodes contiguous groups (sub-NUMA ranks; the first groups get one
//    core more when it does not divide), memory on that node.
//  - Anything else, or more ranks than cores, is an error that says what
//    would work.
// A rank runs one thread per core, on the core's first hardware thread
// (SMT siblings share the core's FMA and load ports; decode is bandwidth-
// bound and prefill compute-bound, so neither gains from them).
#ifndef HYRT_PLACEMENT_H
#define HYRT_PLACEMENT_H

#include "hyrt/status.h"

#include <string>
#include <vector>

namespace hyrt {

struct RankPlacement {
  int rank = 0;
  int package = 0;               ///< logical index of the package of its first node
  std::vector<int> numa_nodes;   ///< OS indices of the nodes holding its memory
  std::vector<int> cpus;         ///< OS indices of the PUs its threads pin to
};

/// Places `tp` ranks (0: one per NUMA node) on the host's topology, or on
/// the hwloc synthetic topology `synthetic` when it is not empty.
Status place_ranks(int tp, const std::string &synthetic, std::vector<RankPlacement> *out);

/// One line per rank: "rank 0: package 0, NUMA node 0, cpus 0-7".
std::string describe_placement(const std::vector<RankPlacement> &ranks);

} // namespace hyrt

#endif // HYRT_PLACEMENT_H
