// Open MPI opened at run time (see mpi_library.h).
#include "mpi_library.h"

#include <cstring>
#include <dlfcn.h>
#include <mutex>

namespace hyrt::mpi {

namespace {

Library lib;
std::string failure;

/// Resolves every symbol of `lib`; the first missing one in `failure`.
/// Functions, and predefined handles (the addresses of Open MPI's global
/// objects), are both pointers: each slot gets dlsym's address.
bool resolve(void *handle) {
  bool ok = true;
  auto sym = [&](auto *slot, const char *name) {
    static_assert(sizeof(*slot) == sizeof(void *));
    void *p = dlsym(handle, name);
    if (!p && ok) {
      ok = false;
      failure = std::string("libmpi.so.40 has no ") + name + " (not Open MPI 4 or 5?)";
    }
    std::memcpy(static_cast<void *>(slot), &p, sizeof(p));
  };
  sym(&lib.Initialized, "MPI_Initialized");
  sym(&lib.Finalized, "MPI_Finalized");
  sym(&lib.Init_thread, "MPI_Init_thread");
  sym(&lib.Finalize, "MPI_Finalize");
  sym(&lib.Abort, "MPI_Abort");
  sym(&lib.Comm_rank, "MPI_Comm_rank");
  sym(&lib.Comm_size, "MPI_Comm_size");
  sym(&lib.Comm_split, "MPI_Comm_split");
  sym(&lib.Comm_free, "MPI_Comm_free");
  sym(&lib.Get_processor_name, "MPI_Get_processor_name");
  sym(&lib.Iallgather, "MPI_Iallgather");
  sym(&lib.Ibarrier, "MPI_Ibarrier");
  sym(&lib.Test, "MPI_Test");
  sym(&lib.Error_string, "MPI_Error_string");
  sym(&lib.comm_world, "ompi_mpi_comm_world");
  sym(&lib.comm_null, "ompi_mpi_comm_null");
  sym(&lib.float_type, "ompi_mpi_float");
  sym(&lib.char_type, "ompi_mpi_char");
  return ok;
}

} // namespace

const Library *library(std::string *why) {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
    // RTLD_GLOBAL: Open MPI's own components, which it dlopens, resolve
    // their symbols against libmpi and the libraries it brings.
    void *handle = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char *e = dlerror();
      failure = std::string("cannot open Open MPI (libmpi.so.40, Debian openmpi-bin): ") +
                (e ? e : "dlopen failed");
      return;
    }
    ok = resolve(handle);
  });
  if (!ok && why)
    *why = failure;
  return ok ? &lib : nullptr;
}

std::string error_text(const Library &m, const char *call, int rc) {
  char text[512] = {};
  int len = 0;
  std::string what = "code " + std::to_string(rc);
  if (m.Error_string(rc, text, &len) == kSuccess && len > 0)
    what = std::string(text, size_t(len));
  return std::string(call) + " failed: " + what;
}

} // namespace hyrt::mpi
