//===- HycTypes.td - hyc types -----------------------------*- tablegen -*-===//

#ifndef HYC_TYPES_TD
#define HYC_TYPES_TD

include "dialects/hyc/HycDialect.td"

def Hyc_KVCacheType : TypeDef<Hyc_Dialect, "KVCache"> {
  let mnemonic = "kv_cache";
  let summary = "The paged KV cache of a model, threaded through a step";
  let description = [{
    Opaque handle to the paged KV cache (page pool, block tables and sequence
    metadata live in the runtime). Ops that write it return a new value so
    that ordering is explicit in SSA. MLA caches store the latent: one KV
    head of width `kv_lora_rank + rope_dim` and `v_head_dim = 0`.

    ```mlir
    !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 64, v_head_dim = 64>
    ```
  }];
  let parameters = (ins "int64_t":$num_layers, "int64_t":$num_kv_heads,
                        "int64_t":$k_head_dim, "int64_t":$v_head_dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // HYC_TYPES_TD
