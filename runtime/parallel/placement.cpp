// Rank placement on the hwloc topology (see hyrt/parallel/placement.h for the rules).
#include "hyrt/parallel/placement.h"

#include <hwloc.h>

#include <memory>
#include <sstream>

namespace hyrt {

namespace {

/// One NUMA node with cores: its OS index, package and the first PU of
/// each of its cores, in order.
struct Node {
  int os_index = 0;
  int package = 0;
  std::vector<int> cores; // first PU's OS index per core
};

struct TopologyDeleter {
  void operator()(hwloc_topology *t) const { hwloc_topology_destroy(t); }
};

Status loadNodes(const std::string &synthetic, std::vector<Node> *nodes) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0)
    return Status::Error("hwloc: cannot initialize a topology");
  std::unique_ptr<hwloc_topology, TopologyDeleter> topo(raw);
  if (!synthetic.empty() && hwloc_topology_set_synthetic(raw, synthetic.c_str()) != 0)
    return Status::Error("hwloc: synthetic topology '" + synthetic +
                         "' not understood (e.g. \"pack:2 numa:2 core:8 pu:1\")");
  if (hwloc_topology_load(raw) != 0)
    return Status::Error("hwloc: cannot load the topology");
  const int numas = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numas; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(raw, HWLOC_OBJ_NUMANODE, unsigned(i));
    Node n;
    n.os_index = int(numa->os_index);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(raw, HWLOC_OBJ_PACKAGE, numa);
    if (!pkg && numa->cpuset)
      pkg = hwloc_get_next_obj_covering_cpuset_by_type(raw, numa->cpuset, HWLOC_OBJ_PACKAGE,
                                                        nullptr);
    n.package = pkg ? int(pkg->logical_index) : 0;
    hwloc_obj_t core = nullptr;
    while ((core = hwloc_get_next_obj_inside_cpuset_by_type(raw, numa->cpuset, HWLOC_OBJ_CORE,
                                                             core)) != nullptr) {
      const int pu = hwloc_bitmap_first(core->cpuset);
      if (pu >= 0)
        n.cores.push_back(pu);
    }
    if (n.cores.empty()) { // a machine whose topology shows PUs only
      for (int pu = hwloc_bitmap_first(numa->cpuset); pu >= 0;
           pu = hwloc_bitmap_next(numa->cpuset, unsigned(pu)))
        n.cores.push_back(pu);
    }
    if (!n.cores.empty()) // memory-only nodes (CXL, HBM) hold no rank
      nodes->push_back(std::move(n));
  }
  if (nodes->empty())
    return Status::Error("hwloc: the topology shows no NUMA node with cores");
  return Status::Ok();
}

/// "0-3,8,10-11".
std::string cpuList(const std::vector<int> &cpus) {
  std::ostringstream out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    out << (i ? "," : "") << cpus[i];
    if (j > i)
      out << "-" << cpus[j];
    i = j + 1;
  }
  return out.str();
}

} // namespace

Status place_ranks(int tp, const std::string &synthetic, std::vector<RankPlacement> *out) {
  out->clear();
  std::vector<Node> nodes;
  if (Status s = loadNodes(synthetic, &nodes); !s.ok())
    return s;
  const int n = int(nodes.size());
  size_t totalCores = 0;
  for (const Node &node : nodes)
    totalCores += node.cores.size();
  if (tp < 0)
    return Status::Error("--tp " + std::to_string(tp) + ": expected 0 (one rank per NUMA "
                         "node) or a positive rank count");
  if (tp == 0)
    tp = n;
  if (size_t(tp) > totalCores)
    return Status::Error("--tp " + std::to_string(tp) + " needs " + std::to_string(tp) +
                         " cores, this machine has " + std::to_string(totalCores));
  if (n % tp == 0) {
    const int per = n / tp;
    for (int r = 0; r < tp; ++r) {
      RankPlacement p;
      p.rank = r;
      p.package = nodes[size_t(r * per)].package;
      for (int k = r * per; k < (r + 1) * per; ++k) {
        p.numa_nodes.push_back(nodes[size_t(k)].os_index);
        p.cpus.insert(p.cpus.end(), nodes[size_t(k)].cores.begin(), nodes[size_t(k)].cores.end());
      }
      out->push_back(std::move(p));
    }
    return Status::Ok();
  }
  if (tp % n == 0) {
    const int per = tp / n;
    for (int k = 0; k < n; ++k) {
      const Node &node = nodes[size_t(k)];
      const int cores = int(node.cores.size());
      if (cores < per)
        return Status::Error("--tp " + std::to_string(tp) + " puts " + std::to_string(per) +
                             " ranks on NUMA node " + std::to_string(node.os_index) +
                             ", which has " + std::to_string(cores) + " cores");
      int begin = 0;
      for (int j = 0; j < per; ++j) {
        const int size = cores / per + (j < cores % per ? 1 : 0);
        RankPlacement p;
        p.rank = k * per + j;
        p.package = node.package;
        p.numa_nodes = {node.os_index};
        p.cpus.assign(node.cores.begin() + begin, node.cores.begin() + begin + size);
        begin += size;
        out->push_back(std::move(p));
      }
    }
    return Status::Ok();
  }
  return Status::Error("--tp " + std::to_string(tp) + " does not fit " + std::to_string(n) +
                       " NUMA nodes: use a divisor of " + std::to_string(n) +
                       " (whole nodes per rank) or a multiple of it (ranks within a node)");
}

std::string describe_placement(const std::vector<RankPlacement> &ranks) {
  std::ostringstream out;
  for (const RankPlacement &p : ranks) {
    out << "rank " << p.rank << ": package " << p.package << ", NUMA node"
        << (p.numa_nodes.size() > 1 ? "s " : " ") << cpuList(p.numa_nodes) << ", cpus "
        << cpuList(p.cpus) << "\n";
  }
  return out.str();
}

} // namespace hyrt
