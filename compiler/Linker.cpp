//===- Linker.cpp - link artifacts with the system C++ driver -------------===//

#include "compiler/Linker.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace hyc::compiler {

std::string runtimeLibDir() {
  if (const char *env = std::getenv("HYC_RUNTIME_DIR"))
    return env;
  return HYC_RUNTIME_LIB_DIR;
}

bool runCxxDriver(const std::vector<std::string> &args, std::string &error) {
  const char *cxx = std::getenv("CXX");
  std::string driver = cxx && *cxx ? cxx : "c++";
  std::vector<std::string> full = {driver};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &a : full)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);

  // Capture the driver's diagnostics in a temporary file for the error.
  char logPath[] = "/tmp/hyc-link-XXXXXX";
  int logFd = mkstemp(logPath);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (logFd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, logFd, 1);
    posix_spawn_file_actions_adddup2(&actions, logFd, 2);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, driver.c_str(), &actions, nullptr, argv.data(),
                        environ);
  posix_spawn_file_actions_destroy(&actions);
  std::string command;
  for (auto &a : full)
    command += a + " ";
  if (rc != 0) {
    error = "could not start the linker '" + driver + "' (is g++ installed?)";
    if (logFd >= 0) {
      close(logFd);
      unlink(logPath);
    }
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string log;
  if (logFd >= 0) {
    lseek(logFd, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = read(logFd, buf, sizeof(buf))) > 0 && log.size() < 8192)
      log.append(buf, n);
    close(logFd);
    unlink(logPath);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = "link failed: " + command + "\n" + log;
    return false;
  }
  return true;
}

namespace {
bool requireFile(const std::string &path, std::string &error) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0)
    return true;
  error = "runtime library " + path +
          " not found (set HYC_RUNTIME_DIR to the directory holding the hyc "
          "runtime archives)";
  return false;
}
} // namespace

bool linkSharedLibrary(const std::vector<std::string> &inputs,
                       const std::string &output, bool cpuKernels,
                       std::string &error) {
  std::string dir = runtimeLibDir();
  std::vector<std::string> args = {"-shared", "-o", output};
  args.insert(args.end(), inputs.begin(), inputs.end());
  if (cpuKernels) {
    if (!requireFile(dir + "/libhyrt_cpu.a", error))
      return false;
    args.push_back(dir + "/libhyrt_cpu.a");
  }
  if (!requireFile(dir + "/libhyrt_reference.a", error))
    return false;
  args.push_back(dir + "/libhyrt_reference.a");
  if (cpuKernels)
    args.push_back("-pthread"); // the runtime's thread pool
  for (const char *flag : {"-lm", "-Wl,-z,noexecstack", "-Wl,--no-undefined",
                           "-Wl,--exclude-libs,ALL"})
    args.push_back(flag);
  return runCxxDriver(args, error);
}

bool linkRelocatable(const std::vector<std::string> &inputs,
                     const std::string &output, std::string &error) {
  std::vector<std::string> args = {"-r", "-nostdlib", "-o", output};
  args.insert(args.end(), inputs.begin(), inputs.end());
  return runCxxDriver(args, error);
}

bool linkExecutable(const std::vector<std::string> &inputs,
                    const std::string &output, bool cpuKernels,
                    std::string &error) {
  std::string dir = runtimeLibDir();
  std::vector<std::string> libs = {"libhyrt_main.a", "libhyrt.a"};
  if (cpuKernels)
    libs.push_back("libhyrt_cpu.a");
  libs.push_back("libhyrt_reference.a");
  std::vector<std::string> args = {"-o", output};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (const std::string &lib : libs) {
    if (!requireFile(dir + "/" + lib, error))
      return false;
    args.push_back(dir + "/" + lib);
  }
  // libhyrt's Hugging Face tokenizer uses ICU (regex, normalization).
  for (const char *flag : {"-rdynamic", "-licui18n", "-licuuc", "-ldl", "-lpthread", "-lm",
                           "-Wl,-z,noexecstack"})
    args.push_back(flag);
  return runCxxDriver(args, error);
}

} // namespace hyc::compiler
