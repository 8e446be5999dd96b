// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy=target=avx512 --hyc-cpu-plan-memory --hyc-cpu-lower-to-kernel --convert-hyc-kernel-to-llvm | FileCheck %s
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 native-bf16=true" --hyc-cpu-plan-memory --hyc-cpu-lower-to-kernel --convert-hyc-kernel-to-llvm | FileCheck %s --check-prefix=NATIVE
// The CPU lowering applying brgemm schedules: GEMMs on named
// weights call the hyrt_cpu_gemm_* drivers with the address of a generated
// kernel, weights get the kernel's layout, and the drivers' scratch sits
// above every planned buffer.

// CHECK: module attributes
// Planned buffers peak at 1792 bytes (x and y live together); the w8a8
// driver's 320 bytes of scratch (4 x 64 u8 + scales) sit above them.
// CHECK-SAME: hyc.arena_bytes = 2112 : i64
// CHECK-SAME: hyc.kernels = [{isa = "avx512vnni", k = 64 : i64, m_max = 14 : i64, name = "hyc_brgemm_u8s8f32_14x32x64_avx512vnni", types = "u8s8f32"}, {isa = "avx512core", k = 48 : i64, m_max = 14 : i64, name = "hyc_brgemm_f32f32f32_14x32x48_avx512core", types = "f32f32f32"}, {isa = "avx512core", k = 8 : i64, m_max = 12 : i64, name = "hyc_brgemm_f32bf16f32_12x32x8_avx512core", types = "f32bf16f32"}]
// The embedding table is also read by the embedding: it stays row-major and
// its GEMM (tied lm_head) takes the reference path.
// CHECK-SAME: hyc.weight_layouts = ["f32", "s8_vnni4", "f32", "f32_k1", "bf16_vnni2"]
// CHECK-SAME: hyc.weights = ["embed", "up#w8a8", "up#w8a8.scale", "gate", "head"]
// CHECK: llvm.func @hyc_extend_v0
// CHECK: %[[K8:.+]] = llvm.mlir.addressof @hyc_brgemm_u8s8f32_14x32x64_avx512vnni
// CHECK: %[[SOFF:.+]] = llvm.mlir.constant(1792 : i64) : i64
// CHECK: %[[SCRATCH:.+]] = llvm.getelementptr %{{.*}}[%[[SOFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @hyrt_cpu_gemm_w8a8({{.*}}, %[[SCRATCH]], %[[K8]], %{{.*}})
// CHECK: llvm.mlir.addressof @hyc_brgemm_f32f32f32_14x32x48_avx512core
// CHECK: llvm.call @hyrt_cpu_gemm_f32(
// CHECK: llvm.call @hyrt_cpu_gemm_f32_bf16(
// CHECK: llvm.call @hyrt_ref_matmul(
// With native-bf16 the bf16 GEMM uses vdpbf16ps on bf16 activations, which
// need scratch of their own (the larger w8a8 scratch still rules).
// NATIVE: name = "hyc_brgemm_bf16bf16f32_14x32x8_avx512bf16", types = "bf16bf16f32"
// NATIVE: llvm.call @hyrt_cpu_gemm_bf16(
!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !cache) -> (tensor<?x32xf32>, !cache) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
  %s = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<48x64xi8>, tensor<48xf32>) -> tensor<?x48xf32>
  %g = hyc.param #hyc.param<"f" : "gate"> -> tensor<8x48xf32>
  %r = hyc.quant.matmul %y, %g {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x48xf32>, tensor<8x48xf32>) -> tensor<?x8xf32>
  %h = hyc.param #hyc.param<"f" : "head"> -> tensor<64x8xf32>
  %l = hyc.quant.matmul %r, %h {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %t = hyc.quant.matmul %l, %e {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %t, %c : tensor<?x32xf32>, !cache
}
