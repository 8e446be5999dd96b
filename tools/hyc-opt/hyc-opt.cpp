//===- hyc-opt.cpp - mlir-opt with the hyc dialects and passes ------------===//

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<hyc::HycDialect, hyc::kernel::HycKernelDialect, hyc::cpu::HycCpuDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::LLVM::LLVMDialect>();
  mlir::registerCSEPass();
  mlir::registerCanonicalizerPass();
  mlir::registerSymbolDCEPass();
  hyc::registerHycPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "hyc optimizer driver\n", registry));
}
