// main() of a standalone `--emit=exe` binary: `hyc run` with the artifact
// directory implied (the executable's own directory, where manifest.json,
// weights.bin and tokenizer.hytk lie) and the model linked into the
// executable. The entry points and globals are found with dlopen(NULL) +
// dlsym, so the executable must export them (-rdynamic or
// -Wl,--export-dynamic-symbol=hyc_*).
#include "hyrt/cli/cli.h"

#include <climits>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

/// Directory of the running executable (/proc/self/exe), falling back to
/// the directory part of argv[0].
std::string executable_dir(const char *argv0) {
  std::string path;
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0)
    path.assign(buf, size_t(n));
  else if (argv0)
    path = argv0;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return hyrt::cli_run_standalone(executable_dir(argc > 0 ? argv[0] : nullptr),
                                  args, std::cout, std::cerr);
}
