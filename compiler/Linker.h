//===- Linker.h - link artifacts with the system C++ driver -----*- C++ -*-===//
#ifndef HYC_COMPILER_LINKER_H
#define HYC_COMPILER_LINKER_H

#include <string>
#include <vector>

namespace hyc::compiler {

/// Directory holding libhyrt_reference.a, libhyrt.a and libhyrt_main.a:
/// $HYC_RUNTIME_DIR if set, else the build tree this hyc was built in.
std::string runtimeLibDir();

/// Runs `c++ args...` (or $CXX) and waits; false with `error` holding the
/// command line and its exit status / output on failure.
bool runCxxDriver(const std::vector<std::string> &args, std::string &error);

/// Links the model object (and, for optimized targets, the generated
/// kernels' assembly plus the kernel drivers of libhyrt_cpu and its thread pool)
/// Partially links `inputs` (the model object and the kernels' assembly)
/// into one relocatable object: what --emit=obj writes, kernels included.
bool linkRelocatable(const std::vector<std::string> &inputs,
                     const std::string &output, std::string &error);

/// with the reference kernels into a shared library.
bool linkSharedLibrary(const std::vector<std::string> &inputs,
                       const std::string &output, bool cpuKernels,
                       std::string &error);

/// Links the same inputs with libhyrt and its standalone main into an
/// executable.
bool linkExecutable(const std::vector<std::string> &inputs,
                    const std::string &output, bool cpuKernels,
                    std::string &error);

/// Writes assembly that defines the exported NUL-terminated string
/// `hyc_artifact_desc_v0` = `json`: the library's own description
/// (runtime/include/hyrt/abi.h), linked in with the model.
bool writeDescriptionAsm(const std::string &path, const std::string &json,
                         std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_LINKER_H
