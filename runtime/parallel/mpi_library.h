// Open MPI, opened at run time (dlopen of libmpi.so.40, which Debian's
// openmpi-bin brings): only ranks spread over several machines use MPI, so
// nothing else links it, and a machine without Open MPI runs everything
// else. The declarations are the few this runtime calls, with Open MPI's
// ABI (its handles are pointers to its predefined objects; checked against
// Open MPI 4.1's mpi.h). Not MPICH: its handles are integers.
#ifndef HYRT_MPI_LIBRARY_H
#define HYRT_MPI_LIBRARY_H

#include <string>

namespace hyrt::mpi {

// Opaque handles, as Open MPI's mpi.h declares them.
using Comm = struct ompi_communicator_t *;
using Datatype = struct ompi_datatype_t *;
using Request = struct ompi_request_t *;

constexpr int kSuccess = 0;
constexpr int kUndefined = -32766;    // MPI_UNDEFINED
constexpr int kThreadSerialized = 2;  // MPI_THREAD_SERIALIZED

struct Library {
  int (*Initialized)(int *flag);
  int (*Finalized)(int *flag);
  int (*Init_thread)(int *argc, char ***argv, int required, int *provided);
  int (*Finalize)();
  int (*Abort)(Comm comm, int code);
  int (*Comm_rank)(Comm comm, int *rank);
  int (*Comm_size)(Comm comm, int *size);
  int (*Comm_split)(Comm comm, int color, int key, Comm *out);
  int (*Comm_free)(Comm *comm);
  int (*Get_processor_name)(char *name, int *len);
  int (*Iallgather)(const void *send, int send_count, Datatype send_type, void *recv,
                    int recv_count, Datatype recv_type, Comm comm, Request *request);
  int (*Ibarrier)(Comm comm, Request *request);
  int (*Test)(Request *request, int *flag, void *status);
  int (*Error_string)(int code, char *text, int *len);

  Comm comm_world, comm_null;
  Datatype float_type, char_type;
};

/// Open MPI's library, opened once; null with the reason in `why` when it
/// cannot be opened or lacks a symbol.
const Library *library(std::string *why);

/// "MPI_X failed: <Open MPI's text>" for return code `rc`.
std::string error_text(const Library &m, const char *call, int rc);

} // namespace hyrt::mpi

#endif // HYRT_MPI_LIBRARY_H
