//===- GlobalShard.cpp - split a model over tensor-parallel ranks ---------===//
//
// Megatron-style tensor parallelism on the imported model, for one rank r
// of N (`tp-rank`, `tp-size`):
//
// - attention: the q/k/v projections are column-parallel (rank r computes
//   heads [r H/N, (r+1) H/N) and kv heads likewise; its KV cache holds
//   num_kv_heads / N heads), o_proj is row-parallel (it reads the rank's
//   heads' columns of the attention output) and its partial sum is
//   all-reduced;
// - MLP: gate and up are column-parallel (ffn / N columns each), down is
//   row-parallel, followed by an all-reduce;
// - routed experts (MoE), expert parallel (`ep-size` = tp-size): rank r
//   holds experts [r E/N, (r+1) E/N) whole (its params renamed
//   "experts.*+F." for the writer). With `ep-exchange=all-to-all` (the
//   default) tokens travel to their experts: each rank dispatches its own
//   tokens' pairs (hyc.moe.dispatch: counts per destination rank, then one
//   batched exchange), permutes the pairs it received, runs its experts,
//   weights each row (a one-slot unpermute) and sends the rows back
//   (hyc.moe.undispatch: summed per token, the tokens gathered on every
//   rank). With `all-reduce` routing is replicated, its permute keeps the
//   pairs routed to its experts (`first_expert`), and the combine of its
//   rows is all-reduced;
// - routed experts (MoE) otherwise: every rank keeps every expert and routes alike
//   (the router stays whole), with its part of each expert's ffn columns:
//   gate/up stacks [E, ffn, H] split along dim 1, down [E, H, ffn] along
//   dim 2; the combine of the down rows (linear) is all-reduced. Shared
//   experts are dense MLPs.
//
// - the output head, when its weight is its own (not a tied embedding):
//   split by vocabulary rows, its logits all-gathered (each rank reads 1/N
//   of the largest decode weight instead of all of it).
//
// Everything else (embedding, norms, the residual stream, a tied head)
// stays whole on every rank: after each all-reduce every rank holds the
// same hidden state. hyrt's all-reduce sums in rank order, so the ranks'
// states are bit-identical and each rank can sample the same token without
// a broadcast.
//
// The decisions, visible in --compile-to dumps:
// - `hyc.shard = array<i64: dim, part, parts[, whole]>` on every split param
//   (dim 0: rows of a [N, K] weight or a bias; dim 1: its columns; part /
//   parts is rank / size except for shared kv heads; `whole` when the dim
//   is padded);
// - the module attribute `hyc.tensor_parallel = {rank, size, shards}`,
//   `shards` mapping each split checkpoint tensor to its dim, or to
//   [dim, parts, part, whole] when it is not rank r's of N equal parts
//   of the stored dim. The compiler
//   reads it to give the artifact writer the rank's slice of each tensor
//   (later passes rename params: fused [gate; up], quantized derivations).
//
// Types follow: each split param's dim shrinks by N, and every op between
// the split GEMMs and the next all-reduce gets its result type recomputed.
// Uneven shapes: an ffn width (dense MLP or each expert's) that does not
// divide by N is padded with zeros to the next multiple (zero gate/up rows
// and down columns: exact; the kernels pack 32-column panels, so a share
// of any width runs the same kernel). Fewer kv heads than ranks (N a
// multiple of them): each kv head's k/v rows go to the N / kv consecutive
// ranks whose q heads read it (its KV cache holds that one head). Heads
// that do not divide are refused by name.
//
// MLA (DeepSeek): q_b (or q_proj) and kv_b are split by heads, o_proj is
// row-parallel; the latent projection (kv_a) and the latent cache stay
// whole on every rank (one latent row serves every head).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALSHARD
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// The GEMM that produces `v` through the per-head reshapes and
/// elementwise-per-head ops between a projection and attention (expand to
/// heads, RoPE, q/k norm); null when something else produces it.
QuantMatmulOp projectionOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto mm = dyn_cast<QuantMatmulOp>(def))
      return mm;
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto r = dyn_cast<RopeOp>(def))
      v = r.getInput();
    else if (auto n = dyn_cast<RMSNormOp>(def))
      v = n.getInput();
    else if (auto x = dyn_cast<tensor::ExtractSliceOp>(def))
      v = x.getSource(); // MLA's nope / rope parts of each head
    else
      return {};
  }
  return {};
}

/// One param's part: part `index` of `parts` equal parts along `dim`, of
/// the dim padded with zeros to `whole`.
struct Split {
  ParamOp param;
  int64_t dim;
  int64_t parts, index, whole;
};

/// How a column-parallel GEMM's rows are cut: by default rank r's of N equal
/// parts; k/v projections with fewer kv heads than ranks in kv-head parts
/// (N / kv ranks share each); an ffn width that does not divide padded.
struct Cut {
  int64_t parts = 0, index = 0; ///< 0 parts: the rank's of tp-size
  bool pad = false;             ///< an uneven width may be padded with zeros
};

struct HycGlobalShardPass : public hyc::impl::HycGlobalShardBase<HycGlobalShardPass> {
  using Base::Base;

  /// Ops whose result is a partial sum over the ranks: an all-reduce
  /// follows each (a row-parallel GEMM, or the combine of row-parallel
  /// expert GEMMs). Per function.
  llvm::SetVector<Operation *> reduceAfter;
  /// Ops whose result is this rank's block of the last dim (the output
  /// head's vocabulary rows): an all-gather follows each.
  llvm::SetVector<Operation *> gatherAfter;
  /// The function attends over an MLA latent cache (kept whole on every rank).
  bool latentCache = false;
  MLIRContext *ctx() { return &getContext(); }

  /// Records `mm` as column- (dim 0) or row-parallel (dim 1); false with a
  /// diagnostic when its operands cannot be split.
  bool plan(QuantMatmulOp mm, int64_t dim, llvm::MapVector<Operation *, Split> &splits,
            llvm::SetVector<Operation *> &rowGemms, Cut cut = {}) {
    auto param = mm.getWeight().getDefiningOp<ParamOp>();
    auto type = param ? dyn_cast<RankedTensorType>(param.getType()) : RankedTensorType();
    if (!type || type.getRank() != 2 || !type.hasStaticShape()) {
      mm.emitError() << "hyc-global-shard: expected a [N, K] param weight to split";
      return false;
    }
    if (mm.getScale() || mm.getInputScale() || mm.getResidual() ||
        mm.getEpilogue() != Epilogue::none) {
      mm.emitError() << "hyc-global-shard: runs on the imported model, before the quantize "
                        "policy and fusions (found a GEMM with scales or an epilogue)";
      return false;
    }
    const Split split = cutOf(param, dim, cut);
    if (split.whole % split.parts != 0) {
      mm.emitError() << "hyc-global-shard: cannot split " << param.getRef().getTensor()
                     << " (" << type.getDimSize(0) << " x " << type.getDimSize(1)
                     << ") along dim " << dim << " over " << split.parts
                     << " ranks: " << type.getDimSize(dim) << " is not a multiple of "
                     << split.parts << " (only ffn widths are padded)";
      return false;
    }
    if (!param->hasOneUse()) {
      mm.emitError() << "hyc-global-shard: " << param.getRef().getTensor()
                     << " has other readers; a split weight must feed one GEMM";
      return false;
    }
    if (auto it = splits.find(param); it != splits.end() && it->second.dim != dim) {
      mm.emitError() << "hyc-global-shard: " << param.getRef().getTensor()
                     << " is both column- and row-parallel";
      return false;
    }
    splits.insert({param, split});
    if (Value bias = mm.getBias()) {
      if (dim == 1) {
        mm.emitError() << "hyc-global-shard: a row-parallel GEMM's bias would be added "
                          "on every rank";
        return false;
      }
      auto b = bias.getDefiningOp<ParamOp>();
      auto bt = b ? dyn_cast<RankedTensorType>(b.getType()) : RankedTensorType();
      if (!bt || bt.getRank() != 1 || !b->hasOneUse()) {
        mm.emitError() << "hyc-global-shard: expected a [N] param bias read by this GEMM";
        return false;
      }
      splits.insert({b, cutOf(b, 0, cut)});
    }
    if (dim == 1) {
      rowGemms.insert(mm);
      reduceAfter.insert(mm);
    }
    return true;
  }

  /// Records the expert GEMM `mm` ([E, N, K] weights) as column- (dim 1:
  /// each expert's N) or row-parallel (dim 2: each expert's K).
  bool planExperts(MoeGroupedMatmulOp mm, int64_t dim,
                   llvm::MapVector<Operation *, Split> &splits) {
    auto param = mm.getWeight().getDefiningOp<ParamOp>();
    auto type = param ? dyn_cast<RankedTensorType>(param.getType()) : RankedTensorType();
    if (!type || type.getRank() != 3 || !type.hasStaticShape() || mm.getScale() ||
        mm.getEpilogue() != Epilogue::none || !param->hasOneUse()) {
      mm.emitError() << "hyc-global-shard: expected an imported expert GEMM over an [E, N, "
                        "K] param read by it alone";
      return false;
    }
    // Each expert's ffn width, padded when it does not divide.
    splits.insert({param, cutOf(param, dim, Cut{0, 0, /*pad=*/true})});
    return true;
  }

  /// The part of `param`'s `dim` that `cut` gives this rank.
  Split cutOf(ParamOp param, int64_t dim, Cut cut) {
    const int64_t size = cast<RankedTensorType>(param.getType()).getDimSize(dim);
    Split s{param, dim, cut.parts ? cut.parts : int64_t(tpSize),
            cut.parts ? cut.index : int64_t(tpRank), size};
    if (cut.pad)
      s.whole = (size + s.parts - 1) / s.parts * s.parts;
    return s;
  }

  /// The cut of k/v projections for `kvHeads` kv heads: N equal parts, or,
  /// with fewer kv heads than ranks (N a multiple of them), one kv head per
  /// part, shared by N / kvHeads consecutive ranks (their q heads all read
  /// it). Zero parts when neither fits.
  Cut kvCut(int64_t kvHeads) const {
    if (kvHeads % tpSize == 0)
      return {};
    if (kvHeads > 0 && tpSize % kvHeads == 0)
      return Cut{kvHeads, tpRank / (tpSize / kvHeads), false};
    return Cut{-1, 0, false};
  }

  /// Token-distributed expert parallel: instead of every rank keeping its
  /// experts' pairs of every token, each rank sends its own tokens to the
  /// ranks of their experts, once per destination with their slots there
  /// (hyc.moe.dispatch: counts, then one batched exchange), runs its
  /// experts on the tokens it received (the permute, expert GEMMs and
  /// weighted combine as before, over them), and sends each token's row
  /// back (hyc.moe.undispatch), which sums them per token and gathers the
  /// tokens on every rank. No all-reduce follows.
  bool dispatchTokens(MoePermuteOp permute, MoeUnpermuteOp combine, int64_t local) {
    if (!combine.getAddends().empty()) {
      combine.emitError() << "hyc-global-shard: expected the experts' combine without "
                             "addends, for the all-to-all exchange";
      return false;
    }
    // The dispatch takes the permute's place and reads the routing weights.
    if (Operation *w = combine.getWeights().getDefiningOp(); w && !w->isBeforeInBlock(permute)) {
      combine.emitError() << "hyc-global-shard: the routing weights come after the permute";
      return false;
    }
    OpBuilder b(permute);
    Location loc = permute.getLoc();
    Value routes = permute.getIds();
    auto dispatch = MoeDispatchOp::create(
        b, loc, permute.getInput().getType(), routes.getType(), combine.getWeights().getType(),
        routes.getType(), RankedTensorType::get({2 * tpSize}, b.getI32Type()),
        permute.getInput(), routes, combine.getWeights(), b.getI64IntegerAttr(local),
        b.getI64IntegerAttr(tpSize));
    // The received tokens' pairs (their slots on this rank's experts),
    // grouped by expert.
    auto received = MoePermuteOp::create(
        b, loc, permute.getResult().getType(), permute.getOffsets().getType(),
        permute.getRows().getType(), dispatch.getRows(), dispatch.getRowIds(),
        b.getI64IntegerAttr(local), b.getI64IntegerAttr(0));
    permute.getResult().replaceAllUsesWith(received.getResult());
    permute.getOffsets().replaceAllUsesWith(received.getOffsets());
    permute.getRows().replaceAllUsesWith(received.getRows());
    permute.erase();
    b.setInsertionPoint(combine);
    // Each received token's weighted sum over this rank's experts.
    auto weighted = MoeUnpermuteOp::create(b, combine.getLoc(), combine.getType(),
                                           combine.getInput(), received.getRows(),
                                           dispatch.getRowWeights(), ValueRange{});
    auto back = MoeUndispatchOp::create(b, combine.getLoc(), combine.getType(), routes,
                                        weighted.getResult(), dispatch.getSent(),
                                        dispatch.getCounts(), b.getI64IntegerAttr(tpSize));
    combine.getResult().replaceAllUsesWith(back.getResult());
    combine.erase();
    return true;
  }

  /// Decides the splits of one function: false (diagnosed) when a layer
  /// cannot be split.
  bool decide(func::FuncOp fn, llvm::MapVector<Operation *, Split> &splits,
              llvm::SetVector<Operation *> &rowGemms) {
    bool ok = true;
    // MLA caches one latent row per position for all heads: every rank
    // keeps the whole latent (its own copy) and attends with its heads.
    latentCache = false;
    fn.walk([&](MLAAttentionOp) { latentCache = true; });
    fn.walk([&](Operation *op) {
      if (!ok)
        return;
      // Inputs of column-parallel GEMMs with their cut; outputs read by a
      // row-parallel GEMM (padded like the MLP's ffn when `padOutputs`).
      SmallVector<std::pair<Value, Cut>> columnInputs;
      SmallVector<Value> attentionOutputs;
      bool padOutputs = false;
      auto kvInputs = [&](int64_t kvHeads, std::initializer_list<Value> kv) {
        const Cut cut = kvCut(kvHeads);
        if (cut.parts < 0) {
          op->emitError() << "hyc-global-shard: " << kvHeads << " kv heads do not split over "
                          << int64_t(tpSize) << " ranks (nor does " << int64_t(tpSize)
                          << " split into them)";
          ok = false;
        }
        for (Value v : kv)
          if (v)
            columnInputs.push_back({v, cut});
      };
      if (auto a = dyn_cast<AttentionOp>(op)) {
        columnInputs = {{a.getQuery(), Cut{}}};
        kvInputs(cast<RankedTensorType>(a.getKey().getType()).getDimSize(1),
                 {a.getKey(), a.getValue()});
        attentionOutputs.push_back(a.getResult());
      } else if (auto a = dyn_cast<PagedAttentionOp>(op)) {
        columnInputs = {{a.getQuery(), Cut{}}};
        attentionOutputs.push_back(a.getResult());
      } else if (auto a = dyn_cast<MLAAttentionOp>(op)) {
        // The rank's heads of q (nope and rope parts) and of kv_b (the
        // heads' W_UK / W_UV rows), its heads' output columns to o_proj.
        columnInputs = {{a.getQNope(), Cut{}}, {a.getQPe(), Cut{}}};
        attentionOutputs.push_back(a.getResult());
        auto kvB = a.getKvB().getDefiningOp<ParamOp>();
        auto t = kvB ? dyn_cast<RankedTensorType>(kvB.getType()) : RankedTensorType();
        if (!t || t.getRank() != 2 || !kvB->hasOneUse()) {
          a.emitError() << "hyc-global-shard: expected a kv_b param of whole heads read by "
                           "this MLA op alone";
          ok = false;
          return;
        }
        if (t.getDimSize(0) % tpSize != 0) {
          a.emitError() << "hyc-global-shard: cannot split " << kvB.getRef().getTensor() << " ("
                        << t.getDimSize(0) << " x " << t.getDimSize(1) << ", whole heads) over "
                        << int64_t(tpSize) << " ranks: " << t.getDimSize(0)
                        << " is not a multiple of " << int64_t(tpSize);
          ok = false;
          return;
        }
        splits.insert({kvB, cutOf(kvB, 0, Cut{})});
      } else if (auto k = dyn_cast<KVCacheAppendOp>(op); k && !latentCache) {
        kvInputs(cast<KVCacheType>(k.getCache().getType()).getNumKvHeads(),
                 {k.getKey(), k.getValue()});
      } else if (auto s = dyn_cast<SiluMulOp>(op);
                 s && s.getGate().getDefiningOp<MoeGroupedMatmulOp>() && epSize > 1) {
        // Expert parallel: this rank holds experts [r E/N, (r+1) E/N) whole;
        // its permute keeps the pairs routed to them, the combine of its
        // rows is a partial sum, all-reduced.
        auto gate = s.getGate().getDefiningOp<MoeGroupedMatmulOp>();
        auto up = s.getUp().getDefiningOp<MoeGroupedMatmulOp>();
        auto permute = gate ? gate.getOffsets().getDefiningOp<MoePermuteOp>() : MoePermuteOp();
        MoeGroupedMatmulOp down;
        if (s->hasOneUse())
          down = dyn_cast<MoeGroupedMatmulOp>(*s->getUsers().begin());
        if (!permute || !up || !down || up.getOffsets() != gate.getOffsets() ||
            down.getOffsets() != gate.getOffsets() || !down->hasOneUse() ||
            !isa<MoeUnpermuteOp>(*down->getUsers().begin()) ||
            llvm::any_of(permute.getOffsets().getUsers(),
                         [&](Operation *u) { return u != gate && u != up && u != down; })) {
          op->emitError() << "hyc-global-shard: expected gate/up expert GEMMs over one "
                             "permute, then down and the combine, for expert parallel";
          ok = false;
          return;
        }
        const int64_t experts = permute.getNumExperts();
        if (experts % epSize != 0) {
          permute.emitError() << "hyc-global-shard: " << experts
                              << " experts do not split over " << int64_t(epSize)
                              << " expert-parallel ranks";
          ok = false;
          return;
        }
        const int64_t local = experts / epSize, first = tpRank * local;
        for (MoeGroupedMatmulOp mm : {gate, up, down}) {
          auto param = mm.getWeight().getDefiningOp<ParamOp>();
          auto type = param ? dyn_cast<RankedTensorType>(param.getType()) : RankedTensorType();
          StringRef name = param ? param.getRef().getTensor() : StringRef();
          const size_t at = name.find("experts.*.");
          if (!type || type.getRank() != 3 || !param->hasOneUse() || mm.getScale() ||
              at == StringRef::npos) {
            mm.emitError() << "hyc-global-shard: expected an imported expert stack "
                              "(experts.*.) read by this GEMM alone";
            ok = false;
            return;
          }
          // The writer reads experts F, F+1, ... of "experts.*+F." stacks.
          param.setRefAttr(ParamAttr::get(
              ctx(), param.getRef().getFile(),
              (name.take_front(at) + "experts.*+" + Twine(first) + "." +
               name.drop_front(at + 10))
                  .str()));
          SmallVector<int64_t> shape(type.getShape());
          shape[0] = local;
          param.getResult().setType(RankedTensorType::get(shape, type.getElementType()));
          param->setAttr("hyc.shard", DenseI64ArrayAttr::get(ctx(), {0, tpRank, epSize}));
        }
        permute.setNumExperts(local);
        permute.setFirstExpert(first);
        permute.getOffsets().setType(RankedTensorType::get({local + 1}, IntegerType::get(ctx(), 32)));
        auto combine = cast<MoeUnpermuteOp>(*down->getUsers().begin());
        if (epExchange == "all-to-all") {
          ok = dispatchTokens(permute, combine, local);
          return;
        }
        reduceAfter.insert(combine);
        return;
      } else if (auto s = dyn_cast<SiluMulOp>(op);
                 s && s.getGate().getDefiningOp<MoeGroupedMatmulOp>()) {
        // Routed experts: every rank keeps all experts and routes alike,
        // with its part of each expert's ffn columns; the down GEMM's
        // partial rows go through the (linear) combine, which is then
        // all-reduced.
        for (Value v : {s.getGate(), s.getUp()}) {
          auto mm = v.getDefiningOp<MoeGroupedMatmulOp>();
          ok = ok && mm && planExperts(mm, 1, splits);
        }
        for (Operation *user : s->getUsers()) {
          auto down = dyn_cast<MoeGroupedMatmulOp>(user);
          if (!ok || !down || down.getInput() != s.getResult() || !down->hasOneUse() ||
              !isa<MoeUnpermuteOp>(*down->getUsers().begin())) {
            if (ok)
              user->emitError() << "hyc-global-shard: expected the experts' down GEMM, "
                                   "then their combine, to read the split activations";
            ok = false;
            return;
          }
          ok = planExperts(down, 2, splits);
          rowGemms.insert(down);
          reduceAfter.insert(*down->getUsers().begin());
        }
        return;
      } else if (auto s = dyn_cast<SiluMulOp>(op)) {
        // The ffn width: padded with zeros when it does not divide (zero
        // gate/up rows give silu(0) * 0 = 0, and down's zero columns drop
        // them anyway).
        columnInputs = {{s.getGate(), Cut{0, 0, true}}, {s.getUp(), Cut{0, 0, true}}};
        attentionOutputs.push_back(s.getResult()); // read by down, row-parallel
        padOutputs = true;
      } else {
        return;
      }
      if (!ok)
        return;
      for (auto [v, cut] : columnInputs) {
        QuantMatmulOp mm = projectionOf(v);
        if (!mm) {
          op->emitError() << "hyc-global-shard: an input of this op is not a projection "
                             "GEMM (through reshapes, RoPE and norms)";
          ok = false;
          return;
        }
        ok = ok && plan(mm, 0, splits, rowGemms, cut);
      }
      for (Value out : attentionOutputs)
        for (Operation *user : out.getUsers()) {
          Value in = out;
          Operation *reader = user;
          if (auto c = dyn_cast<tensor::CollapseShapeOp>(user)) {
            if (!c->hasOneUse()) {
              ok = false;
              user->emitError() << "hyc-global-shard: the merged heads feed more than "
                                   "the output projection";
              return;
            }
            in = c.getResult();
            reader = *c->getUsers().begin();
          }
          auto mm = dyn_cast<QuantMatmulOp>(reader);
          if (!mm || mm.getInput() != in) {
            ok = false;
            reader->emitError() << "hyc-global-shard: expected the output projection (a "
                                   "GEMM) to read the split activations";
            return;
          }
          ok = ok && plan(mm, 1, splits, rowGemms, Cut{0, 0, padOutputs});
        }
    });
    return ok;
  }

  /// The output head: the GEMM whose result the function returns as its
  /// logits. Split by vocabulary rows when its weight is its own (not a
  /// tied embedding table, which the embedding reads whole) and divides;
  /// its rows are then gathered (all-gather along the vocabulary).
  void decideHead(func::FuncOp fn, llvm::MapVector<Operation *, Split> &splits,
                  llvm::SetVector<Operation *> &rowGemms) {
    auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
    auto head = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp<QuantMatmulOp>()
                                     : QuantMatmulOp();
    auto param = head ? head.getWeight().getDefiningOp<ParamOp>() : ParamOp();
    auto type = param ? dyn_cast<RankedTensorType>(param.getType()) : RankedTensorType();
    if (!type || type.getRank() != 2 || !param->hasOneUse() || head.getBias() ||
        head.getScale() || !head->hasOneUse() || type.getDimSize(0) % tpSize != 0 ||
        splits.count(param))
      return; // stays whole on every rank
    splits.insert({param, cutOf(param, 0, Cut{})});
    rowGemms.insert(head); // its result is a block of the logits, not propagated
    gatherAfter.insert(head);
  }

  /// Recomputes `op`'s result types from its (already split) operands.
  LogicalResult retype(Operation *op) {
    auto shaped = [](Value v) { return cast<RankedTensorType>(v.getType()); };
    auto withLast = [](RankedTensorType t, int64_t last) {
      SmallVector<int64_t> shape(t.getShape());
      shape.back() = last;
      return RankedTensorType::get(shape, t.getElementType());
    };
    if (auto mm = dyn_cast<QuantMatmulOp>(op)) {
      mm.getResult().setType(withLast(shaped(mm.getResult()),
                                      shaped(mm.getWeight()).getDimSize(0)));
      return success();
    }
    if (auto mm = dyn_cast<MoeGroupedMatmulOp>(op)) {
      mm.getResult().setType(withLast(shaped(mm.getResult()),
                                      shaped(mm.getWeight()).getDimSize(1)));
      return success();
    }
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
      // The group of the split input dim: its first static size (the
      // heads) shrinks by what the input dim shrank by.
      RankedTensorType src = shaped(e.getSrc()), res = shaped(e.getResult());
      SmallVector<int64_t> shape(res.getShape());
      for (auto [inDim, group] : llvm::enumerate(e.getReassociationIndices())) {
        if (src.isDynamicDim(inDim))
          continue;
        int64_t product = 1;
        for (int64_t d : group)
          product *= shape[d];
        if (product == src.getDimSize(inDim))
          continue;
        const int64_t outer = group.front();
        const int64_t rest = product / shape[outer];
        if (src.getDimSize(inDim) % rest != 0)
          return e.emitError() << "hyc-global-shard: a rank's " << src.getDimSize(inDim)
                               << " columns are not whole heads of " << rest;
        shape[outer] = src.getDimSize(inDim) / rest;
      }
      SmallVector<int64_t> staticShape(e.getStaticOutputShape());
      for (size_t d = 0; d < shape.size(); ++d)
        if (!ShapedType::isDynamic(staticShape[d]))
          staticShape[d] = shape[d];
      e.setStaticOutputShape(staticShape);
      e.getResult().setType(RankedTensorType::get(shape, res.getElementType()));
      return success();
    }
    if (auto x = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // A slice over the whole of a split dim (a head range from 0) keeps
      // the rank's whole dim; any other slice of it is not ours to move.
      RankedTensorType src = shaped(x.getSource());
      SmallVector<int64_t> sizes(x.getStaticSizes()), offsets(x.getStaticOffsets());
      SmallVector<int64_t> shape(shaped(x.getResult()).getShape());
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (ShapedType::isDynamic(sizes[d]) || src.isDynamicDim(d) ||
            sizes[d] <= src.getDimSize(d))
          continue;
        if (offsets[d] != 0)
          return x.emitError() << "hyc-global-shard: a slice at offset " << offsets[d]
                               << " of a split dim";
        sizes[d] = shape[d] = src.getDimSize(d);
      }
      x.setStaticSizes(sizes);
      x.getResult().setType(RankedTensorType::get(shape, shaped(x.getResult()).getElementType()));
      return success();
    }
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
      RankedTensorType src = shaped(c.getSrc());
      c.getResult().setType(tensor::CollapseShapeOp::inferCollapsedType(
          src, c.getReassociationIndices()));
      return success();
    }
    if (isa<RopeOp, RMSNormOp, AddOp, SiluMulOp, AllReduceOp, LogitRowsOp>(op)) {
      for (Value r : op->getResults())
        if (isa<RankedTensorType>(r.getType()))
          r.setType(op->getOperand(0).getType());
      return success();
    }
    if (auto k = dyn_cast<KVCacheAppendOp>(op)) {
      k.getResult().setType(k.getCache().getType());
      return success();
    }
    if (isa<AttentionOp, PagedAttentionOp, MLAAttentionOp>(op)) {
      RankedTensorType q = shaped(op->getOperand(0));
      RankedTensorType res = shaped(op->getResult(0));
      op->getResult(0).setType(withLast(q, res.getShape().back()));
      return success();
    }
    // The token count (dim 0) of a split activation is the same number.
    if (auto d = dyn_cast<tensor::DimOp>(op); d && d.getConstantIndex() == 0)
      return success();
    if (isa<func::ReturnOp>(op))
      return success();
    return op->emitError() << "hyc-global-shard: does not know how to split "
                           << op->getName() << " (its input is a rank's shard)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    if (tpSize < 1 || tpRank < 0 || tpRank >= tpSize) {
      module.emitError() << "hyc-global-shard: expected 0 <= tp-rank < tp-size, got rank "
                         << int64_t(tpRank) << " of " << int64_t(tpSize);
      return signalPassFailure();
    }
    if (epExchange != "all-to-all" && epExchange != "all-reduce") {
      module.emitError() << "hyc-global-shard: ep-exchange must be all-to-all or all-reduce, "
                            "got '"
                         << epExchange << "'";
      return signalPassFailure();
    }
    if (epSize != 1 && epSize != tpSize) {
      module.emitError() << "hyc-global-shard: ep-size " << int64_t(epSize)
                         << " must be 1 or the tp-size " << int64_t(tpSize)
                         << " (experts are placed over the tensor-parallel ranks)";
      return signalPassFailure();
    }
    if (tpSize == 1)
      return;
    llvm::MapVector<StringRef, Attribute> shards;
    int64_t kvHeads = -1;
    for (auto fn : module.getOps<func::FuncOp>()) {
      llvm::MapVector<Operation *, Split> splits;
      llvm::SetVector<Operation *> rowGemms;
      reduceAfter.clear();
      gatherAfter.clear();
      if (!decide(fn, splits, rowGemms))
        return signalPassFailure();
      decideHead(fn, splits, rowGemms);

      // The KV cache keeps the rank's kv heads.
      auto newCache = [&](Type t) -> FailureOr<Type> {
        auto kv = dyn_cast<KVCacheType>(t);
        if (!kv || latentCache)
          return t;
        const Cut cut = kvCut(kv.getNumKvHeads());
        if (cut.parts < 0) {
          fn.emitError() << "hyc-global-shard: " << kv.getNumKvHeads()
                         << " kv heads do not split over " << int64_t(tpSize) << " ranks";
          return failure();
        }
        kvHeads = kv.getNumKvHeads() / (cut.parts ? cut.parts : int64_t(tpSize));
        return Type(KVCacheType::get(ctx, kv.getNumLayers(), kvHeads, kv.getKHeadDim(),
                                     kv.getVHeadDim()));
      };
      for (BlockArgument arg : fn.getArguments()) {
        FailureOr<Type> t = newCache(arg.getType());
        if (failed(t))
          return signalPassFailure();
        arg.setType(*t);
      }

      // Split params, then result types in program order.
      for (auto &[op, split] : splits) {
        auto type = cast<RankedTensorType>(split.param.getType());
        SmallVector<int64_t> shape(type.getShape());
        const int64_t stored = shape[split.dim];
        const bool plain = split.parts == tpSize && split.index == tpRank && split.whole == stored;
        shape[split.dim] = split.whole / split.parts;
        split.param.getResult().setType(RankedTensorType::get(shape, type.getElementType()));
        SmallVector<int64_t> shard = {split.dim, split.index, split.parts};
        if (split.whole != stored)
          shard.push_back(split.whole);
        split.param->setAttr("hyc.shard", DenseI64ArrayAttr::get(ctx, shard));
        // What the writer reads: a dim (rank r of tp-size equal parts), or
        // [dim, parts, index, whole] (kv-head parts, padding).
        auto spec = [&](int64_t dim) -> Attribute {
          if (plain)
            return IntegerAttr::get(IntegerType::get(ctx, 64), dim);
          return DenseI64ArrayAttr::get(ctx, {dim, split.parts, split.index, split.whole});
        };
        // Expert stacks are read expert by expert ("experts.*." -> "experts.e."),
        // each an [N, K] matrix split along dim - 1.
        StringRef name = split.param.getRef().getTensor();
        if (size_t at = name.find("experts.*."); at != StringRef::npos && shape.size() == 3) {
          for (int64_t e = 0; e < shape[0]; ++e)
            shards[StringAttr::get(ctx, name.take_front(at) + "experts." + Twine(e) + "." +
                                            name.drop_front(at + 10))
                       .getValue()] = spec(split.dim - 1);
        } else {
          shards[name] = spec(split.dim);
        }
      }
      DenseSet<Value> changed;
      for (auto &[op, split] : splits)
        changed.insert(split.param.getResult());
      for (BlockArgument arg : fn.getArguments())
        if (isa<KVCacheType>(arg.getType()))
          changed.insert(arg);
      bool ok = true;
      fn.walk([&](Operation *op) {
        if (!ok || isa<ParamOp>(op))
          return;
        if (llvm::none_of(op->getOperands(), [&](Value v) { return changed.contains(v); }))
          return;
        if (failed(retype(op))) {
          ok = false;
          return;
        }
        // A row-parallel GEMM's result is a partial sum: the all-reduce
        // makes it whole again, and nothing after it changes.
        if (rowGemms.contains(op) || isa<tensor::DimOp>(op))
          return;
        for (Value r : op->getResults())
          changed.insert(r);
      });
      if (!ok)
        return signalPassFailure();
      for (Operation *op : reduceAfter) {
        OpBuilder b(op->getContext());
        b.setInsertionPointAfter(op);
        Value partial = op->getResult(0);
        auto reduced = AllReduceOp::create(b, op->getLoc(), partial.getType(), partial,
                                           ReduceKindAttr::get(ctx, ReduceKind::sum),
                                           b.getI64IntegerAttr(tpSize));
        partial.replaceAllUsesExcept(reduced.getResult(), reduced);
      }
      for (Operation *op : gatherAfter) {
        OpBuilder b(op->getContext());
        b.setInsertionPointAfter(op);
        Value block = op->getResult(0);
        auto t = cast<RankedTensorType>(block.getType());
        SmallVector<int64_t> shape(t.getShape());
        shape.back() *= tpSize;
        auto gathered = AllGatherOp::create(
            b, op->getLoc(), RankedTensorType::get(shape, t.getElementType()), block,
            b.getI64IntegerAttr(t.getRank() - 1), b.getI64IntegerAttr(tpSize));
        block.replaceAllUsesExcept(gathered.getResult(), gathered);
      }
      auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
      fn.setType(FunctionType::get(ctx, fn.getBody().getArgumentTypes(), ret.getOperandTypes()));
    }

    SmallVector<NamedAttribute> shardAttrs;
    for (auto &[name, spec] : shards)
      shardAttrs.push_back(NamedAttribute(StringAttr::get(ctx, name), spec));
    Builder b(ctx);
    module->setAttr("hyc.tensor_parallel",
                    b.getDictionaryAttr({b.getNamedAttr("rank", b.getI64IntegerAttr(tpRank)),
                                         b.getNamedAttr("size", b.getI64IntegerAttr(tpSize)),
                                         b.getNamedAttr("shards",
                                                        b.getDictionaryAttr(shardAttrs))}));
    // The step bounds carry the cache geometry the runtime allocates.
    if (auto bounds = module->getAttrOfType<DictionaryAttr>("hyc.step_bounds");
        bounds && kvHeads > 0) {
      NamedAttrList list(bounds);
      list.set("kv_num_kv_heads", b.getI64IntegerAttr(kvHeads));
      module->setAttr("hyc.step_bounds", list.getDictionary(ctx));
    }
  }
};

} // namespace
