//===- ConvertHycKernelToLLVM.cpp - hyc_kernel entries -> LLVM dialect ----===//
//
// The last conversion: each kernel-level entry function becomes
// `llvm.func @hyc_<entry>_v0(step, kv, weights, arena) -> i32` following
// runtime/include/hyrt/abi.h. Buffers become addresses (arena + offset, a
// weight-table slot, a field of the step), step sizes become loads, a
// brgemm dispatch becomes the address of the generated kernel (recorded in
// `hyc.kernels` for the compiler to generate and embed), constant tables
// become internal globals and every ukernel a call. Nothing is decided here.
//
// Every call is preceded by `hyrt_profile_mark(kind)` (kind = the ukernel's
// name as a constant string) and the entry ends with a mark of null: with
// profiling off (the default) a mark is a load and a branch, with it on
// (`hyc bench --profile`) the artifact attributes wall time to op kinds.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelSchemes.h"
#include "passes/Passes.h"

#include "hyrt/abi.h"
#include "hyrt/gemm_layout.h"

#include "dialects/hyc_kernel/HycKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/TypeSwitch.h"

namespace hyc {
#define GEN_PASS_DEF_CONVERTHYCKERNELTOLLVM
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// An exported `void *accessor()` that returns `state()`, a runtime
/// function linked into the library with hidden visibility.
void emitStateAccessor(OpBuilder &b, Location loc, StringRef accessor, StringRef state) {
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  auto fnTy = LLVM::LLVMFunctionType::get(ptrTy, {});
  auto stateFn = LLVM::LLVMFuncOp::create(b, loc, state, fnTy);
  auto accessorFn = LLVM::LLVMFuncOp::create(b, loc, accessor, fnTy);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(accessorFn.addEntryBlock(b));
  Value p = LLVM::CallOp::create(b, loc, stateFn, ValueRange{}).getResult();
  LLVM::ReturnOp::create(b, loc, p);
}

/// Byte offsets of hyrt_step_v0 fields (abi.h, LP64).
enum StepField : int64_t {
  kNumTokens = 0,
  kTokens = 16,
  kPositions = 24,
  kLogits = 80,
  kNumLogitRows = 88,
  kLogitRows = 96,
};

// The ABI the artifact's library exports (the runtime refuses others).
constexpr int64_t kAbiVersion = HYRT_ABI_VERSION;

/// How an integer-codes layout scales its codes inside the panels, as the
/// kernel's descriptor takes it (codegen/brgemm.h "Grouped integer
/// kernels"); group 0 for every other layout.
struct CodesFormat {
  int64_t group = 0;       ///< K-elements per in-panel scale
  bool asymmetric = false; ///< panels carry mins
  int64_t superGroup = 0;  ///< two-level scales (d * sc) per super-block; 0: fp16
  std::string codebook;    ///< "" or a code book ("iq4nl")
};

/// A generated block kernel the module calls.
struct KernelUse {
  std::string name, isa, types;
  int64_t k, mMax;
  bool accumulate = false; ///< C += A.B (dispatch without zero_init)
  bool streamC = false;    ///< non-temporal C stores (dispatch stream_c)
  CodesFormat codes;       ///< integer codes: the in-panel scale format
};

/// The integer-code scheme of a dispatch's layout, or -1.
int32_t codesSchemeOf(StringRef bLayout) {
  return hyrt_gemm_code_scheme_of_layout(bLayout.data(), bLayout.size());
}

/// The scale format of a b_layout (hyrt_gemm_code_format of its scheme;
/// group 0 for layouts that are not integer codes): it travels to the
/// kernel generator.
CodesFormat codesFormat(StringRef bLayout) {
  CodesFormat f;
  if (int32_t scheme = codesSchemeOf(bLayout); scheme >= 0) {
    const hyrt_code_format c = hyrt_gemm_code_format(scheme);
    f.group = c.group, f.asymmetric = c.asymmetric, f.superGroup = c.super_group;
    f.codebook = c.codebook ? "iq4nl" : "";
  }
  return f;
}

/// What a kernel's name adds for a codes format beyond one symmetric fp16
/// scale per group (whose names predate formats and stay as they are), in
/// brgemm_name's spelling: "_g32s256a", "_g32_iq4", ...
std::string formatSuffix(const CodesFormat &f) {
  if (!f.asymmetric && !f.superGroup && f.codebook.empty())
    return "";
  std::string s = "_g" + std::to_string(f.group);
  if (f.superGroup)
    s += "s" + std::to_string(f.superGroup);
  if (f.asymmetric)
    s += "a";
  if (f.codebook == "iq4nl")
    s += "_iq4";
  else if (!f.codebook.empty())
    s += "_" + f.codebook;
  return s;
}

/// The kernel-name spelling of a dispatch's (A, B) types.
StringRef typesName(Type a, Type b, StringRef bLayout) {
  if (int32_t codes = codesSchemeOf(bLayout); codes >= 0)
    return hyrt_gemm_code_format(codes).bits == 4 ? "s8u4f32" : "s8u8f32";
  if (a.isF32() && b.isF32())
    return "f32f32f32";
  if (a.isF32() && b.isBF16())
    return "f32bf16f32";
  if (a.isBF16() && b.isBF16())
    return "bf16bf16f32";
  if (a.isInteger(8) && b.isInteger(8))
    return "u8s8f32";
  if (a.isBF16() && isa<Float8E4M3FNType>(b))
    return "bf16f8f32";
  return "";
}

class EntryConversion {
public:
  EntryConversion(ModuleOp module, func::FuncOp fn,
                  std::vector<KernelUse> &kernels)
      : module(module), fn(fn), b(module.getContext()), kernels(kernels) {}

  LogicalResult run();

private:
  LogicalResult convert(Operation *op);
  Value lookup(Value v) { return mapped.lookup(v); }
  Value i64(int64_t v) {
    return LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
  }
  Value stepField(int64_t offset, Type type);
  Value buffer(kernel::BufferOp op);
  Value dispatch(kernel::BrgemmDispatchOp op);
  Value constantTable(kernel::ConstantTableOp op);
  LogicalResult ukernel(kernel::UkernelOp op);
  void profileMark(StringRef kind);
  LogicalResult checkStep(LLVM::LLVMFuncOp llvmFn, bool decode);

  ModuleOp module;
  func::FuncOp fn;
  OpBuilder b;
  std::vector<KernelUse> &kernels;
  Location loc = UnknownLoc::get(module.getContext());
  DenseMap<Value, Value> mapped;
  Value stepArg, kvArg, weightsArg, arenaArg;
};

Value EntryConversion::stepField(int64_t offset, Type type) {
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  Value addr = LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), stepArg,
                                   ArrayRef<LLVM::GEPArg>{int32_t(offset)});
  return LLVM::LoadOp::create(b, loc, type, addr);
}

Value EntryConversion::buffer(kernel::BufferOp op) {
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  StringRef space = op.getSpace();
  if (space == "arena" || space == "scratch")
    // The offset is an i64 value: GEP's embedded constants hold only 29
    // bits, and arenas at large bounds pass 256 MiB.
    return LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), arenaArg,
                               ValueRange{i64(op.getOffset())});
  if (space == "weight") {
    Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, weightsArg,
                                     ArrayRef<LLVM::GEPArg>{int32_t(op.getOffset())});
    return LLVM::LoadOp::create(b, loc, ptrTy, slot);
  }
  if (space == "step_tokens")
    return stepField(kTokens, ptrTy);
  if (space == "step_positions")
    return stepField(kPositions, ptrTy);
  if (space == "step_logits")
    return stepField(kLogits, ptrTy);
  if (space == "step_logit_rows")
    return stepField(kLogitRows, ptrTy);
  return LLVM::ZeroOp::create(b, loc, ptrTy);
}

Value EntryConversion::dispatch(kernel::BrgemmDispatchOp op) {
  ArrayRef<int64_t> shape = op.getShape();
  StringRef types = typesName(op.getAType(), op.getBType(), op.getBLayout());
  std::string isa = op.getIsa() ? op.getIsa()->str() : "";
  const CodesFormat codes = codesFormat(op.getBLayout());
  std::string name = "hyc_brgemm_" + types.str() + formatSuffix(codes) + "_" +
                     std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" +
                     std::to_string(shape[2]) + "_" + isa +
                     (op.getZeroInit() ? "" : "_acc") + (op.getStreamC() ? "_nt" : "");
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  if (!module.lookupSymbol<LLVM::LLVMFuncOp>(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto i64Ty = b.getI64Type();
    auto type = LLVM::LLVMFunctionType::get(
        LLVM::LLVMVoidType::get(b.getContext()),
        {ptrTy, i64Ty, ptrTy, ptrTy, i64Ty, i64Ty, ptrTy});
    LLVM::LLVMFuncOp::create(b, loc, name, type);
    kernels.push_back({name, isa, types.str(), shape[2], shape[0], !op.getZeroInit(),
                       op.getStreamC(), codes});
  }
  return LLVM::AddressOfOp::create(b, loc, ptrTy, name);
}

Value EntryConversion::constantTable(kernel::ConstantTableOp op) {
  auto values = cast<DenseElementsAttr>(op.getValues());
  // One global per distinct content; a hash collision with other contents
  // gets a name of its own.
  const std::string base =
      "hyc_const_" + std::to_string(static_cast<size_t>(
                                        llvm::hash_value(values.getRawData())) &
                                    0xffffffffu);
  std::string key = base;
  auto global = module.lookupSymbol<LLVM::GlobalOp>(key);
  for (int suffix = 1; global && global.getValueAttr() != values; ++suffix) {
    key = base + "_" + std::to_string(suffix);
    global = module.lookupSymbol<LLVM::GlobalOp>(key);
  }
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto arrayTy = LLVM::LLVMArrayType::get(values.getElementType(),
                                            values.getNumElements());
    global = LLVM::GlobalOp::create(b, loc, arrayTy, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, key, values);
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

void EntryConversion::profileMark(StringRef kind) {
  MLIRContext *ctx = b.getContext();
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  auto markFn = module.lookupSymbol<LLVM::LLVMFuncOp>("hyrt_profile_mark");
  if (!markFn) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    markFn = LLVM::LLVMFuncOp::create(
        b, loc, "hyrt_profile_mark",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrTy}));
  }
  Value name;
  if (kind.empty()) {
    name = LLVM::ZeroOp::create(b, loc, ptrTy);
  } else {
    const std::string symbol = ("hyc_kind_" + kind).str();
    if (!module.lookupSymbol<LLVM::GlobalOp>(symbol)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      std::string text = kind.str();
      text.push_back('\0');
      LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
          /*isConstant=*/true, LLVM::Linkage::Internal, symbol,
          b.getStringAttr(text));
    }
    name = LLVM::AddressOfOp::create(b, loc, ptrTy, symbol);
  }
  LLVM::CallOp::create(b, loc, markFn, ValueRange{name});
}

LogicalResult EntryConversion::ukernel(kernel::UkernelOp op) {
  SmallVector<Value> args;
  if (op.getKvStep())
    args.append({kvArg, stepArg});
  for (Value a : op.getArgs()) {
    Value v = lookup(a);
    if (!v)
      return op.emitError() << "operand " << a << " was not converted";
    args.push_back(v);
  }
  auto fnOp = module.lookupSymbol<LLVM::LLVMFuncOp>(op.getName());
  if (!fnOp) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    SmallVector<Type> types;
    for (Value a : args)
      types.push_back(a.getType());
    fnOp = LLVM::LLVMFuncOp::create(
        b, loc, op.getName(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()), types));
  }
  profileMark(op.getName());
  LLVM::CallOp::create(b, loc, fnOp, ValueRange(args));
  return success();
}

LogicalResult EntryConversion::convert(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> LogicalResult {
        Type t = c.getType().isIndex() ? b.getI64Type() : c.getType();
        Attribute value = c.getValue();
        if (auto i = dyn_cast<IntegerAttr>(value))
          value = b.getIntegerAttr(t, i.getValue().getSExtValue());
        mapped[c] = LLVM::ConstantOp::create(b, loc, t, cast<TypedAttr>(value));
        return success();
      })
      .Case<arith::MulIOp>([&](arith::MulIOp m) {
        mapped[m] = LLVM::MulOp::create(b, loc, lookup(m.getLhs()), lookup(m.getRhs()));
        return success();
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp c) -> LogicalResult {
        if (c.getPredicate() != arith::CmpIPredicate::sge)
          return c.emitError("only sge comparisons are lowered here");
        mapped[c] = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sge,
                                         lookup(c.getLhs()), lookup(c.getRhs()));
        return success();
      })
      .Case<arith::SelectOp>([&](arith::SelectOp sel) {
        mapped[sel] = LLVM::SelectOp::create(b, loc, lookup(sel.getCondition()),
                                             lookup(sel.getTrueValue()),
                                             lookup(sel.getFalseValue()));
        return success();
      })
      .Case<kernel::StepSizeOp>([&](kernel::StepSizeOp s) {
        mapped[s] = stepField(s.getField() == "num_tokens" ? kNumTokens : kNumLogitRows,
                              b.getI64Type());
        return success();
      })
      .Case<kernel::BufferOp>([&](kernel::BufferOp o) {
        mapped[o] = buffer(o);
        return success();
      })
      .Case<kernel::BrgemmDispatchOp>([&](kernel::BrgemmDispatchOp d) -> LogicalResult {
        if (typesName(d.getAType(), d.getBType(), d.getBLayout()).empty() || !d.getIsa())
          return d.emitError("no generated kernel for this dispatch (types or "
                             "isa unknown)");
        mapped[d] = dispatch(d);
        return success();
      })
      .Case<kernel::ConstantTableOp>([&](kernel::ConstantTableOp t) {
        mapped[t] = constantTable(t);
        return success();
      })
      .Case<kernel::UkernelOp>([&](kernel::UkernelOp u) { return ukernel(u); })
      .Case<func::ReturnOp>([&](func::ReturnOp) {
        profileMark("");
        LLVM::ReturnOp::create(
            b, loc, LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                             b.getI32IntegerAttr(0)));
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitError() << "convert-hyc-kernel-to-llvm: unexpected '"
                              << o->getName()
                              << "' (run hyc-cpu-lower-to-kernel first)";
      });
}

/// The entry's first call: hyrt_check_step_v0(step, kv, &bounds) with the
/// module's compiled bounds (hyc.step_bounds), returning its code when the
/// step does not fit (abi.h). The rest of the entry goes into a new block.
/// A module without the attribute (hand-written IR in tests) gets no check.
LogicalResult EntryConversion::checkStep(LLVM::LLVMFuncOp llvmFn, bool decode) {
  auto bounds = module->getAttrOfType<DictionaryAttr>("hyc.step_bounds");
  if (!bounds)
    return success();
  auto field = [&](StringRef name) -> std::optional<int64_t> {
    if (auto a = dyn_cast_or_null<IntegerAttr>(bounds.get(name)))
      return a.getInt();
    return std::nullopt;
  };
  // kv_dtype: the strategy's decision (f32 unless it recorded another).
  int64_t kvDtype = 0;
  if (auto d = module->getAttrOfType<StringAttr>("hyc_cpu.kv_cache_dtype"))
    kvDtype = d.getValue() == "bf16" ? 1 : d.getValue() == "int8" ? 2 : 0;
  SmallVector<int64_t> values;
  for (StringRef name : {decode ? "max_seqs" : "max_batch_tokens", "max_seqs",
                         "max_seq_len", "vocab_size", "kv_num_layers",
                         "kv_num_kv_heads", "k_head_dim", "v_head_dim"}) {
    std::optional<int64_t> v = field(name);
    if (!v)
      return module.emitError() << "hyc.step_bounds lacks an integer '" << name << "'";
    values.push_back(*v);
  }
  values.push_back(kvDtype);
  values.push_back(decode ? 1 : 0);

  MLIRContext *ctx = b.getContext();
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  auto i32 = b.getI32Type();
  const std::string symbol = decode ? "hyc_step_bounds_decode" : "hyc_step_bounds_extend";
  auto checkFn = module.lookupSymbol<LLVM::LLVMFuncOp>("hyrt_check_step_v0");
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    if (!checkFn)
      checkFn = LLVM::LLVMFuncOp::create(
          b, loc, "hyrt_check_step_v0",
          LLVM::LLVMFunctionType::get(i32, {ptrTy, ptrTy, ptrTy}));
    auto arrayTy = LLVM::LLVMArrayType::get(b.getI64Type(), values.size());
    LLVM::GlobalOp::create(
        b, loc, arrayTy, /*isConstant=*/true, LLVM::Linkage::Internal, symbol,
        DenseElementsAttr::get(
            RankedTensorType::get({int64_t(values.size())}, b.getI64Type()),
            ArrayRef<int64_t>(values)));
  }
  Value boundsPtr = LLVM::AddressOfOp::create(b, loc, ptrTy, symbol);
  Value rc = LLVM::CallOp::create(b, loc, checkFn, ValueRange{stepArg, kvArg, boundsPtr})
                 .getResult();
  Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  Value bad = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, rc, zero);
  Block *refuse = b.createBlock(&llvmFn.getBody(), llvmFn.getBody().end());
  LLVM::ReturnOp::create(b, loc, rc);
  Block *body = b.createBlock(&llvmFn.getBody(), llvmFn.getBody().end());
  b.setInsertionPointToEnd(&llvmFn.getBody().front());
  LLVM::CondBrOp::create(b, loc, bad, refuse, body);
  b.setInsertionPointToStart(body);
  return success();
}

LogicalResult EntryConversion::run() {
  if (fn.getNumArguments() != 0 || fn.getNumResults() != 0)
    return fn.emitError("a kernel-level entry takes and returns nothing (run "
                        "hyc-cpu-lower-to-kernel first)");
  MLIRContext *ctx = module.getContext();
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  auto entry = fn->getAttrOfType<StringAttr>("hyc.entry");
  b.setInsertionPoint(fn);
  loc = fn.getLoc();
  auto llvmFn = LLVM::LLVMFuncOp::create(
      b, loc, ("hyc_" + entry.getValue() + "_v0").str(),
      LLVM::LLVMFunctionType::get(b.getI32Type(), {ptrTy, ptrTy, ptrTy, ptrTy}));
  Block *block = llvmFn.addEntryBlock(b);
  b.setInsertionPointToStart(block);
  stepArg = block->getArgument(0);
  kvArg = block->getArgument(1);
  weightsArg = block->getArgument(2);
  arenaArg = block->getArgument(3);
  if (failed(checkStep(llvmFn, entry.getValue() == "decode")))
    return failure();
  for (Operation &op : fn.getBody().front()) {
    loc = op.getLoc();
    if (failed(convert(&op)))
      return failure();
  }
  fn.erase();
  return success();
}

struct ConvertHycKernelToLLVMPass
    : public hyc::impl::ConvertHycKernelToLLVMBase<ConvertHycKernelToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto arena = module->getAttrOfType<IntegerAttr>("hyc.arena_bytes");
    if (!arena) {
      module.emitError("no memory plan (hyc.arena_bytes): run "
                       "hyc-cpu-plan-memory and hyc-cpu-lower-to-kernel first");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("hyc.entry"))
        entries.push_back(fn);
    if (entries.empty()) {
      module.emitError("no function with a hyc.entry attribute to convert");
      return signalPassFailure();
    }
    std::vector<KernelUse> kernels;
    for (func::FuncOp fn : entries)
      if (failed(EntryConversion(module, fn, kernels).run()))
        return signalPassFailure();

    OpBuilder b(module.getContext());
    b.setInsertionPointToStart(module.getBody());
    Location loc = module.getLoc();
    LLVM::GlobalOp::create(b, loc, b.getI32Type(), /*isConstant=*/true,
                           LLVM::Linkage::External, "hyc_abi_version",
                           b.getI32IntegerAttr(kAbiVersion));
    LLVM::GlobalOp::create(b, loc, b.getI64Type(), /*isConstant=*/true,
                           LLVM::Linkage::External, "hyc_arena_bytes",
                           b.getI64IntegerAttr(arena.getInt()));
    // The ISA variant this library was compiled for: the runtime kernels
    // linked into it read it (runtime/cpu/host_isa.h) so that an avx2
    // variant runs no AVX-512 body even on an AVX-512 host (HYC_ISA=avx2).
    if (auto variant = module->getAttrOfType<StringAttr>("hyc.variant")) {
      std::string text = variant.getValue().str();
      text.push_back('\0');
      auto arrayTy = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
      LLVM::GlobalOp::create(b, loc, arrayTy, /*isConstant=*/true,
                             LLVM::Linkage::External, "hyc_variant",
                             b.getStringAttr(text));
    }
    // hyc_profile_v0() -> hyrt_profile_state(): the runtime's handle on the
    // artifact's own profile (abi.h); the libraries' symbols stay hidden.
    emitStateAccessor(b, loc, "hyc_profile_v0", "hyrt_profile_state");
    // hyc_observe_v0() -> hyrt_observe_state(): only in calibration builds,
    // whose observers call hyrt_ref_observe_absmax (abi.h).
    if (module.lookupSymbol<LLVM::LLVMFuncOp>("hyrt_ref_observe_absmax"))
      emitStateAccessor(b, loc, "hyc_observe_v0", "hyrt_observe_state");
    // hyc_collectives_v0() -> hyrt_collectives_state(): only where the code
    // exchanges data across ranks; the runtime registers the group there.
    if (llvm::any_of(std::initializer_list<const char *>{"hyrt_ref_all_reduce_sum",
                                                         "hyrt_ref_all_gather_cols",
                                                         "hyrt_ref_moe_dispatch",
                                                         "hyrt_ref_moe_undispatch",
                                                         "hyrt_cpu_all_reduce_sum",
                                                         "hyrt_cpu_all_gather_cols",
                                                         "hyrt_cpu_moe_dispatch",
                                                         "hyrt_cpu_moe_undispatch"},
                     [&](const char *f) { return module.lookupSymbol<LLVM::LLVMFuncOp>(f); }))
      emitStateAccessor(b, loc, "hyc_collectives_v0", "hyrt_collectives_state");
    // Kernels for the compiler to generate and embed: {name, k, m_max, isa,
    // types, [accumulate], [stream_c], [group, [asymmetric], [super_group], [codebook]]}.
    SmallVector<Attribute> kernelAttrs;
    for (const KernelUse &k : kernels) {
      SmallVector<NamedAttribute> fields = {
          b.getNamedAttr("name", b.getStringAttr(k.name)),
          b.getNamedAttr("k", b.getI64IntegerAttr(k.k)),
          b.getNamedAttr("m_max", b.getI64IntegerAttr(k.mMax)),
          b.getNamedAttr("isa", b.getStringAttr(k.isa)),
          b.getNamedAttr("types", b.getStringAttr(k.types))};
      if (k.accumulate) // C += A.B (per-group W8A8), else C = A.B
        fields.push_back(b.getNamedAttr("accumulate", b.getUnitAttr()));
      if (k.streamC) // C stored around the caches
        fields.push_back(b.getNamedAttr("stream_c", b.getUnitAttr()));
      if (k.codes.group) { // integer codes with in-panel scales per `group`
        fields.push_back(b.getNamedAttr("group", b.getI64IntegerAttr(k.codes.group)));
        if (k.codes.asymmetric)
          fields.push_back(b.getNamedAttr("asymmetric", b.getUnitAttr()));
        if (k.codes.superGroup)
          fields.push_back(
              b.getNamedAttr("super_group", b.getI64IntegerAttr(k.codes.superGroup)));
        if (!k.codes.codebook.empty())
          fields.push_back(b.getNamedAttr("codebook", b.getStringAttr(k.codes.codebook)));
      }
      kernelAttrs.push_back(b.getDictionaryAttr(fields));
    }
    module->setAttr("hyc.kernels", b.getArrayAttr(kernelAttrs));
  }
};

} // namespace
