// Rank placement (hyrt/parallel/placement.h) on hwloc synthetic topologies: the
// ranks, core sets and memory nodes the documented rules give, and the
// errors for counts that do not fit; then this host.
#include "hyrt/parallel/placement.h"

#include <gtest/gtest.h>

#include <thread>

namespace {

using hyrt::RankPlacement;

std::vector<RankPlacement> place(int tp, const std::string &topo) {
  std::vector<RankPlacement> out;
  hyrt::Status s = hyrt::place_ranks(tp, topo, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

std::string error(int tp, const std::string &topo) {
  std::vector<RankPlacement> out;
  hyrt::Status s = hyrt::place_ranks(tp, topo, &out);
  EXPECT_FALSE(s.ok());
  return s.message();
}

constexpr const char *kTwoByTwo = "pack:2 numa:2 core:8 pu:1"; // 2 packages x 2 nodes x 8 cores

TEST(Placement, DefaultIsOneRankPerNumaNodeWithItsCores) {
  EXPECT_EQ(hyrt::describe_placement(place(0, kTwoByTwo)),
            "rank 0: package 0, NUMA node 0, cpus 0-7\n"
            "rank 1: package 0, NUMA node 1, cpus 8-15\n"
            "rank 2: package 1, NUMA node 2, cpus 16-23\n"
            "rank 3: package 1, NUMA node 3, cpus 24-31\n");
}

TEST(Placement, FewerRanksThanNodesTakeWholeConsecutiveNodes) {
  EXPECT_EQ(hyrt::describe_placement(place(2, kTwoByTwo)),
            "rank 0: package 0, NUMA nodes 0-1, cpus 0-15\n"
            "rank 1: package 1, NUMA nodes 2-3, cpus 16-31\n");
  EXPECT_EQ(hyrt::describe_placement(place(1, kTwoByTwo)),
            "rank 0: package 0, NUMA nodes 0-3, cpus 0-31\n");
}

TEST(Placement, MoreRanksThanNodesSplitEachNodesCores) {
  const std::vector<RankPlacement> p = place(8, kTwoByTwo);
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(hyrt::describe_placement({p[0], p[1], p[7]}),
            "rank 0: package 0, NUMA node 0, cpus 0-3\n"
            "rank 1: package 0, NUMA node 0, cpus 4-7\n"
            "rank 7: package 1, NUMA node 3, cpus 28-31\n");
  // 3 cores per node and 2 ranks per node: the first group gets the extra.
  EXPECT_EQ(hyrt::describe_placement(place(2, "numa:1 core:3 pu:1")),
            "rank 0: package 0, NUMA node 0, cpus 0-1\n"
            "rank 1: package 0, NUMA node 0, cpus 2\n");
}

TEST(Placement, OneThreadPerCoreOnItsFirstHardwareThread) {
  EXPECT_EQ(hyrt::describe_placement(place(0, "pack:2 numa:1 core:4 pu:2")),
            "rank 0: package 0, NUMA node 0, cpus 0,2,4,6\n"
            "rank 1: package 1, NUMA node 1, cpus 8,10,12,14\n");
}

TEST(Placement, CountsThatDoNotFitAreRefusedSayingWhatWould) {
  EXPECT_NE(error(3, kTwoByTwo).find("--tp 3 does not fit 4 NUMA nodes: use a divisor of 4 "
                                     "(whole nodes per rank) or a multiple of it"),
            std::string::npos);
  EXPECT_NE(error(64, kTwoByTwo).find("--tp 64 needs 64 cores, this machine has 32"),
            std::string::npos);
  EXPECT_NE(error(-1, kTwoByTwo).find("--tp -1: expected 0"), std::string::npos);
  EXPECT_NE(error(2, "not a topology").find("synthetic topology 'not a topology' not understood"),
            std::string::npos);
}

TEST(Placement, ThisHostGetsEveryCoreOnce) {
  std::vector<RankPlacement> p;
  ASSERT_TRUE(hyrt::place_ranks(0, "", &p).ok());
  size_t cores = 0;
  for (const RankPlacement &r : p)
    cores += r.cpus.size();
  EXPECT_GE(cores, 1u);
  EXPECT_LE(cores, size_t(std::thread::hardware_concurrency()));
  std::printf("%s", hyrt::describe_placement(p).c_str());
}

} // namespace
