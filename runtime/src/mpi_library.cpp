// Open MPI opened at run time (see mpi_library.h).
#include "mpi_library.h"

#include <dlfcn.h>
#include <mutex>
#include <type_traits>

namespace hyrt::mpi {

namespace {

Library lib;
std::string failure;

/// Resolves every symbol of `lib`; the first missing one in `failure`.
bool resolve(void *handle) {
  bool ok = true;
  auto fn = [&](auto **slot, const char *name) {
    void *p = dlsym(handle, name);
    if (!p && ok) {
      ok = false;
      failure = std::string("libmpi.so.40 has no ") + name + " (not Open MPI 4 or 5?)";
    }
    *reinterpret_cast<void **>(slot) = p;
  };
  fn(&lib.Initialized, "MPI_Initialized");
  fn(&lib.Finalized, "MPI_Finalized");
  fn(&lib.Init_thread, "MPI_Init_thread");
  fn(&lib.Finalize, "MPI_Finalize");
  fn(&lib.Abort, "MPI_Abort");
  fn(&lib.Comm_rank, "MPI_Comm_rank");
  fn(&lib.Comm_size, "MPI_Comm_size");
  fn(&lib.Comm_split, "MPI_Comm_split");
  fn(&lib.Comm_free, "MPI_Comm_free");
  fn(&lib.Get_processor_name, "MPI_Get_processor_name");
  fn(&lib.Iallgather, "MPI_Iallgather");
  fn(&lib.Ibarrier, "MPI_Ibarrier");
  fn(&lib.Test, "MPI_Test");
  fn(&lib.Error_string, "MPI_Error_string");
  // Predefined handles are the addresses of Open MPI's global objects.
  auto global = [&](auto *slot, const char *name) {
    void *p = dlsym(handle, name);
    if (!p && ok) {
      ok = false;
      failure = std::string("libmpi.so.40 has no ") + name + " (not Open MPI?)";
    }
    *slot = static_cast<std::remove_pointer_t<decltype(slot)>>(p);
  };
  global(&lib.comm_world, "ompi_mpi_comm_world");
  global(&lib.comm_null, "ompi_mpi_comm_null");
  global(&lib.float_type, "ompi_mpi_float");
  global(&lib.char_type, "ompi_mpi_char");
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
