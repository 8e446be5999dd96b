// Tensor-parallel ranks of one machine (see hyrt/parallel/tensor_parallel.h).
#include "hyrt/parallel/tensor_parallel.h"

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/engine.h"
#include "hyrt/parallel/mpi_group.h"
#include "hyrt/parallel/placement.h"
#include "hyrt/parallel/shm_group.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace hyrt {

TensorParallel::TensorParallel() = default;
TensorParallel::~TensorParallel() = default;

namespace {

double timeoutSeconds() {
  if (const char *v = std::getenv("HYC_TP_TIMEOUT")) {
    char *end = nullptr;
    const double s = std::strtod(v, &end);
    if (end != v && s > 0)
      return s;
  }
  return 120.0;
}

/// Pins this process to `cpus` (those of them it may use) and prefers its
/// NUMA nodes for the memory it touches first (its weights and KV pages):
/// one node preferred, several interleaved. No libnuma: the two policies are
/// one system call.
bool placeRank(const RankPlacement &p) {
  cpu_set_t allowed, mine;
  CPU_ZERO(&allowed);
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
    return false;
  int n = 0;
  for (int c : p.cpus)
    if (c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &allowed)) {
      CPU_SET(c, &mine);
      ++n;
    }
  if (n == 0 || sched_setaffinity(0, sizeof(mine), &mine) != 0)
    return false;
  unsigned long mask[16] = {};
  for (int node : p.numa_nodes)
    if (node >= 0 && node < int(sizeof(mask) * 8))
      mask[node / 64] |= 1ul << (node % 64);
  constexpr int kPreferred = 1, kInterleave = 3; // linux/mempolicy.h
  if (!p.numa_nodes.empty())
    (void)::syscall(SYS_set_mempolicy, p.numa_nodes.size() > 1 ? kInterleave : kPreferred,
                    mask, sizeof(mask) * 8);
  return true;
}

/// Rank r's contiguous share of the CPUs this process may use (ranks get
/// whole CPUs; with fewer CPUs than ranks, they share them round-robin):
/// where the hwloc placement has no answer.
void pinRank(int rank, int size) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set))
      cpus.push_back(c);
  if (cpus.empty())
    return;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const size_t n = cpus.size();
  if (n >= size_t(size)) {
    for (size_t i = n * size_t(rank) / size_t(size); i < n * size_t(rank + 1) / size_t(size); ++i)
      CPU_SET(cpus[i], &mine);
  } else {
    CPU_SET(cpus[size_t(rank) % n], &mine);
  }
  sched_setaffinity(0, sizeof(mine), &mine);
}

/// Runs one of the artifact's collectives on the rank's group: its time
/// into collective_seconds, its error into `error`; 0 = ok (abi.h).
template <typename Collective> int32_t timed(void *ctx, Collective run) {
  auto *tp = static_cast<TensorParallel *>(ctx);
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = run(*tp->group);
  tp->collective_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!s.ok()) {
    tp->error = s.message();
    return 1;
  }
  return 0;
}

int32_t allReduce(void *ctx, float *data, int64_t n) {
  return timed(ctx, [&](RankGroup &g) { return g.all_reduce_sum(data, size_t(n)); });
}

int32_t allToAllV(void *ctx, const float *send, const int64_t *sendCounts, float *recv,
                  int64_t *recvCounts, int64_t capacity) {
  return timed(ctx, [&](RankGroup &g) {
    return g.all_to_all_v(send, sendCounts, recv, recvCounts, size_t(capacity));
  });
}

int32_t allGather(void *ctx, const float *in, int64_t n, float *out) {
  return timed(ctx, [&](RankGroup &g) { return g.all_gather(in, size_t(n), out); });
}

/// `dir`/manifest.json parsed; false when it cannot be read, with the
/// parser's error in `why` when it can be read but not parsed.
bool readManifest(const std::string &dir, Manifest *m, Status *why) {
  std::ifstream in(dir + "/manifest.json");
  if (!in)
    return false;
  std::stringstream text;
  text << in.rdbuf();
  *why = parse_manifest(text.str(), dir + "/manifest.json", m);
  return why->ok();
}

/// Rank r's manifest (in `rankDir`) against rank 0's `m`: the right rank of
/// the same compile (tensor_parallel.compile_id) with rank 0's vocab and
/// limits; an error naming what differs otherwise.
Status checkRankManifest(const Manifest &m, const std::string &rankDir, int64_t r) {
  Manifest rm;
  Status rankParsed;
  if (!readManifest(rankDir, &rm, &rankParsed))
    return rankParsed.ok() ? Status::Error("rank 0 of " + std::to_string(m.tp_size) +
                                           " has no " + rankDir + "/manifest.json")
                           : rankParsed;
  if (rm.tp_rank != r || rm.tp_size != m.tp_size || rm.model.vocab_size != m.model.vocab_size ||
      rm.limits.max_seq_len != m.limits.max_seq_len ||
      rm.limits.max_batch_tokens != m.limits.max_batch_tokens ||
      rm.limits.max_seqs != m.limits.max_seqs)
    return Status::Error(rankDir + " is rank " + std::to_string(rm.tp_rank) + " of " +
                         std::to_string(rm.tp_size) + " (vocab " +
                         std::to_string(rm.model.vocab_size) + ") but should be rank " +
                         std::to_string(r) + " of " + std::to_string(m.tp_size) +
                         " with rank 0's vocab and limits: "
                         "a directory of another compile (recompile with --tp)");
  if (rm.tp_compile_id != m.tp_compile_id)
    return Status::Error(rankDir + " comes from another compile (compile_id " +
                         rm.tp_compile_id + ", rank 0's is " + m.tp_compile_id +
                         "): every rank must come from one `hyc compile --tp " +
                         std::to_string(m.tp_size) + "` (recompile, or copy the whole " +
                         "artifact directory)");
  return Status::Ok();
}

} // namespace

Status start_ranks(const std::string &dir, int64_t requested, TensorParallel *tp) {
  tp->dir = dir;
  Manifest m;
  Status parsed;
  if (!readManifest(dir, &m, &parsed))
    return Status::Ok(); // opening the artifact names what is missing or malformed
  if (m.tp_rank != 0)
    return Status::Error(dir + " is rank " + std::to_string(m.tp_rank) + " of a " +
                         std::to_string(m.tp_size) +
                         "-rank artifact: run rank 0's directory, which starts every rank");
  if (requested > 0 && requested != m.tp_size)
    return Status::Error("--tp " + std::to_string(requested) + ", but " + dir +
                         " was compiled for " + std::to_string(m.tp_size) +
                         (m.tp_size == 1 ? " rank (compile it with --tp " +
                                               std::to_string(requested) + ")"
                                         : " ranks (hyc compile --tp)"));
  // Under Open MPI's mpirun every rank is already a process: take the
  // rank from the launcher instead of forking. On one machine the ranks
  // meet in shared memory; on several, MPI joins the machines
  // (hyrt/parallel/mpi_group.h).
  if (const char *worldSize = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    const int size = std::atoi(worldSize);
    const char *worldRank = std::getenv("OMPI_COMM_WORLD_RANK");
    const char *localSize = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const char *job = std::getenv("PMIX_NAMESPACE");
    if (!job)
      job = std::getenv("OMPI_MCA_ess_base_jobid");
    if (size > 1 || m.tp_size > 1) {
      if (size != m.tp_size)
        return Status::Error("mpirun started " + std::to_string(size) + " ranks, but " + dir +
                             " was compiled for " + std::to_string(m.tp_size) +
                             " (mpirun -np " + std::to_string(m.tp_size) + ")");
      if (!worldRank || !job)
        return Status::Error("mpirun: OMPI_COMM_WORLD_RANK or the job id (PMIX_NAMESPACE) "
                             "is missing from the environment");
      if (const char *perNode = std::getenv("HYC_TP_RANKS_PER_NODE")) {
        char *end = nullptr;
        const long k = std::strtol(perNode, &end, 10);
        if (end == perNode || *end != '\0' || k < 1 || size % k != 0)
          return Status::Error(std::string("HYC_TP_RANKS_PER_NODE='") + perNode +
                               "', expected a count of ranks that divides the " +
                               std::to_string(size) + " ranks");
        tp->ranks_per_node = int(k);
        tp->across_machines = true;
      } else {
        tp->across_machines = !localSize || std::atoi(localSize) != size;
      }
      tp->size = size;
      tp->rank = std::atoi(worldRank);
      if (tp->rank < 0 || tp->rank >= size)
        return Status::Error(std::string("mpirun: OMPI_COMM_WORLD_RANK='") + worldRank +
                             "', expected 0.." + std::to_string(size - 1));
      if (tp->rank > 0) {
        tp->dir = dir + "/ranks/" + std::to_string(tp->rank);
        // Each rank checks its own directory against rank 0's manifest (on
        // several machines, each holds a copy of the whole artifact).
        if (Status s = checkRankManifest(m, tp->dir, tp->rank); !s.ok())
          return s;
      }
      tp->group_name = std::string("/hyc-tp-mpi-") + job;
      for (char &c : tp->group_name)
        if (c != '/' && !std::isalnum(static_cast<unsigned char>(c)) && c != '-')
          c = '_';
      return Status::Ok(); // mpirun binds each rank to its cores already
    }
  }
  if (m.tp_size == 1)
    return Status::Ok();
  for (int64_t r = 1; r < m.tp_size; ++r)
    if (Status s = checkRankManifest(m, dir + "/ranks/" + std::to_string(r), r); !s.ok())
      return s;
  tp->size = int(m.tp_size);
  const pid_t parent = ::getpid();
  // Not the pid alone: a segment a crashed run left (one killed before
  // every rank mapped it, see below) can share a later run's pid.
  tp->group_name = unique_group_name("/hyc-tp-");
  // hwloc: whole NUMA nodes or a node's cores per rank (hyrt/parallel/placement.h);
  // a count it cannot place (more ranks than cores) shares the CPUs.
  std::vector<RankPlacement> placements;
  if (Status s = place_ranks(int(m.tp_size), "", &placements); s.ok()) {
    tp->placement = describe_placement(placements); // a line per rank -> one line
    while (!tp->placement.empty() && tp->placement.back() == '\n')
      tp->placement.pop_back();
    for (char &c : tp->placement)
      if (c == '\n')
        c = ';';
  }
  else
    placements.clear(), tp->placement = "hwloc: " + s.message() + "; ranks share the CPUs";
  auto place = [&](int rank) {
    if (placements.size() != size_t(m.tp_size) || !placeRank(placements[size_t(rank)]))
      pinRank(rank, int(m.tp_size));
  };
  std::fflush(nullptr);
  std::cout.flush();
  std::cerr.flush();
  for (int r = 1; r < tp->size; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t c : tp->children)
        ::kill(c, SIGKILL);
      return Status::Error(std::string("cannot start tensor-parallel rank: fork: ") +
                           std::strerror(errno));
    }
    if (pid == 0) {
      // Rank 0 gone (killed, crashed): this rank goes too, instead of
      // waiting for it until the deadline.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(1);
      tp->rank = r;
      tp->children.clear();
      tp->dir = dir + "/ranks/" + std::to_string(r);
      place(r);
      return Status::Ok();
    }
    tp->children.push_back(pid);
  }
  place(0);
  return Status::Ok();
}

Status join_ranks(Artifact *artifact, TensorParallel *tp) {
  if (tp->size == 1)
    return Status::Ok();
  if (!tp->group && tp->across_machines) {
    MpiGroupOptions o;
    o.shm_prefix = tp->group_name;
    o.ranks_per_node = tp->ranks_per_node;
    o.timeout_s = tp->rank > 0 && tp->follower_waits ? 1e12 : timeoutSeconds();
    if (Status s = join_mpi_group(o, &tp->group); !s.ok())
      return Status::Error("tensor-parallel rank " + std::to_string(tp->rank) + ": " +
                           s.message());
  }
  if (!tp->group) {
    ShmGroupOptions o;
    o.name = tp->group_name;
    o.rank = tp->rank;
    o.size = tp->size;
    // A serving follower waits for rank 0's next step as long as rank 0
    // lives (it dies with rank 0; a dead or aborting peer still ends the
    // wait): an idle server is not a failure.
    o.timeout_s = tp->rank > 0 && tp->follower_waits ? 1e12 : timeoutSeconds();
    // Rank 0 watches its children: one that exits before joining holds no
    // liveness lock yet, and would otherwise be noticed at the deadline.
    if (tp->rank == 0)
      o.peer_check = [tp]() -> std::string {
        for (size_t i = 0; i < tp->children.size(); ++i) {
          siginfo_t info{};
          if (::waitid(P_PID, id_t(tp->children[i]), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
              info.si_pid == tp->children[i])
            return "rank " + std::to_string(i + 1) + " exited before joining";
        }
        return {};
      };
    std::unique_ptr<ShmGroup> group;
    if (Status s = ShmGroup::join(o, &group); !s.ok())
      return Status::Error("tensor-parallel rank " + std::to_string(tp->rank) + ": " +
                           s.message());
    tp->group = std::move(group);
  }
  if (!artifact)
    return Status::Ok();
  hyrt_collectives_v0 *c = artifact->collectives();
  if (!c) {
    const std::string why = "rank " + std::to_string(tp->rank) + "'s artifact " + tp->dir +
                            " has no all-reduce (not compiled with --tp)";
    tp->group->abort(why);
    return Status::Error(why);
  }
  c->all_reduce_sum = allReduce;
  c->all_to_all_v = allToAllV;
  c->all_gather = allGather;
  c->ctx = tp;
  c->group_size = tp->size;
  c->failed = HYRT_COLLECTIVE_OK;
  // Every rank has its artifact open before any step runs; a rank that
  // could not open its own has aborted the group, which ends this wait.
  if (Status s = tp->group->barrier(); !s.ok())
    return Status::Error("tensor parallel: " + s.message());
  // Every rank has the segment mapped: its name can go now, so that a
  // crash of any rank leaves nothing behind in /dev/shm.
  if (tp->rank == 0 && !tp->across_machines)
    ::shm_unlink(tp->group_name.c_str()); // (a node's leader unlinks its own under MPI)
  tp->ready = true;
  return Status::Ok();
}

namespace {

// A step travels as floats through the all-reduce (rank 0's values, zeros
// from the others: x + 0 is x), so every field is an integer below 2^24
// (token ids, positions, page ids, counts; checked). Header, then the
// arrays in abi order.
enum StepKind { kStop = 0, kExtend = 1, kDecode = 2 };
constexpr size_t kHeader = 6;
constexpr int64_t kExact = int64_t(1) << 24;

Status exchange(TensorParallel *tp, std::vector<float> &buf) {
  if (Status s = tp->group->all_reduce_sum(buf.data(), buf.size()); !s.ok())
    return Status::Error("tensor parallel: sending a step: " + s.message());
  return Status::Ok();
}

Status publishStep(TensorParallel *tp, const hyrt_step_v0 &s, bool decode) {
  const int64_t T = s.num_tokens, S = s.num_seqs, P = s.max_pages_per_seq,
                R = s.num_logit_rows;
  std::vector<float> header = {float(decode ? kDecode : kExtend), float(T), float(S),
                               float(P), float(R), 0.0f};
  if (T >= kExact || S * P >= kExact || R > T)
    return Status::Error("tensor parallel: a step of " + std::to_string(T) + " tokens and " +
                         std::to_string(S * P) + " block-table entries is too large to send");
  // Every value is checked before anything is sent: a refused step must
  // leave the followers waiting for the next header, not for a body.
  std::vector<float> body;
  body.reserve(size_t(3 * T + 3 * S + S * P + R));
  bool exact = true;
  auto put = [&](const int32_t *p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      exact = exact && p[i] > -kExact && p[i] < kExact;
      body.push_back(float(p[i]));
    }
  };
  put(s.tokens, T);
  put(s.positions, T);
  put(s.token_seq, T);
  put(s.seq_token_start, S);
  put(s.seq_new_len, S);
  put(s.seq_prefix_len, S);
  put(s.block_tables, S * P);
  put(s.logit_rows, R);
  if (!exact)
    return Status::Error("tensor parallel: a step field (a token id, position or page id) "
                         "is past 2^24 and cannot be sent to the other ranks");
  if (Status st = exchange(tp, header); !st.ok())
    return st;
  return exchange(tp, body);
}

} // namespace

void lead_steps(Engine *engine, TensorParallel *tp) {
  if (tp->size > 1)
    engine->set_step_hook([tp](const hyrt_step_v0 &s, bool decode) {
      return publishStep(tp, s, decode);
    });
}

Status stop_followers(TensorParallel *tp) {
  if (tp->size == 1 || !tp->group)
    return Status::Ok();
  std::vector<float> header(kHeader, 0.0f); // kStop
  return exchange(tp, header);
}

Status follow_steps(Engine *engine, TensorParallel *tp) {
  std::vector<float> header(kHeader), body;
  std::vector<int32_t> fields;
  for (;;) {
    std::fill(header.begin(), header.end(), 0.0f);
    if (Status s = exchange(tp, header); !s.ok())
      return s;
    const int kind = int(header[0]);
    if (kind == kStop)
      return Status::Ok();
    const int64_t T = int64_t(header[1]), S = int64_t(header[2]), P = int64_t(header[3]),
                  R = int64_t(header[4]);
    body.assign(size_t(3 * T + 3 * S + S * P + R), 0.0f);
    if (Status s = exchange(tp, body); !s.ok())
      return s;
    fields.resize(body.size());
    for (size_t i = 0; i < body.size(); ++i)
      fields[i] = int32_t(body[i]);
    const int32_t *p = fields.data();
    hyrt_step_v0 step{};
    step.num_tokens = T;
    step.num_seqs = S;
    step.tokens = p, p += T;
    step.positions = p, p += T;
    step.token_seq = p, p += T;
    step.seq_token_start = p, p += S;
    step.seq_new_len = p, p += S;
    step.seq_prefix_len = p, p += S;
    step.block_tables = p, p += S * P;
    step.max_pages_per_seq = P;
    step.num_logit_rows = R;
    step.logit_rows = p;
    if (Status s = engine->run_foreign_step(step, kind == kDecode); !s.ok())
      return s;
  }
}

std::string check_ranks(const TensorParallel &tp) {
  for (size_t i = 0; i < tp.children.size(); ++i) {
    siginfo_t info{};
    if (::waitid(P_PID, id_t(tp.children[i]), &info,
                 WEXITED | WSTOPPED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid == 0)
      continue; // running (or not ours to see)
    const std::string who = "rank " + std::to_string(i + 1) + " (pid " +
                            std::to_string(tp.children[i]) + ")";
    switch (info.si_code) {
    case CLD_EXITED:
      return who + " exited with status " + std::to_string(info.si_status);
    case CLD_KILLED:
    case CLD_DUMPED:
      return who + " was killed by signal " + std::to_string(info.si_status);
    case CLD_STOPPED:
      return who + " is stopped (signal " + std::to_string(info.si_status) +
             "): it cannot take part in a step";
    default:
      break;
    }
  }
  if (!tp.children.empty() || !tp.group)
    return "";
  const std::vector<pid_t> pids = tp.group->local_pids();
  for (size_t r = 1; r < pids.size(); ++r) {
    if (pids[r] <= 0)
      continue;
    const std::string who =
        "rank " + std::to_string(r) + " (pid " + std::to_string(pids[r]) + ")";
    // "pid (comm) S ...": the state follows the last ')'.
    std::ifstream in("/proc/" + std::to_string(pids[r]) + "/stat");
    const std::string stat = in.is_open() ? std::string(std::istreambuf_iterator<char>(in),
                                                        std::istreambuf_iterator<char>())
                                          : std::string();
    const size_t close = stat.rfind(')');
    const char state = close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : 0;
    if (state == 0 || state == 'Z' || state == 'X')
      return who + " is gone (exited or killed)";
    if (state == 'T' || state == 't')
      return who + " is stopped: it cannot take part in a step";
  }
  return "";
}

Status finish_ranks(TensorParallel *tp, bool ok, int exit_code, const std::string &why) {
  if (tp->rank > 0) {
    // Once every rank is ready they meet the same errors, which rank 0
    // reports; under MPI an abort (MPI_Abort) could kill rank 0 before it
    // prints, so a follower then leaves normally (a failure of its own
    // reaches rank 0 as a collective's error or deadline).
    if (!ok && tp->group && !(tp->across_machines && tp->ready))
      tp->group->abort(why.empty() ? "rank " + std::to_string(tp->rank) + " stopped" : why);
    if (tp->across_machines)
      tp->group.reset(); // MPI_Finalize: mpirun counts a rank that skips it as failed
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    ::_exit(exit_code);
  }
  if (tp->size == 1)
    return Status::Ok();
  if (!ok) {
    if (tp->group)
      tp->group->abort(why.empty() ? "rank 0 stopped" : why);
    else // the others would wait for rank 0 until their deadline
      for (pid_t c : tp->children)
        ::kill(c, SIGKILL);
  }
  std::string failed;
  for (size_t i = 0; i < tp->children.size(); ++i) {
    int status = 0;
    while (::waitpid(tp->children[i], &status, 0) < 0 && errno == EINTR) {
    }
    const int rank = int(i) + 1;
    if (WIFSIGNALED(status) && ok)
      failed += (failed.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) +
                " was killed by signal " + std::to_string(WTERMSIG(status));
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && ok)
      failed += (failed.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) +
                " exited with status " + std::to_string(WEXITSTATUS(status));
  }
  tp->children.clear();
  tp->group.reset();
  if (!failed.empty())
    return Status::Error("tensor parallel: " + failed);
  return Status::Ok();
}

} // namespace hyrt
