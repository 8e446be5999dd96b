//===- RunFromCheckpoint.cpp - `hyc run|serve|bench MODEL` ----------------===//
//
// MODEL is resolved to an artifact before the runtime command sees it:
//
//   artifact (a directory with manifest.json)    used as it is
//   checkpoint (a directory with config.json,    looked up in the cache under
//   a .gguf or a llama2.c .bin)                  its key; compiled there once
//
// The key hashes what makes the artifact: hyc's version, the runtime ABI
// and this hyc executable's identity (an artifact from another build is not
// reused), the compile options (the defaults plus --compile-opt), and the
// checkpoint's files as found: path, size and modification time, not their
// bytes (hashing gigabytes of weights on every start would cost more than
// the cache saves). Entries are compiled into a temporary sibling and
// renamed into place, so a concurrent run never sees half an artifact; an
// entry that does not open is compiled again.
//
//===----------------------------------------------------------------------===//

#include "compiler/RunFromCheckpoint.h"

#include "compiler/CompileCommand.h"
#include "compiler/CompileIdentity.h"
#include "compiler/CompileOptions.h"
#include "hyrt/abi.h"
#include "hyrt/artifact/artifact.h"
#include "models/io/mapped_file.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace hyc::compiler {

namespace {

const char *kModelHelp = R"(
MODEL in place of ART: a checkpoint (a Hugging Face directory with
config.json, a .gguf file or a llama2.c .bin) is compiled once into a
cache and the cached artifact runs; later calls reuse it without compiling.
The cache key covers the checkpoint's files (path, size, modification time),
the compile options and this hyc build.
  --cache-dir DIR       the cache (default $HYC_CACHE_DIR, else
                        $XDG_CACHE_HOME/hyc, else ~/.cache/hyc)
  --compile-opt OPTS    `hyc compile` options for that compile, e.g.
                        --compile-opt "--quant w8a8 --max-seq-len 512"
                        (repeatable; part of the key)
  --recompile           compile again even when the cache has the artifact
)";

/// The driver's own flags, taken out of argv before the command sees it.
struct DriverFlags {
  std::string cacheDir;
  std::vector<std::string> compileOpts;
  bool recompile = false;
};

/// Splits argv[1..) into the driver's flags and the command's arguments.
bool takeDriverFlags(int argc, char **argv, DriverFlags &flags, std::vector<std::string> &rest,
                     std::string &error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char *name, std::string &out) {
      const std::string flag = name, prefix = flag + "=";
      if (a.compare(0, prefix.size(), prefix) == 0) {
        out = a.substr(prefix.size());
        return true;
      }
      if (a != flag)
        return false;
      if (i + 1 >= argc) {
        error = flag + " needs a value";
        return true;
      }
      out = argv[++i];
      return true;
    };
    std::string v;
    if (value("--cache-dir", v)) {
      flags.cacheDir = v;
      if (v.empty() && error.empty())
        error = "--cache-dir expects a directory, got ''";
    } else if (value("--compile-opt", v)) {
      std::istringstream words(v);
      for (std::string w; words >> w;)
        flags.compileOpts.push_back(w);
    } else if (a == "--recompile") {
      flags.recompile = true;
    } else {
      rest.push_back(a);
      continue;
    }
    if (!error.empty())
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// What MODEL is
//===----------------------------------------------------------------------===//

enum class ModelKind { Artifact, Checkpoint };

const char *kExpected = "expected an artifact directory (manifest.json), a Hugging Face "
                        "checkpoint directory (config.json), a .gguf file or a llama2.c "
                        ".bin file";

bool isFile(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool hasGgufMagic(const std::string &path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

bool classifyModel(const std::string &path, ModelKind &kind, std::string &error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    error = path + ": " + std::strerror(errno) + "; " + kExpected;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    if (isFile(path + "/manifest.json"))
      kind = ModelKind::Artifact;
    else if (isFile(path + "/config.json"))
      kind = ModelKind::Checkpoint;
    else
      error = path +
              " is a directory with neither manifest.json (an artifact) nor "
              "config.json (a Hugging Face checkpoint); " +
              kExpected;
    return error.empty();
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + " is " + io::non_regular_kind(st.st_mode) + "; " + kExpected;
    return false;
  }
  if (endsWith(path, ".gguf") || endsWith(path, ".bin") || hasGgufMagic(path)) {
    kind = ModelKind::Checkpoint;
    return true;
  }
  error = path + " is a file that is neither GGUF nor a llama2.c .bin; " + kExpected;
  return false;
}

//===----------------------------------------------------------------------===//
// The cache: where, which entry, is it whole
//===----------------------------------------------------------------------===//

/// --cache-dir, else $HYC_CACHE_DIR, else $XDG_CACHE_HOME/hyc (an absolute
/// path, as the XDG spec asks), else $HOME/.cache/hyc.
bool cacheRoot(const DriverFlags &flags, std::string &root, std::string &error) {
  auto env = [](const char *name) {
    const char *v = std::getenv(name);
    return std::string(v ? v : "");
  };
  const std::string xdg = env("XDG_CACHE_HOME");
  if (!flags.cacheDir.empty())
    root = flags.cacheDir;
  else if (!env("HYC_CACHE_DIR").empty())
    root = env("HYC_CACHE_DIR");
  else if (!xdg.empty() && xdg[0] == '/')
    root = xdg + "/hyc";
  else if (!env("HOME").empty())
    root = env("HOME") + "/.cache/hyc";
  else
    error = "no cache directory: HOME is not set; give --cache-dir DIR or set "
            "HYC_CACHE_DIR";
  while (root.size() > 1 && root.back() == '/')
    root.pop_back();
  return error.empty();
}

/// A cache another user can write to could hand this process a library to
/// load: refused, as `ssh` refuses a key file others can read.
bool checkCacheOwnership(const std::string &root, std::string &error) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0)
    return true; // created later, by us
  if (!S_ISDIR(st.st_mode))
    error = "cache directory " + root + " is not a directory";
  else if (st.st_uid != ::geteuid() && st.st_uid != 0)
    error = "cache directory " + root + " belongs to another user (uid " +
            std::to_string(st.st_uid) + "); its artifacts would run as you";
  else if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
    error = "cache directory " + root + " is writable by every user; its artifacts " +
            "would run as you (chmod o-w it, or give another --cache-dir)";
  return error.empty();
}

/// "path size mtime" of this hyc executable: any rebuild changes the key.
std::string buildIdentity() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  struct stat st {};
  if (ec || ::stat(exe.c_str(), &st) != 0)
    return "unknown";
  return exe.string() + " " + std::to_string(st.st_size) + " " +
         std::to_string(int64_t(st.st_mtim.tv_sec)) + "." +
         std::to_string(int64_t(st.st_mtim.tv_nsec));
}

/// The text the cache key hashes (what makes the artifact).
std::string cacheKeyText(const CompileOptions &options) {
  return std::string("hyc ") + kHycVersion + "\nruntime ABI " + std::to_string(HYRT_ABI_VERSION) +
         "\nbuild " + buildIdentity() + "\n" + compileIdentityText(options);
}

/// The entry's directory name: the checkpoint's name (letters, digits, '.',
/// '-', '_'; at most 48) and the key.
std::string entryName(const std::string &checkpoint, const std::string &key) {
  std::string base = checkpoint;
  while (base.size() > 1 && base.back() == '/')
    base.pop_back();
  base = base.substr(base.find_last_of('/') + 1);
  for (const char *ext : {".gguf", ".bin"})
    if (endsWith(base, ext))
      base.resize(base.size() - std::strlen(ext));
  std::string name;
  for (char c : base)
    if (name.size() < 48)
      name +=
          std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  if (name.empty() || name[0] == '.')
    name = "model" + name;
  return name + "-" + key + ".hyc";
}

/// Whether the cached artifact opens: manifest, every variant's library,
/// weights.bin's size and layout, tokenizer. Its checksums are left to the
/// command (it verifies them unless --no-verify), so this costs
/// milliseconds.
bool artifactOpens(const std::string &dir, std::string &why) {
  hyrt::ArtifactOptions options;
  options.mmap_weights = true;
  options.verify_weights = false;
  options.self_test = false;
  options.check_cpu_features = false;
  std::unique_ptr<hyrt::Artifact> artifact;
  hyrt::Status st = hyrt::Artifact::open(dir, options, &artifact);
  // open() loads one variant; the host may need another.
  for (size_t v = 0; st.ok() && v < artifact->manifest().variants.size(); ++v)
    if (const std::string &library = artifact->manifest().variants[v].library; library != "self")
      st = hyrt::check_elf_file(dir + "/" + library);
  why = st.ok() ? "" : st.message();
  return st.ok();
}

std::string compiledDate(const std::string &dir) {
  struct stat st {};
  if (::stat((dir + "/manifest.json").c_str(), &st) != 0)
    return "at an unknown date";
  char text[64];
  std::tm local{};
  ::localtime_r(&st.st_mtim.tv_sec, &local);
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

/// Temporary directories a killed compile left behind, a day or more old
/// (a younger one may belong to a compile still running).
void removeStaleTemporaries(const std::string &root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto dayAgo = fs::file_time_type::clock::now() - std::chrono::hours(24);
  for (const fs::directory_entry &e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 && e.last_write_time(ec) < dayAgo && !ec)
      fs::remove_all(e.path(), ec);
  }
}

//===----------------------------------------------------------------------===//
// Compiling into the cache
//===----------------------------------------------------------------------===//

/// Creates `dir` and its parents (0700: a per-user cache).
bool makeDirectories(const std::string &dir, std::string &error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec)
    ::chmod(dir.c_str(), 0700);
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      ::access(dir.c_str(), W_OK | X_OK) == 0)
    return true;
  error = "cannot write to the cache directory " + dir + ": " +
          (ec ? ec.message() : std::strerror(errno)) +
          " (give --cache-dir DIR or set HYC_CACHE_DIR to a writable directory)";
  return false;
}

/// Moves `entry` aside (rename is atomic: a reader sees it whole or not at
/// all), then deletes it.
void discardEntry(const std::string &root, const std::string &entry) {
  std::error_code ec;
  std::string aside = root + "/.tmp-discard-XXXXXX";
  if (!::mkdtemp(aside.data()))
    return;
  std::rename(entry.c_str(), (aside + "/old").c_str());
  std::filesystem::remove_all(aside, ec);
}

/// `hyc compile CKPT -o TMP OPTS...` with its steps on stderr, then TMP
/// renamed to `entry` (the one there first discarded with `replace`).
/// Returns the compile's exit code.
int compileIntoCache(const std::string &checkpoint, const std::vector<std::string> &opts,
                     const std::string &root, const std::string &entry, bool replace) {
  std::string tmp = root + "/.tmp-XXXXXX";
  if (!::mkdtemp(tmp.data())) {
    std::fprintf(stderr, "hyc: cannot create a directory in the cache %s: %s\n", root.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::vector<std::string> args = {"compile", checkpoint};
  args.insert(args.end(), opts.begin(), opts.end());
  args.insert(args.end(), {"-o", tmp});
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int rc = runCompileCommand(int(args.size()), argv.data(), [&](const std::string &s) {
    std::fprintf(stderr, "hyc:   [%5.1f s] %s\n", elapsed(), s.c_str());
  });
  std::error_code ec;
  if (rc != 0) {
    std::filesystem::remove_all(tmp, ec);
    std::fprintf(stderr, "hyc: compiling %s failed (above); nothing was cached\n",
                 checkpoint.c_str());
    return rc;
  }
  ::chmod(tmp.c_str(), 0755);
  if (replace)
    discardEntry(root, entry);
  if (std::rename(tmp.c_str(), entry.c_str()) != 0) {
    // ENOTEMPTY / EEXIST: a concurrent run put its artifact there first; it
    // is the same compile, so it is used and this one dropped.
    const int why = errno;
    std::filesystem::remove_all(tmp, ec);
    if (why != ENOTEMPTY && why != EEXIST) {
      std::fprintf(stderr, "hyc: cannot move the compiled artifact to %s: %s\n", entry.c_str(),
                   std::strerror(why));
      return 1;
    }
  }
  std::fprintf(stderr, "hyc: compiled %s in %.1f s\n", checkpoint.c_str(), elapsed());
  return 0;
}

/// Compile options for the cache's compile of `checkpoint`, checked as
/// `hyc compile` checks them; `options` is what the key hashes.
bool cacheCompileOptions(const std::string &checkpoint, const std::vector<std::string> &opts,
                         CompileOptions &options, std::string &error) {
  for (const std::string &o : opts)
    if (o == "-o" || o.rfind("--output", 0) == 0 || o == "--help" || o.rfind("--tp-rank", 0) == 0 ||
        o.rfind("--compile-to", 0) == 0) {
      error = "--compile-opt: " + o +
              " is not for a cached compile (the cache picks the "
              "output; use `hyc compile` for the others)";
      return false;
    }
  std::vector<std::string> args = {"compile", checkpoint};
  args.insert(args.end(), opts.begin(), opts.end());
  args.insert(args.end(), {"-o", "cache"});
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  if (OptionError refused; !parseCompileOptions(int(argv.size()), argv.data(), options, refused)) {
    error = "--compile-opt: " + refused.message;
    return false;
  }
  if (!options.emitsArtifact()) {
    error = "--compile-opt: --emit=" + options.emit + " writes no artifact to run";
    return false;
  }
  return true;
}

/// The cached artifact of `checkpoint`, compiled first when the cache lacks
/// it (or it does not open, or --recompile). Returns an exit code; 0 with
/// `artifact` set.
int resolveCheckpoint(const std::string &checkpoint, const DriverFlags &flags,
                      std::string &artifact) {
  std::string error, root;
  CompileOptions options;
  if (!cacheCompileOptions(checkpoint, flags.compileOpts, options, error) ||
      !cacheRoot(flags, root, error) || !checkCacheOwnership(root, error)) {
    std::fprintf(stderr, "hyc: %s\n", error.c_str());
    return error.rfind("--compile-opt", 0) == 0 ? 2 : 1;
  }
  const std::string text = cacheKeyText(options);
  const std::string entry =
      root + "/" + entryName(checkpoint, hyrt::tensor_hash(text.data(), text.size()));
  struct stat st {};
  const bool present = ::stat(entry.c_str(), &st) == 0;
  std::string why;
  if (present && !flags.recompile && artifactOpens(entry, why)) {
    std::fprintf(stderr, "hyc: using cached artifact %s (compiled %s)\n", entry.c_str(),
                 compiledDate(entry).c_str());
    artifact = entry;
    return 0;
  }
  // Checked again once created: another user may have made it first.
  if (!makeDirectories(root, error) || !checkCacheOwnership(root, error)) {
    std::fprintf(stderr, "hyc: %s\n", error.c_str());
    return 1;
  }
  if (!present)
    std::fprintf(stderr, "hyc: compiling %s (first run; cached at %s)\n", checkpoint.c_str(),
                 entry.c_str());
  else if (flags.recompile)
    std::fprintf(stderr, "hyc: compiling %s again (--recompile; cached at %s)\n",
                 checkpoint.c_str(), entry.c_str());
  else
    std::fprintf(stderr, "hyc: cached artifact %s does not open (%s); compiling %s again\n",
                 entry.c_str(), why.c_str(), checkpoint.c_str());
  removeStaleTemporaries(root);
  if (int rc = compileIntoCache(checkpoint, flags.compileOpts, root, entry, present); rc != 0)
    return rc;
  artifact = entry;
  return 0;
}

int runWith(const ArtifactCommand &command, const std::vector<std::string> &args) {
  std::vector<std::string> all = {command.name};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  return command.run(int(all.size()), argv.data());
}

bool givesModelName(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "--model-name" || a.rfind("--model-name=", 0) == 0)
      return true;
  return false;
}

} // namespace

int runOnModel(const ArtifactCommand &command, int argc, char **argv) {
  const std::string who = "hyc " + command.name;
  DriverFlags flags;
  std::vector<std::string> args;
  std::string error;
  if (!takeDriverFlags(argc, argv, flags, args, error)) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), error.c_str());
    return 2;
  }
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      const int rc = runWith(command, args);
      std::fflush(stdout);
      std::fputs(kModelHelp, stdout);
      return rc;
    }
  std::vector<std::string> all = {command.name};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char *> allArgv;
  for (std::string &a : all)
    allArgv.push_back(a.data());
  const int at = command.artifactIndex(int(all.size()), allArgv.data()) - 1;
  // No MODEL, or flags the command refuses: it says so itself.
  if (at < 0)
    return runWith(command, args);
  ModelKind kind;
  if (!classifyModel(args[at], kind, error)) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), error.c_str());
    return 1;
  }
  if (kind == ModelKind::Artifact) {
    if (!flags.compileOpts.empty() || flags.recompile) {
      std::fprintf(stderr,
                   "%s: %s is an artifact, compiled already: --compile-opt and "
                   "--recompile apply to a checkpoint\n",
                   who.c_str(), args[at].c_str());
      return 2;
    }
    return runWith(command, args);
  }
  const std::string checkpoint = args[at];
  if (int rc = resolveCheckpoint(checkpoint, flags, args[at]); rc != 0)
    return rc;
  if (command.namesModel && !givesModelName(args)) {
    std::string name = checkpoint;
    while (name.size() > 1 && name.back() == '/')
      name.pop_back();
    args.insert(args.end(), {"--model-name", name.substr(name.find_last_of('/') + 1)});
  }
  return runWith(command, args);
}

} // namespace hyc::compiler
