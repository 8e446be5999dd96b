// Ranks on several machines: shared memory inside each, Open MPI between
// them (see hyrt/parallel/mpi_group.h).
#include "hyrt/parallel/mpi_group.h"

#include "hyrt/parallel/shm_group.h"
#include "mpi_library.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include <sys/mman.h>

namespace hyrt {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class MpiGroup final : public RankGroup {
public:
  MpiGroup(const mpi::Library &m, const MpiGroupOptions &o)
      : m_(m), o_(o), leaders_(m.comm_null) {}

  ~MpiGroup() override {
    local_.reset();
    if (leaders_ != m_.comm_null)
      m_.Comm_free(&leaders_);
    int finalized = 1;
    if (m_.Finalized(&finalized) == mpi::kSuccess && !finalized)
      m_.Finalize();
  }

  /// MPI is up (from here a failure must stop the job: MPI_Finalize would
  /// wait for ranks that are waiting for this one).
  bool initialized() const { return initialized_; }

  Status setUp() {
    int initialized = 0, provided = mpi::kThreadSerialized;
    m_.Initialized(&initialized);
    if (!initialized)
      if (int rc = m_.Init_thread(nullptr, nullptr, mpi::kThreadSerialized, &provided);
          rc != mpi::kSuccess)
        return Status::Error(mpi::error_text(m_, "MPI_Init_thread", rc));
    initialized_ = true;
    m_.Comm_rank(m_.comm_world, &rank_);
    m_.Comm_size(m_.comm_world, &size_);
    if (provided < mpi::kThreadSerialized)
      return Status::Error("Open MPI gives thread level " + std::to_string(provided) +
                           ", expected MPI_THREAD_SERIALIZED (2): the steps of a "
                           "server run on another thread than the one that joined");
    if (Status s = findNodes(); !s.ok())
      return s;
    const bool leader = localRank_ == 0;
    if (int rc = m_.Comm_split(m_.comm_world, leader ? 0 : mpi::kUndefined, rank_, &leaders_);
        rc != mpi::kSuccess)
      return Status::Error(mpi::error_text(m_, "MPI_Comm_split", rc));
    if (localSize_ > 1) {
      ShmGroupOptions so;
      so.name = o_.shm_prefix + "-n" + std::to_string(node_);
      so.rank = localRank_;
      so.size = localSize_;
      so.slot_bytes = o_.slot_bytes;
      so.timeout_s = o_.timeout_s;
      std::unique_ptr<ShmGroup> g;
      if (Status s = ShmGroup::join(so, &g); !s.ok())
        return Status::Error("node " + std::to_string(node_) + ": " + s.message());
      // Every rank of the node has it mapped: the name can go.
      if (localRank_ == 0)
        ::shm_unlink(so.name.c_str());
      local_ = std::move(g);
    }
    return barrier();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::string transport() const override {
    return "Open MPI between " + std::to_string(nodes_) + " nodes, shared memory inside each (" +
           std::to_string(localSize_) + " rank" + (localSize_ == 1 ? "" : "s") +
           " on this one)";
  }

  Status all_reduce_sum(float *data, size_t n) override {
    if (local_)
      if (Status s = local_->all_reduce_sum(data, n); !s.ok())
        return s;
    if (nodes_ == 1)
      return Status::Ok();
    if (localRank_ == 0) {
      // Pieces of at most INT_MAX / nodes floats (MPI counts are int).
      const size_t piece = size_t(INT_MAX) / size_t(nodes_);
      for (size_t off = 0; off < n; off += piece) {
        const size_t len = std::min(piece, n - off);
        gathered_.resize(len * size_t(nodes_));
        mpi::Request req = nullptr;
        if (int rc = m_.Iallgather(data + off, int(len), m_.float_type, gathered_.data(), int(len),
                                   m_.float_type, leaders_, &req);
            rc != mpi::kSuccess)
          return Status::Error(where() + mpi::error_text(m_, "MPI_Iallgather", rc));
        if (Status s = wait(&req, "all_reduce"); !s.ok())
          return s;
        float *out = data + off;
        std::copy(gathered_.begin(), gathered_.begin() + std::ptrdiff_t(len), out);
        for (int node = 1; node < nodes_; ++node) {
          const float *p = gathered_.data() + size_t(node) * len;
          for (size_t i = 0; i < len; ++i)
            out[i] += p[i];
        }
      }
    } else {
      std::fill(data, data + n, -0.0f); // the leader's value + (-0): x for every x
    }
    return local_ ? local_->all_reduce_sum(data, n) : Status::Ok();
  }

  Status all_gather(const float *in, size_t n, float *out) override {
    std::fill(out, out + n * size_t(size_), -0.0f); // x + (-0) is x, -0 included
    std::copy(in, in + n, out + n * size_t(rank_));
    return all_reduce_sum(out, n * size_t(size_));
  }

  Status barrier() override {
    if (local_)
      if (Status s = local_->barrier(); !s.ok())
        return s;
    if (nodes_ > 1 && localRank_ == 0) {
      mpi::Request req = nullptr;
      if (int rc = m_.Ibarrier(leaders_, &req); rc != mpi::kSuccess)
        return Status::Error(where() + mpi::error_text(m_, "MPI_Ibarrier", rc));
      if (Status s = wait(&req, "barrier"); !s.ok())
        return s;
    }
    return local_ ? local_->barrier() : Status::Ok();
  }

  void abort(const std::string &why) override {
    if (local_)
      local_->abort(why);
    std::cout.flush();
    std::cerr << "hyc: tensor-parallel rank " << rank_ << " stops every rank (MPI_Abort): "
              << why << "\n";
    std::cerr.flush();
    std::fflush(nullptr);
    m_.Abort(m_.comm_world, 1);
  }

private:
  std::string where() const {
    return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (node " +
           std::to_string(node_) + "): ";
  }

  /// Node of every rank: by host name, or blocks of ranks_per_node.
  Status findNodes() {
    std::vector<std::string> names(static_cast<size_t>(size_));
    if (o_.ranks_per_node > 0) {
      if (size_ % o_.ranks_per_node != 0)
        return Status::Error("HYC_TP_RANKS_PER_NODE=" + std::to_string(o_.ranks_per_node) +
                             " does not divide the " + std::to_string(size_) + " ranks");
      for (int r = 0; r < size_; ++r)
        names[size_t(r)] = "node" + std::to_string(r / o_.ranks_per_node);
    } else {
      constexpr int kName = 256;
      char mine[kName] = {};
      int len = 0;
      m_.Get_processor_name(mine, &len);
      std::vector<char> all(size_t(size_) * kName);
      mpi::Request req = nullptr;
      if (int rc = m_.Iallgather(mine, kName, m_.char_type, all.data(), kName, m_.char_type,
                                 m_.comm_world, &req);
          rc != mpi::kSuccess)
        return Status::Error(mpi::error_text(m_, "MPI_Iallgather", rc));
      if (Status s = wait(&req, "finding the nodes"); !s.ok())
        return s;
      for (int r = 0; r < size_; ++r)
        names[size_t(r)] = std::string(all.data() + size_t(r) * kName,
                                       strnlen(all.data() + size_t(r) * kName, kName));
    }
    // Nodes numbered by their first rank; local ranks in world order.
    std::map<std::string, int> index;
    for (int r = 0; r < size_; ++r) {
      const auto [it, fresh] = index.emplace(names[size_t(r)], nodes_);
      if (fresh)
        ++nodes_;
      if (r == rank_)
        node_ = it->second;
    }
    for (int r = 0; r < size_; ++r)
      if (names[size_t(r)] == names[size_t(rank_)]) {
        if (r < rank_)
          ++localRank_;
        ++localSize_;
      }
    return Status::Ok();
  }

  /// Polls `req` until it completes or the deadline passes.
  Status wait(mpi::Request *req, const char *op) {
    const double deadline = now() + o_.timeout_s;
    for (uint64_t spins = 0;; ++spins) {
      int done = 0;
      if (int rc = m_.Test(req, &done, nullptr); rc != mpi::kSuccess)
        return Status::Error(where() + mpi::error_text(m_, "MPI_Test", rc) + " in " + op);
      if (done)
        return Status::Ok();
      if ((spins & 1023) == 1023 && now() > deadline)
        return Status::Error(where() + "timed out after " + std::to_string(int(o_.timeout_s)) +
                             " s waiting for the other nodes in " + op);
      if (spins > 4096)
        std::this_thread::yield();
    }
  }

  const mpi::Library &m_;
  MpiGroupOptions o_;
  bool initialized_ = false;
  int rank_ = 0, size_ = 1;
  int node_ = 0, nodes_ = 0, localRank_ = 0, localSize_ = 0;
  mpi::Comm leaders_;
  std::unique_ptr<ShmGroup> local_;
  std::vector<float> gathered_;
};

} // namespace

Status join_mpi_group(const MpiGroupOptions &options, std::unique_ptr<RankGroup> *out) {
  std::string why;
  const mpi::Library *m = mpi::library(&why);
  if (!m)
    return Status::Error(why);
  auto g = std::make_unique<MpiGroup>(*m, options);
  if (Status s = g->setUp(); !s.ok()) {
    // The others wait in MPI for this rank: stop the job (never returns).
    if (g->initialized())
      g->abort(s.message());
    return s;
  }
  *out = std::move(g);
  return Status::Ok();
}

} // namespace hyrt
