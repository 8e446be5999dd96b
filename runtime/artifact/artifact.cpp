// Artifact loading: manifest, CPU features, the compiled library and its
// entry points, weights.bin and the tokenizer (see hyrt/artifact/artifact.h).
#include "hyrt/artifact/artifact.h"

#include "hyrt/artifact/cpu_features.h"
#include "hyrt/artifact/kernel_self_test.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hyrt {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr int64_t kTensorAlignment = 64;

std::string join(const std::string &dir, const std::string &name) {
  if (name.empty() || name[0] == '/' || dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool is_regular_file(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// Closes a file descriptor on scope exit.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

Artifact::~Artifact() {
  if (weights_base_) {
    if (weights_mapped_)
      ::munmap(weights_base_, weights_alloc_bytes_);
    else
      std::free(weights_base_);
  }
  if (library_)
    ::dlclose(library_);
}

Status Artifact::open(const std::string &dir, const ArtifactOptions &options,
                      std::unique_ptr<Artifact> *out) {
  std::unique_ptr<Artifact> art(new Artifact());
  art->dir_ = dir;
  const std::string manifest_path = join(dir, "manifest.json");
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::Error("artifact directory " + dir + " not found");
    return Status::Error(manifest_path + ": not found (not a hyc artifact?)");
  }
  std::stringstream text;
  text << in.rdbuf();
  if (Status s = parse_manifest(text.str(), manifest_path, &art->manifest_);
      !s.ok())
    return s;
  if (Status s = art->choose_and_self_test(options); !s.ok())
    return s;
  if (Status s = art->load_weights(options); !s.ok())
    return s;
  if (Status s = art->load_tokenizer(); !s.ok())
    return s;
  *out = std::move(art);
  return Status::Ok();
}

Status Artifact::choose(const ArtifactOptions &options,
                        const std::vector<RefusedVariant> &refused) {
  std::string forced = options.isa;
  if (forced.empty())
    if (const char *env = std::getenv("HYC_ISA"))
      forced = env;
  std::vector<std::string> host = host_cpu_features();
  if (!options.check_cpu_features)
    for (const Variant &v : manifest_.variants)
      host.insert(host.end(), v.cpu_features.begin(), v.cpu_features.end());
  return choose_variant(manifest_.variants, host, forced, host_amx_note(), &variant_,
                        &variant_reason_, refused);
}

void Artifact::unload_library() {
  if (library_)
    ::dlclose(library_);
  library_ = nullptr;
  extend_ = decode_ = nullptr;
  profile_ = nullptr;
  observe_ = nullptr;
  collectives_ = nullptr;
}

Status Artifact::choose_and_self_test(const ArtifactOptions &options) {
  const std::string manifest_path = join(dir_, "manifest.json");
  const char *env = std::getenv("HYC_SELFTEST");
  const char *isa_env = std::getenv("HYC_ISA");
  const bool forced = !options.isa.empty() || (isa_env && *isa_env);
  std::string skipped;
  if (!options.self_test)
    skipped = "skipped (ArtifactOptions::self_test is off)";
  else if (env && std::strcmp(env, "0") == 0)
    skipped = "skipped (HYC_SELFTEST=0)";
  else if (!options.check_cpu_features)
    skipped = "skipped (CPU features are not checked, so the kernels may not run here)";
  std::vector<RefusedVariant> refused;
  std::string history; // variants refused on the way, for --verbose
  for (;;) {
    if (Status s = choose(options, refused); !s.ok())
      return Status::Error(manifest_path + ": " + s.message());
    if (Status s = load_library(options); !s.ok())
      return s;
    const std::string &name = variant().name;
    if (!skipped.empty()) {
      self_test_summary_ = name + ": " + skipped;
      return Status::Ok();
    }
    ::dlerror();
    const auto *table =
        static_cast<const hyrt_kernel_table_v0 *>(::dlsym(library_, "hyc_kernels_v0"));
    if (!table) {
      self_test_summary_ = history + name + ": nothing to run (the library lists no " +
                           "generated kernels: hyc_kernels_v0 absent)";
      return Status::Ok();
    }
    const KernelSelfTestResult r = self_test_kernels(*table);
    if (r.passed) {
      self_test_summary_ = history + name + ": " + describe_self_test(r);
      return Status::Ok();
    }
    const std::string library = join(dir_, variant().library);
    std::fprintf(stderr,
                 "hyc: warning: %s: variant %s refused: kernel self-test failed: %s%s\n",
                 library.c_str(), name.c_str(), r.failure.c_str(),
                 forced ? "" : "; loading the next best variant");
    if (forced)
      return Status::Error(library + ": variant " + name + " (forced by HYC_ISA) failed " +
                           "its kernel self-test: " + r.failure +
                           " (unset HYC_ISA to run the next best variant)");
    history += name + " refused (" + r.failure + "); ";
    refused.push_back({name, "failed its kernel self-test (kernel " + r.failed_kernel + ")"});
    unload_library();
  }
}

Status Artifact::load_library(const ArtifactOptions &options) {
  const Manifest &m = manifest_;
  const Variant &v = variant();
  // "self": the executable has one variant linked in; another variant
  // chosen on this host loads from its library as usual.
  const bool self = options.library_override == "self" &&
                    (m.executable_variant.empty() || m.executable_variant == v.name);
  const std::string name = options.library_override.empty() ? v.library
                           : self || options.library_override != "self"
                               ? options.library_override
                               : v.library;
  std::string path;
  if (name == "self") {
    path = "(this executable)";
    library_ = ::dlopen(nullptr, RTLD_NOW);
  } else {
    path = join(dir_, name);
    if (!is_regular_file(path))
      return Status::Error(path + ": library named by manifest.json not found");
    // dlopen maps what the headers say: a truncated file would fault.
    if (Status s = check_elf_file(path); !s.ok())
      return s;
    // RTLD_NODELETE: optimized artifacts keep a thread pool and thread_local
    // kernel scratch; the code they run must outlive every thread that
    // touched it, which only the end of the process guarantees.
    library_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
  if (!library_) {
    const char *err = ::dlerror();
    return Status::Error(path + ": cannot load: " + (err ? err : "?"));
  }
  auto lookup = [&](const std::string &symbol, void **out) -> Status {
    ::dlerror();
    *out = ::dlsym(library_, symbol.c_str());
    if (!*out)
      return Status::Error(path + ": missing symbol " + symbol +
                           (name == "self"
                                ? " (was the executable linked with "
                                  "-rdynamic?)"
                                : ""));
    return Status::Ok();
  };
  void *abi = nullptr, *arena = nullptr, *extend = nullptr, *decode = nullptr;
  if (Status s = lookup("hyc_abi_version", &abi); !s.ok())
    return s;
  const int32_t lib_abi = *static_cast<const int32_t *>(abi);
  if (lib_abi != HYRT_ABI_VERSION || lib_abi != m.abi_version)
    return Status::Error(path + ": hyc_abi_version: expected " +
                         std::to_string(m.abi_version) +
                         " (manifest.json and this runtime), found " +
                         std::to_string(lib_abi));
  if (Status s = lookup("hyc_arena_bytes", &arena); !s.ok())
    return s;
  const int64_t lib_arena = *static_cast<const int64_t *>(arena);
  if (lib_arena < 0)
    return Status::Error(path + ": hyc_arena_bytes: expected >= 0, found " +
                         std::to_string(lib_arena));
  arena_bytes_ = std::max(lib_arena, v.arena_bytes);
  // The library's own description, checked against the manifest before any
  // of its code runs (beyond its ELF constructors).
  ::dlerror();
  const char *desc = static_cast<const char *>(::dlsym(library_, "hyc_artifact_desc_v0"));
  if (!desc)
    return Status::Error(path + ": no hyc_artifact_desc_v0 (compiled by an older hyc, "
                                "or not a hyc artifact): recompile the artifact with "
                                "this hyc");
  ArtifactDescription lib_desc;
  if (Status s = parse_description(desc, path, &lib_desc); !s.ok())
    return s;
  const size_t slash = path.rfind('/');
  if (Status s = check_description(lib_desc, m, size_t(variant_),
                                   slash == std::string::npos ? path
                                                              : path.substr(slash + 1));
      !s.ok())
    return Status::Error(dir_ + ": " + s.message());
  if (Status s = lookup(m.extend_symbol, &extend); !s.ok())
    return s;
  if (Status s = lookup(m.decode_symbol, &decode); !s.ok())
    return s;
  extend_ = reinterpret_cast<hyrt_entry_fn_v0>(extend);
  decode_ = reinterpret_cast<hyrt_entry_fn_v0>(decode);
  // Optional: artifacts from before the profiler (and hand-written test
  // fixtures) have none, and then nothing can be profiled.
  ::dlerror();
  if (void *profile = ::dlsym(library_, "hyc_profile_v0"))
    profile_ = reinterpret_cast<hyrt_profile_fn_v0>(profile)();
  // Only calibration builds observe activations.
  if (void *observe = ::dlsym(library_, "hyc_observe_v0"))
    observe_ = reinterpret_cast<hyrt_observe_fn_v0>(observe)();
  // Only tensor-parallel ranks' code all-reduces across ranks.
  if (void *collectives = ::dlsym(library_, "hyc_collectives_v0"))
    collectives_ = reinterpret_cast<hyrt_collectives_fn_v0>(collectives)();
  return Status::Ok();
}

Status Artifact::load_weights(const ArtifactOptions &options) {
  const std::string path = join(dir_, manifest_.weights_file);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::Error(path + ": cannot open: " + std::strerror(errno));
  FdGuard guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return Status::Error(path + ": not a regular file");
  const int64_t file_size = st.st_size;
  for (const TensorEntry &t : manifest_.tensors) {
    if (t.offset % kTensorAlignment != 0)
      return Status::Error(path + ": tensor " + t.name + " at offset " +
                           std::to_string(t.offset) + " is not " +
                           std::to_string(kTensorAlignment) +
                           "-byte aligned");
    if (t.offset > file_size || t.nbytes > file_size - t.offset)
      return Status::Error(path + ": tensor " + t.name + " at offset " +
                           std::to_string(t.offset) + " + " +
                           std::to_string(t.nbytes) +
                           " bytes exceeds file size " +
                           std::to_string(file_size));
  }

  if (file_size > 0 && options.mmap_weights) {
    void *p = ::mmap(nullptr, size_t(file_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
      return Status::Error(path + ": mmap of " + std::to_string(file_size) +
                           " bytes failed: " + std::strerror(errno));
    weights_base_ = p;
    weights_alloc_bytes_ = size_t(file_size);
    weights_mapped_ = true;
  } else if (file_size > 0) {
    // Anonymous memory on 2 MiB boundaries so that transparent huge pages
    // back it: weight streaming is TLB-bound with 4 KiB pages.
    const size_t bytes = (size_t(file_size) + kHugePage - 1) / kHugePage *
                         kHugePage;
    void *p = nullptr;
    if (::posix_memalign(&p, kHugePage, bytes) != 0)
      return Status::Error(path + ": cannot allocate " +
                           std::to_string(bytes) + " bytes for the weights");
    weights_base_ = p;
    weights_alloc_bytes_ = bytes;
    // Advisory either way: THP may be disabled on the host.
    ::madvise(p, bytes, options.huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    int64_t done = 0;
    while (done < file_size) {
      const ssize_t n = ::pread(fd, static_cast<char *>(p) + done,
                                size_t(std::min<int64_t>(file_size - done,
                                                         int64_t(1) << 30)),
                                done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return Status::Error(path + ": read " + std::to_string(done) +
                             " of " + std::to_string(file_size) + " bytes: " +
                             (n < 0 ? std::strerror(errno) : "unexpected end"));
      done += n;
    }
  }
  weight_ptrs_.clear();
  for (int64_t i : variant().weights)
    weight_ptrs_.push_back(static_cast<char *>(weights_base_) + manifest_.tensors[size_t(i)].offset);
  return options.verify_weights ? verify_weights() : Status::Ok();
}

Status Artifact::verify_weights() const {
  // The manifest's checksums equal the library's (check_description), so
  // a match here means the bytes are the ones the library was compiled with.
  // Hashing runs at memory speed (about 7 GB/s a core): tensors are split
  // over a few threads, the first mismatch in table order is reported.
  std::vector<int64_t> todo;
  std::vector<bool> seen(manifest_.tensors.size(), false);
  for (int64_t i : variant().weights)
    if (!seen[size_t(i)]) {
      seen[size_t(i)] = true;
      todo.push_back(i);
    }
  std::vector<std::string> found(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < todo.size();) {
      const TensorEntry &t = manifest_.tensors[size_t(todo[k])];
      found[k] = tensor_hash(static_cast<const char *>(weights_base_) + t.offset,
                             size_t(t.nbytes));
    }
  };
  const size_t threads =
      std::min<size_t>({8, std::max(1u, std::thread::hardware_concurrency()), todo.size()});
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  const std::string path = join(dir_, manifest_.weights_file);
  for (size_t k = 0; k < todo.size(); ++k) {
    const TensorEntry &t = manifest_.tensors[size_t(todo[k])];
    if (found[k] != t.xxh3)
      return Status::Error(path + ": tensor " + t.name + " (offset " +
                           std::to_string(t.offset) + ", " + std::to_string(t.nbytes) +
                           " bytes) has xxh3 " + found[k] + ", expected " + t.xxh3 +
                           " (manifest.json and the library): the file is damaged "
                           "(--no-verify skips this check)");
  }
  return Status::Ok();
}

Status Artifact::load_tokenizer() {
  if (manifest_.tokenizer.empty())
    return Status::Ok();
  const std::string path = join(dir_, manifest_.tokenizer);
  if (!is_regular_file(path))
    return Status::Error(path + ": tokenizer named by manifest.json not found");
  auto tok = std::make_unique<Tokenizer>();
  if (Status s = Tokenizer::load(path, tok.get()); !s.ok())
    return Status::Error(path + ": " + s.message());
  if (tok->vocab_size() > manifest_.model.vocab_size)
    return Status::Error(path + ": tokenizer has " +
                         std::to_string(tok->vocab_size()) +
                         " tokens, expected at most model.vocab_size " +
                         std::to_string(manifest_.model.vocab_size));
  tokenizer_ = std::move(tok);
  return Status::Ok();
}

} // namespace hyrt
