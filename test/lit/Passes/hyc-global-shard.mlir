// RUN: hyc-opt %s --hyc-global-shard="tp-size=2 tp-rank=1" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: hyc-opt %s --hyc-global-shard="tp-size=1 tp-rank=0" -split-input-file | FileCheck %s --check-prefix=WHOLE
// RUN: hyc-opt %s --hyc-global-shard="tp-size=2 tp-rank=1 ep-size=2 ep-exchange=all-reduce" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=EP
// RUN: hyc-opt %s --hyc-global-shard="tp-size=2 tp-rank=1 ep-size=2" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=A2A

// One dense layer (4 heads, 2 kv heads of 4, ffn 12) on rank 1 of 2:
// q/k/v and gate/up keep their rank's rows (heads 2..3, kv head 1, ffn
// columns 6..11), o_proj and down their columns, each followed by an
// all-reduce; the cache holds one kv head; the output head (its own
// weight) keeps vocabulary rows 8..15, gathered; the decisions are
// recorded.

// CHECK: module attributes {
// CHECK-SAME: kv_num_kv_heads = 1
// CHECK-SAME: hyc.tensor_parallel = {rank = 1 : i64, shards = {down = 1 : i64, gate = 0 : i64, head = 0 : i64, k = 0 : i64, o = 1 : i64, q = 0 : i64, up = 0 : i64, v = 0 : i64}, size = 2 : i64}
// CHECK-LABEL: func.func @extend
// CHECK-SAME: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
// CHECK-SAME: -> (tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1
// CHECK: hyc.param #hyc.param<"m" : "q"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<8x16xf32>
// CHECK: hyc.quant.matmul {{.*}} -> tensor<?x8xf32>
// CHECK: hyc.param #hyc.param<"m" : "k"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<4x16xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [%{{.*}}, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [%{{.*}}, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
// CHECK: hyc.rope {{.*}} -> tensor<?x2x4xf32>
// CHECK: hyc.attention {{.*}} -> tensor<?x2x4xf32>
// CHECK: tensor.collapse_shape {{.*}} into tensor<?x8xf32>
// CHECK: hyc.param #hyc.param<"m" : "o"> {hyc.shard = array<i64: 1, 1, 2>} -> tensor<16x8xf32>
// CHECK: %[[O:.*]] = hyc.quant.matmul {{.*}} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
// CHECK: %[[OR:.*]] = hyc.collective.all_reduce %[[O]] {group_size = 2 : i64, kind = #hyc<reduce_kind sum>} : tensor<?x16xf32>
// CHECK: %[[H:.*]] = hyc.add %{{.*}}, %[[OR]]
// CHECK: hyc.param #hyc.param<"m" : "gate"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<6x16xf32>
// CHECK: hyc.silu_mul {{.*}} : tensor<?x6xf32>
// CHECK: hyc.param #hyc.param<"m" : "down"> {hyc.shard = array<i64: 1, 1, 2>} -> tensor<16x6xf32>
// CHECK: %[[D:.*]] = hyc.quant.matmul
// CHECK: %[[DR:.*]] = hyc.collective.all_reduce %[[D]]
// CHECK: hyc.add %[[H]], %[[DR]]
// CHECK: hyc.param #hyc.param<"m" : "head"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<8x16xf32>
// CHECK: %[[L:.*]] = hyc.quant.matmul {{.*}} -> tensor<?x8xf32>
// CHECK: %[[G:.*]] = hyc.collective.all_gather %[[L]] {dim = 1 : i64, group_size = 2 : i64} : tensor<?x8xf32> -> tensor<?x16xf32>
// CHECK: return %[[G]]

// WHOLE-NOT: hyc.shard
// WHOLE-NOT: all_reduce
// WHOLE-NOT: hyc.tensor_parallel

module attributes {hyc.step_bounds = {kv_num_kv_heads = 2 : i64}} {
  func.func @extend(%tok: tensor<?xi32>, %pos: tensor<?xi32>, %kv: !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4>) {
    %table = hyc.param #hyc.param<"m" : "embed"> -> tensor<32x16xf32>
    %x = hyc.embedding %table[%tok] : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %wq = hyc.param #hyc.param<"m" : "q"> -> tensor<16x16xf32>
    %q = hyc.quant.matmul %x, %wq {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %wk = hyc.param #hyc.param<"m" : "k"> -> tensor<8x16xf32>
    %k = hyc.quant.matmul %x, %wk {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    %wv = hyc.param #hyc.param<"m" : "v"> -> tensor<8x16xf32>
    %v = hyc.quant.matmul %x, %wv {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    %c0 = arith.constant 0 : index
    %n = tensor.dim %q, %c0 : tensor<?x16xf32>
    %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [%n, 4, 4] : tensor<?x16xf32> into tensor<?x4x4xf32>
    %k3 = tensor.expand_shape %k [[0], [1, 2]] output_shape [%n, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %v3 = tensor.expand_shape %v [[0], [1, 2]] output_shape [%n, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %qr = hyc.rope %q3, %pos {rotary_dim = 4 : i64, scaling = #hyc.rope_scaling<none>, style = #hyc<rope_style neox>, theta = 1.000000e+04 : f64} : tensor<?x4x4xf32>, tensor<?xi32> -> tensor<?x4x4xf32>
    %kr = hyc.rope %k3, %pos {rotary_dim = 4 : i64, scaling = #hyc.rope_scaling<none>, style = #hyc<rope_style neox>, theta = 1.000000e+04 : f64} : tensor<?x2x4xf32>, tensor<?xi32> -> tensor<?x2x4xf32>
    %kv1 = hyc.kv_cache.append %kv, %kr, %v3 {layer = 0 : i64} : !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
    %a = hyc.attention %qr, %kr, %v3, %kv1 {layer = 0 : i64, scale = 5.000000e-01 : f32} : tensor<?x4x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4> -> tensor<?x4x4xf32>
    %a2 = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x4x4xf32> into tensor<?x16xf32>
    %wo = hyc.param #hyc.param<"m" : "o"> -> tensor<16x16xf32>
    %o = hyc.quant.matmul %a2, %wo {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %h = hyc.add %x, %o : tensor<?x16xf32>
    %wg = hyc.param #hyc.param<"m" : "gate"> -> tensor<12x16xf32>
    %g = hyc.quant.matmul %h, %wg {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<12x16xf32>) -> tensor<?x12xf32>
    %wu = hyc.param #hyc.param<"m" : "up"> -> tensor<12x16xf32>
    %u = hyc.quant.matmul %h, %wu {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<12x16xf32>) -> tensor<?x12xf32>
    %s = hyc.silu_mul %g, %u : tensor<?x12xf32>
    %wd = hyc.param #hyc.param<"m" : "down"> -> tensor<16x12xf32>
    %d = hyc.quant.matmul %s, %wd {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x12xf32>, tensor<16x12xf32>) -> tensor<?x16xf32>
    %y = hyc.add %h, %d : tensor<?x16xf32>
    %wh = hyc.param #hyc.param<"m" : "head"> -> tensor<16x16xf32>
    %logits = hyc.quant.matmul %y, %wh {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    return %logits, %kv1 : tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4>
  }
}

// -----

// Three kv heads neither split over two ranks nor share out: refused by name.
func.func @uneven(%x: tensor<?x16xf32>, %pos: tensor<?xi32>, %kv: !hyc.kv_cache<num_layers = 1, num_kv_heads = 3, k_head_dim = 4, v_head_dim = 4>) -> !hyc.kv_cache<num_layers = 1, num_kv_heads = 3, k_head_dim = 4, v_head_dim = 4> {
  %wk = hyc.param #hyc.param<"m" : "k"> -> tensor<12x16xf32>
  %k = hyc.quant.matmul %x, %wk {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<12x16xf32>) -> tensor<?x12xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %k, %c0 : tensor<?x12xf32>
  %k3 = tensor.expand_shape %k [[0], [1, 2]] output_shape [%n, 3, 4] : tensor<?x12xf32> into tensor<?x3x4xf32>
  // expected-error @+1 {{hyc-global-shard: 3 kv heads do not split over 2 ranks (nor does 2 split into them)}}
  %kv1 = hyc.kv_cache.append %kv, %k3, %k3 {layer = 0 : i64} : !hyc.kv_cache<num_layers = 1, num_kv_heads = 3, k_head_dim = 4, v_head_dim = 4>, tensor<?x3x4xf32>, tensor<?x3x4xf32>
  return %kv1 : !hyc.kv_cache<num_layers = 1, num_kv_heads = 3, k_head_dim = 4, v_head_dim = 4>
}

// -----

// An ffn width that is not a multiple of the ranks (9 over 2) is padded
// with zeros to 10: rank 1 reads gate/up rows 5..9 (row 9 zero) and down
// columns 5..9 (column 9 zero); zero rows give silu(0) * 0 = 0 and zero
// columns drop them, so the sum over the ranks is exact. The padded width
// shows in hyc.shard's fourth entry and the writer's [dim, parts, part, whole].
// CHECK: hyc.tensor_parallel = {rank = 1 : i64, shards = {down = array<i64: 1, 2, 1, 10>, gate = array<i64: 0, 2, 1, 10>, up = array<i64: 0, 2, 1, 10>}
// CHECK-LABEL: func.func @odd_ffn
// CHECK: hyc.param #hyc.param<"m" : "gate"> {hyc.shard = array<i64: 0, 1, 2, 10>} -> tensor<5x16xf32>
// CHECK: hyc.silu_mul {{.*}} : tensor<?x5xf32>
// CHECK: hyc.param #hyc.param<"m" : "down"> {hyc.shard = array<i64: 1, 1, 2, 10>} -> tensor<16x5xf32>
// CHECK: %[[D:.*]] = hyc.quant.matmul {{.*}} : (tensor<?x5xf32>, tensor<16x5xf32>) -> tensor<?x16xf32>
// CHECK: hyc.collective.all_reduce %[[D]]
func.func @odd_ffn(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %wg = hyc.param #hyc.param<"m" : "gate"> -> tensor<9x16xf32>
  %g = hyc.quant.matmul %x, %wg {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<9x16xf32>) -> tensor<?x9xf32>
  %wu = hyc.param #hyc.param<"m" : "up"> -> tensor<9x16xf32>
  %u = hyc.quant.matmul %x, %wu {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<9x16xf32>) -> tensor<?x9xf32>
  %s = hyc.silu_mul %g, %u : tensor<?x9xf32>
  %wd = hyc.param #hyc.param<"m" : "down"> -> tensor<16x9xf32>
  %d = hyc.quant.matmul %s, %wd {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x9xf32>, tensor<16x9xf32>) -> tensor<?x16xf32>
  return %d : tensor<?x16xf32>
}

// -----

// One kv head (MQA), two ranks: each rank's q heads read the same kv head,
// so k/v are one part (part 0 of 1) on both ranks and the cache keeps it.
// CHECK: hyc.tensor_parallel = {rank = 1 : i64, shards = {k = array<i64: 0, 1, 0, 4>, o = 1 : i64, q = 0 : i64}
// CHECK-LABEL: func.func @one_kv_head
// CHECK-SAME: num_kv_heads = 1
// CHECK: hyc.param #hyc.param<"m" : "q"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<8x16xf32>
// CHECK: hyc.param #hyc.param<"m" : "k"> {hyc.shard = array<i64: 0, 0, 1>} -> tensor<4x16xf32>
// CHECK: hyc.attention {{.*}} : tensor<?x2x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, {{.*}} -> tensor<?x2x4xf32>
func.func @one_kv_head(%x: tensor<?x16xf32>, %pos: tensor<?xi32>, %kv: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) {
  %wq = hyc.param #hyc.param<"m" : "q"> -> tensor<16x16xf32>
  %q = hyc.quant.matmul %x, %wq {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %wk = hyc.param #hyc.param<"m" : "k"> -> tensor<4x16xf32>
  %k = hyc.quant.matmul %x, %wk {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<4x16xf32>) -> tensor<?x4xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x16xf32>
  %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [%n, 4, 4] : tensor<?x16xf32> into tensor<?x4x4xf32>
  %k3 = tensor.expand_shape %k [[0], [1, 2]] output_shape [%n, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
  %kv1 = hyc.kv_cache.append %kv, %k3, %k3 {layer = 0 : i64} : !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>, tensor<?x1x4xf32>, tensor<?x1x4xf32>
  %a = hyc.attention %q3, %k3, %k3, %kv1 {layer = 0 : i64, scale = 5.000000e-01 : f32} : tensor<?x4x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4> -> tensor<?x4x4xf32>
  %a2 = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x4x4xf32> into tensor<?x16xf32>
  %wo = hyc.param #hyc.param<"m" : "o"> -> tensor<16x16xf32>
  %o = hyc.quant.matmul %a2, %wo {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  return %o, %kv1 : tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

// Routed experts on rank 1 of 2: gate/up stacks keep each expert's second
// half of ffn rows, down its second half of columns; the combine is
// all-reduced, the router and permute are whole.
// CHECK: shards = {m.experts.0.down = 1 : i64, m.experts.0.gate = 0 : i64{{.*}}m.experts.1.up = 0 : i64
// CHECK-LABEL: func.func @experts
// CHECK: hyc.moe.route {{.*}} : tensor<?x2xf32>
// CHECK: hyc.param #hyc.param<"m" : "m.experts.*.gate"> {hyc.shard = array<i64: 1, 1, 2>} -> tensor<2x4x16xf32>
// CHECK: hyc.moe.grouped_matmul {{.*}} -> tensor<?x4xf32>
// CHECK: hyc.silu_mul {{.*}} : tensor<?x4xf32>
// CHECK: hyc.param #hyc.param<"m" : "m.experts.*.down"> {hyc.shard = array<i64: 2, 1, 2>} -> tensor<2x16x4xf32>
// CHECK: hyc.moe.grouped_matmul {{.*}} -> tensor<?x16xf32>
// CHECK: %[[C:.*]] = hyc.moe.unpermute
// CHECK: hyc.collective.all_reduce %[[C]]

// Expert parallel (ep-size 2, ep-exchange all-reduce) on rank 1: experts
// 1.. whole (the stacks renamed "experts.*+1." for the writer), the permute
// keeps their pairs, the combine is all-reduced.
// EP-LABEL: func.func @experts
// EP: hyc.moe.permute {{.*}} {first_expert = 1 : i64, num_experts = 1 : i64} : tensor<?x16xf32>, tensor<?x1xi32> -> tensor<?x16xf32>, tensor<2xi32>, tensor<?xi32>
// EP: hyc.param #hyc.param<"m" : "m.experts.*+1.gate"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<1x8x16xf32>
// EP: hyc.moe.grouped_matmul {{.*}} -> tensor<?x8xf32>
// EP: hyc.param #hyc.param<"m" : "m.experts.*+1.down"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<1x16x8xf32>
// EP: %[[C:.*]] = hyc.moe.unpermute
// EP: hyc.collective.all_reduce %[[C]]

// Expert parallel with the all-to-all exchange (the default): the rank
// dispatches its own tokens to their experts' ranks (one expert per rank
// here), permutes the tokens it received by their slots (local expert ids
// from 0), runs its experts, weights and sums each token's rows, and
// undispatches the rows back to their tokens; no all-reduce.
// A2A-LABEL: func.func @experts
// A2A: %[[W:.*]], %[[IDS:.*]] = hyc.moe.route
// A2A: %[[R:.*]], %[[RI:.*]], %[[RW:.*]], %[[SENT:.*]], %[[N:.*]] = hyc.moe.dispatch %{{.*}}, %[[IDS]], %[[W]] {experts_per_rank = 1 : i64, group_size = 2 : i64} : tensor<?x16xf32>, tensor<?x1xi32>, tensor<?x1xf32> -> tensor<?x16xf32>, tensor<?x1xi32>, tensor<?x1xf32>, tensor<?x1xi32>, tensor<4xi32>
// A2A: %[[PX:.*]], %[[OFF:.*]], %[[ROWS:.*]] = hyc.moe.permute %[[R]], %[[RI]] {num_experts = 1 : i64}
// A2A: hyc.moe.grouped_matmul %[[PX]], %{{.*}}, %[[OFF]]
// A2A: hyc.silu_mul
// A2A: %[[D:.*]] = hyc.moe.grouped_matmul
// A2A: %[[Z:.*]] = hyc.moe.unpermute %[[D]], %[[ROWS]], %[[RW]] : tensor<?x16xf32>, tensor<?xi32>, tensor<?x1xf32> -> tensor<?x16xf32>
// A2A: %[[Y:.*]] = hyc.moe.undispatch %[[IDS]], %[[Z]], %[[SENT]], %[[N]] {group_size = 2 : i64}
// A2A-NOT: all_reduce
// A2A: return %[[Y]]
func.func @experts(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %wr = hyc.param #hyc.param<"m" : "router"> -> tensor<2x16xf32>
  %logits = hyc.quant.matmul %x, %wr {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x16xf32>, tensor<2x16xf32>) -> tensor<?x2xf32>
  %w, %ids = hyc.moe.route %logits {gating = #hyc.moe_gating<softmax, top_k = 1, renormalize = true>} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  %px, %offsets, %rows = hyc.moe.permute %x, %ids {num_experts = 2 : i64} : tensor<?x16xf32>, tensor<?x1xi32> -> tensor<?x16xf32>, tensor<3xi32>, tensor<?xi32>
  %wg = hyc.param #hyc.param<"m" : "m.experts.*.gate"> -> tensor<2x8x16xf32>
  %g = hyc.moe.grouped_matmul %px, %wg, %offsets {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : tensor<?x16xf32>, tensor<2x8x16xf32>, tensor<3xi32> -> tensor<?x8xf32>
  %wu = hyc.param #hyc.param<"m" : "m.experts.*.up"> -> tensor<2x8x16xf32>
  %u = hyc.moe.grouped_matmul %px, %wu, %offsets {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : tensor<?x16xf32>, tensor<2x8x16xf32>, tensor<3xi32> -> tensor<?x8xf32>
  %s = hyc.silu_mul %g, %u : tensor<?x8xf32>
  %wd = hyc.param #hyc.param<"m" : "m.experts.*.down"> -> tensor<2x16x8xf32>
  %d = hyc.moe.grouped_matmul %s, %wd, %offsets {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : tensor<?x8xf32>, tensor<2x16x8xf32>, tensor<3xi32> -> tensor<?x16xf32>
  %y = hyc.moe.unpermute %d, %rows, %w : tensor<?x16xf32>, tensor<?xi32>, tensor<?x1xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
