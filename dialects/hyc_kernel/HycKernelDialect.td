//===- HycKernelDialect.td - hyc_kernel dialect ------------*- tablegen -*-===//
//
// Memref-level microkernel dispatch and invocation: dispatch once (Pure,
// hoistable, returns a handle), invoke many.
//
//===----------------------------------------------------------------------===//

#ifndef HYC_KERNEL_DIALECT_TD
#define HYC_KERNEL_DIALECT_TD

include "mlir/IR/OpBase.td"

def HycKernel_Dialect : Dialect {
  let name = "hyc_kernel";
  let summary = "Microkernel dispatch/invoke at memref level";
  let description = [{
    The layer between the tensor-level `hyc` dialect and generated machine
    code. `*.dispatch` ops describe a kernel (shape, types, flags, epilogue)
    and return an opaque i64 handle; invoke ops run it on buffers. Dispatches
    are `Pure` so that CSE and LICM hoist them into an init function.
  }];
  let cppNamespace = "::hyc::kernel";
  let dependentDialects = ["::hyc::HycDialect", "::mlir::memref::MemRefDialect"];
}

class HycKernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<HycKernel_Dialect, mnemonic, traits>;

#endif // HYC_KERNEL_DIALECT_TD
