#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: small valid files for each reader, built
here from the formats themselves (no checkpoint is copied). Run from anywhere:

    python3 test/fuzz/make_corpus.py [OUT_DIR]   # default: test/fuzz/corpus

Deterministic: the same bytes on every run, so the checked-in corpus can be
regenerated and compared.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def floats(n, seed=1):
    """n small deterministic floats (a linear congruential sequence)."""
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append((x % 2001 - 1000) / 4000.0)
    return out


def f32_bytes(values):
    return struct.pack("<%df" % len(values), *values)


# ----------------------------------------------------------------- GGUF ---
GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STR, GGUF_ARR, GGUF_U64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_F16 = 0, 1


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, v):
    if kind == GGUF_U32:
        return struct.pack("<I", v)
    if kind == GGUF_I32:
        return struct.pack("<i", v)
    if kind == GGUF_U64:
        return struct.pack("<Q", v)
    if kind == GGUF_F32:
        return struct.pack("<f", v)
    if kind == GGUF_BOOL:
        return struct.pack("<B", 1 if v else 0)
    if kind == GGUF_STR:
        return gguf_str(v)
    elem, items = v
    return struct.pack("<IQ", elem, len(items)) + b"".join(gguf_value(elem, x) for x in items)


def gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, hf_shape, ggml_type, data)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, v in kvs:
        out += gguf_str(key) + struct.pack("<I", kind) + gguf_value(kind, v)
    offset, blobs = 0, []
    for name, shape, ggml_type, data in tensors:
        ne = list(reversed(shape))
        out += gguf_str(name) + struct.pack("<I", len(ne))
        out += struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", ggml_type, offset)
        pad = -len(data) % alignment
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    out += b"\0" * (-len(out) % alignment)
    return out + b"".join(blobs)


# ggml block types hyc dequantizes: (type id, values per block, bytes per block).
GGML_BLOCK_TYPES = [(2, 32, 18), (3, 32, 20), (6, 32, 22), (7, 32, 24), (8, 32, 34),
                    (10, 256, 84), (11, 256, 110), (12, 256, 144), (13, 256, 176),
                    (14, 256, 210), (20, 32, 18), (23, 256, 136), (39, 32, 17)]


def gguf_block_types():
    """One [2, block] tensor of every block type, bytes a fixed pattern (so
    the fuzzer starts inside each dequantizer)."""
    tensors = []
    for ggml_type, block, nbytes in GGML_BLOCK_TYPES:
        data = bytes((i * 37 + ggml_type) % 251 for i in range(2 * nbytes))
        tensors.append(("t%d" % ggml_type, [2, block], ggml_type, data))
    return gguf([("general.architecture", GGUF_STR, "llama")], tensors)


def gguf_llama(arch="llama", f16=False, tokenizer="llama", edit=None):
    vocab, dim, heads, kv_heads, ff = 8, 4, 2, 1, 8
    hd = dim // heads
    p = arch + "."
    kvs = [("general.architecture", GGUF_STR, arch),
           (p + "context_length", GGUF_U32, 16),
           (p + "embedding_length", GGUF_U32, dim),
           (p + "block_count", GGUF_U32, 1),
           (p + "feed_forward_length", GGUF_U32, ff),
           (p + "attention.head_count", GGUF_U32, heads),
           (p + "attention.head_count_kv", GGUF_U32, kv_heads),
           (p + "rope.freq_base", GGUF_F32, 10000.0),
           (p + "attention.layer_norm_rms_epsilon", GGUF_F32, 1e-5),
           ("tokenizer.ggml.bos_token_id", GGUF_U32, 1),
           ("tokenizer.ggml.eos_token_id", GGUF_U32, 2)]
    if tokenizer == "llama":
        tokens = ["<unk>", "<s>", "</s>", "\u2581", "a", "\u2581a", "<0x41>", "b"]
        kvs += [("tokenizer.ggml.model", GGUF_STR, "llama"),
                ("tokenizer.ggml.tokens", GGUF_ARR, (GGUF_STR, tokens)),
                ("tokenizer.ggml.scores", GGUF_ARR, (GGUF_F32, [0.0, 0.0, 0.0, -1.0, -2.0, -0.5, 0.0, -3.0])),
                ("tokenizer.ggml.token_type", GGUF_ARR, (GGUF_I32, [2, 3, 3, 1, 1, 1, 6, 1]))]
    else:
        tokens = ["<unk>", "<s>", "</s>", "H", "i", "Hi", "\u0120", "\u0120Hi"]
        kvs += [("tokenizer.ggml.model", GGUF_STR, "gpt2"),
                ("tokenizer.ggml.tokens", GGUF_ARR, (GGUF_STR, tokens)),
                ("tokenizer.ggml.merges", GGUF_ARR, (GGUF_STR, ["H i", "\u0120 Hi"]))]
    ttype = GGML_F16 if f16 else GGML_F32

    def t(name, shape, seed, matrix=True):
        n = 1
        for d in shape:
            n *= d
        vals = floats(n, seed)
        if matrix and f16:
            data = struct.pack("<%de" % n, *vals)
            return (name, shape, ttype, data)
        return (name, shape, GGML_F32, f32_bytes(vals))

    tensors = [t("token_embd.weight", [vocab, dim], 1),
               t("output_norm.weight", [dim], 2, False),
               t("output.weight", [vocab, dim], 3),
               t("blk.0.attn_norm.weight", [dim], 4, False),
               t("blk.0.attn_q.weight", [heads * hd, dim], 5),
               t("blk.0.attn_k.weight", [kv_heads * hd, dim], 6),
               t("blk.0.attn_v.weight", [kv_heads * hd, dim], 7),
               t("blk.0.attn_output.weight", [dim, heads * hd], 8),
               t("blk.0.ffn_norm.weight", [dim], 9, False),
               t("blk.0.ffn_gate.weight", [ff, dim], 10),
               t("blk.0.ffn_up.weight", [ff, dim], 11),
               t("blk.0.ffn_down.weight", [dim, ff], 12)]
    if arch == "qwen2":
        tensors += [t("blk.0.attn_q.bias", [heads * hd], 13, False),
                    t("blk.0.attn_k.bias", [kv_heads * hd], 14, False),
                    t("blk.0.attn_v.bias", [kv_heads * hd], 15, False)]
    if arch == "qwen3":
        tensors += [t("blk.0.attn_q_norm.weight", [hd], 16, False),
                    t("blk.0.attn_k_norm.weight", [hd], 17, False)]
    if edit:
        edit(kvs, tensors)
    return gguf(kvs, tensors)


def gguf_moe(arch, edit=None):
    """qwen3moe (stacked experts) or deepseek2 (MLA, split kv_b, shared
    expert, routing bias), one layer, F32."""
    vocab, dim, heads, ff, experts, eff = 8, 4, 2, 8, 2, 4
    p = arch + "."
    kvs = [("general.architecture", GGUF_STR, arch),
           (p + "context_length", GGUF_U32, 16),
           (p + "embedding_length", GGUF_U32, dim),
           (p + "block_count", GGUF_U32, 1),
           (p + "feed_forward_length", GGUF_U32, ff),
           (p + "attention.head_count", GGUF_U32, heads),
           (p + "rope.freq_base", GGUF_F32, 10000.0),
           (p + "attention.layer_norm_rms_epsilon", GGUF_F32, 1e-6),
           (p + "expert_count", GGUF_U32, experts),
           (p + "expert_used_count", GGUF_U32, 1),
           (p + "expert_feed_forward_length", GGUF_U32, eff)]
    seed = [20]

    def t(name, shape):
        n = 1
        for d in shape:
            n *= d
        seed[0] += 1
        return (name, shape, GGML_F32, f32_bytes(floats(n, seed[0])))

    tensors = [t("token_embd.weight", [vocab, dim]), t("output_norm.weight", [dim]),
               t("output.weight", [vocab, dim]), t("blk.0.attn_norm.weight", [dim]),
               t("blk.0.ffn_norm.weight", [dim]),
               t("blk.0.ffn_gate_inp.weight", [experts, dim]),
               t("blk.0.ffn_gate_exps.weight", [experts, eff, dim]),
               t("blk.0.ffn_up_exps.weight", [experts, eff, dim]),
               t("blk.0.ffn_down_exps.weight", [experts, dim, eff])]
    if arch == "qwen3moe":
        hd = 2
        kvs += [(p + "attention.head_count_kv", GGUF_U32, 1),
                (p + "attention.key_length", GGUF_U32, hd),
                (p + "attention.value_length", GGUF_U32, hd)]
        tensors += [t("blk.0.attn_q.weight", [heads * hd, dim]), t("blk.0.attn_k.weight", [hd, dim]),
                    t("blk.0.attn_v.weight", [hd, dim]), t("blk.0.attn_output.weight", [dim, heads * hd]),
                    t("blk.0.attn_q_norm.weight", [hd]), t("blk.0.attn_k_norm.weight", [hd])]
        if edit:
            edit(kvs, tensors)
        return gguf(kvs, tensors)
    rank, nope, rope, v = 4, 2, 2, 2
    kvs += [(p + "attention.head_count_kv", GGUF_U32, 1),
            (p + "attention.kv_lora_rank", GGUF_U32, rank),
            (p + "attention.key_length", GGUF_U32, rank + rope),
            (p + "attention.value_length", GGUF_U32, rank),
            (p + "attention.key_length_mla", GGUF_U32, nope + rope),
            (p + "attention.value_length_mla", GGUF_U32, v),
            (p + "rope.dimension_count", GGUF_U32, rope),
            (p + "leading_dense_block_count", GGUF_U32, 0),
            (p + "expert_shared_count", GGUF_U32, 1),
            (p + "expert_weights_scale", GGUF_F32, 2.5),
            (p + "expert_weights_norm", GGUF_BOOL, True),
            (p + "expert_gating_func", GGUF_U32, 2),
            (p + "rope.scaling.type", GGUF_STR, "yarn"),
            (p + "rope.scaling.factor", GGUF_F32, 4.0),
            (p + "rope.scaling.original_context_length", GGUF_U32, 4),
            (p + "rope.scaling.yarn_log_multiplier", GGUF_F32, 0.1)]
    tensors += [t("blk.0.attn_q.weight", [heads * (nope + rope), dim]),
                t("blk.0.attn_kv_a_mqa.weight", [rank + rope, dim]),
                t("blk.0.attn_kv_a_norm.weight", [rank]),
                t("blk.0.attn_k_b.weight", [heads, rank, nope]),
                t("blk.0.attn_v_b.weight", [heads, v, rank]),
                t("blk.0.attn_output.weight", [dim, heads * v]),
                t("blk.0.exp_probs_b.bias", [experts]),
                t("blk.0.ffn_gate_shexp.weight", [eff, dim]),
                t("blk.0.ffn_up_shexp.weight", [eff, dim]),
                t("blk.0.ffn_down_shexp.weight", [dim, eff])]
    if edit:
        edit(kvs, tensors)
    return gguf(kvs, tensors)


# ---------------------------------------------------------- safetensors ---
def safetensors(entries, metadata=None):
    """entries: [(name, dtype, shape, bytes)]."""
    header, offset, data = {}, 0, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        data += blob
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    return {
        "mixed.safetensors": safetensors([
            ("a.weight", "F32", [2, 3], f32_bytes(floats(6))),
            ("b.weight", "BF16", [4], struct.pack("<4H", 0x3f80, 0xbf80, 0x4000, 0x0000)),
            ("c.weight", "F16", [2, 2], struct.pack("<4e", 1.0, -2.0, 0.5, 0.25)),
            ("d.weight", "I8", [3], bytes([1, 255, 7])),
            ("e.weight", "I32", [1], struct.pack("<i", -5)),
            ("f.weight", "F8_E4M3", [2], bytes([0x38, 0xb8]))],
            {"format": "pt"}),
        "empty.safetensors": safetensors([]),
    }


# ---------------------------------------------------------- config.json ---
def hf_configs():
    base = {"vocab_size": 8, "hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 16,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2,
            "tie_word_embeddings": False, "hidden_act": "silu"}

    def cfg(arch, model_type, **extra):
        c = dict(base, architectures=[arch], model_type=model_type)
        c.update(extra)
        return c

    moe = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4,
           "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": []}
    mla = {"kv_lora_rank": 4, "q_lora_rank": None, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2,
           "v_head_dim": 2, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
           "moe_intermediate_size": 4, "first_k_dense_replace": 0, "moe_layer_freq": 1,
           "n_group": 2, "topk_group": 1, "routed_scaling_factor": 2.5, "norm_topk_prob": True,
           "scoring_func": "sigmoid", "topk_method": "noaux_tc"}
    return {
        "llama.json": cfg("LlamaForCausalLM", "llama"),
        "llama3.json": cfg("LlamaForCausalLM", "llama", rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8}),
        "qwen2.json": cfg("Qwen2ForCausalLM", "qwen2"),
        "qwen3.json": cfg("Qwen3ForCausalLM", "qwen3", head_dim=2),
        "qwen3moe.json": cfg("Qwen3MoeForCausalLM", "qwen3_moe", head_dim=2, **moe),
        "deepseekv3.json": cfg("DeepseekV3ForCausalLM", "deepseek_v3", rope_scaling={
            "type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4,
            "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, **mla),
        "deepseekv2.json": cfg("DeepseekV2ForCausalLM", "deepseek_v2",
                               **dict(mla, topk_method="group_limited_greedy", scoring_func="softmax")),
        "quantized.json": cfg("LlamaForCausalLM", "llama", quantization_config={
            "quant_method": "fp8", "weight_block_size": [128, 128]}),
    }


# ------------------------------------------------------------ llama2.c ---
def llama2c(version, dim=4, hidden=8, layers=1, heads=2, kv_heads=1, vocab=8, seq=4,
            shared=True, group=4):
    kv = dim // heads * kv_heads
    mats = [vocab * dim] + [dim * dim, kv * dim, kv * dim, dim * dim,
                            hidden * dim, dim * hidden, hidden * dim] * layers
    if version == 0:
        head = struct.pack("<7i", dim, hidden, layers, heads, kv_heads,
                           vocab if shared else -vocab, seq)
        sizes = ([vocab * dim] + [dim] * layers + [dim * dim] * layers + [kv * dim] * layers * 2 +
                 [dim * dim] * layers + [dim] * layers + [hidden * dim] * layers +
                 [dim * hidden] * layers + [hidden * dim] * layers + [dim] +
                 [seq * (dim // heads // 2)] * 2)
        if not shared:
            sizes.append(vocab * dim)
        return head + f32_bytes(floats(sum(sizes)))
    head = struct.pack("<Ii7iB", 0x616b3432, version, dim, hidden, layers, heads, kv_heads,
                       vocab, seq, 1 if shared else 0)
    if version == 2:
        head += struct.pack("<i", group)
    head += b"\0" * (256 - len(head))
    norms = f32_bytes(floats(2 * dim * layers + dim, 3))
    if not shared:
        mats.append(vocab * dim)
    if version == 1:
        return head + norms + f32_bytes(floats(sum(mats), 5))
    body = b""
    for n in mats:  # int8 values, then one fp32 scale per group
        body += bytes((i * 37) % 256 for i in range(n)) + f32_bytes([0.01] * (n // group))
    return head + norms + body


def tokenizer_bin(pieces, max_len=8):
    out = struct.pack("<i", max_len)
    for i, p in enumerate(pieces):
        b = p.encode()
        out += struct.pack("<fi", -float(i), len(b)) + b
    return out


LLAMA2C_PIECES = ["<unk>", "<s>", "</s>", " ", "a", " a", "\n", "b"]


# -------------------------------------------------------- tokenizer.json ---
def byte_level_alphabet():
    """GPT-2's printable stand-ins for the 256 bytes, in byte order."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def tokenizer_json():
    vocab = {c: i for i, c in enumerate(byte_level_alphabet())}
    merges = ["H e", "l l", "ll o", "He llo", "\u0120 w", "o r", "\u0120w or"]
    for m in merges:
        vocab[m.replace(" ", "")] = len(vocab)
    return {
        "version": "1.0",
        "added_tokens": [
            {"id": len(vocab), "content": "<|im_end|>", "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True},
            {"id": len(vocab) + 1, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'d|'s)| ?\\p{L}+| ?\\p{N}{1,2}| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab,
                  "merges": merges},
    }


def sentencepiece_tokenizer_json(model_type="BPE"):
    """Llama-2 style: Prepend/Replace normalizer, byte fallback, the
    Replace/ByteFallback/Fuse/Strip decoder (Unigram: Metaspace instead)."""
    meta = "\u2581"
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + \
        [meta, "H", "e", "l", "o", "w", "r", "d", meta + "H", "el", "lo", "ll",
         "llo", meta + "w", "or", meta + "wor"]
    special = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, c in enumerate(pieces[:3])]
    replace = {"type": "Replace", "pattern": {"String": meta}, "content": " "}
    tok = {"version": "1.0", "added_tokens": special, "post_processor": None}
    if model_type == "Unigram":
        tok["normalizer"] = None
        tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": meta,
                                "prepend_scheme": "first", "split": True}
        tok["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Metaspace", "replacement": meta, "prepend_scheme": "first", "split": True}]}
        tok["model"] = {"type": "Unigram", "unk_id": 0, "byte_fallback": True,
                        "vocab": [[p, -float(len(p) % 7)] for p in pieces]}
        return tok
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = [[a, b] for a in pieces[259:] for b in pieces[259:] if a + b in vocab]
    tok["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": meta},
        {"type": "Replace", "pattern": {"String": " "}, "content": meta}]}
    tok["pre_tokenizer"] = None
    tok["decoder"] = {"type": "Sequence", "decoders": [
        replace, {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    tok["model"] = {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                    "continuing_subword_prefix": None, "end_of_word_suffix": None,
                    "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                    "vocab": vocab, "merges": merges}
    return tok


def tokenizer_config():
    return {"add_bos_token": False, "eos_token": "<|im_end|>", "bos_token": None,
            "chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
                             "{{ m['content'] }}<|im_end|>\n{% endfor %}"
                             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}


# ------------------------------------------------------------ artifact ---
def manifest(variants=True):
    m = {"format": "hyc-artifact", "abi_version": 5, "target": "portable",
         "entry_points": {"extend": "hyc_extend_v0", "decode": "hyc_decode_v0"},
         "limits": {"max_seq_len": 16, "max_batch_tokens": 8, "max_seqs": 2},
         "model": {"arch": "llama", "source": "x.gguf", "vocab_size": 8, "hidden_size": 4,
                   "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "head_dim": 2,
                   "bos_token_id": 1, "eos_token_id": 2},
         "kv_cache": {"num_layers": 1, "num_kv_heads": 1, "k_head_dim": 2, "v_head_dim": 2,
                      "dtype": "f32"},
         "weights": {"file": "weights.bin", "tensors": [
             {"name": "model.embed_tokens.weight", "dtype": "f32", "shape": [8, 4],
              "offset": 0, "nbytes": 128, "xxh3": "0123456789abcdef"},
             {"name": "model.norm.weight", "dtype": "bf16_vnni2", "shape": [4],
              "offset": 128, "nbytes": 8, "xxh3": "fedcba9876543210"}]},
         "tokenizer": "tokenizer.hytk"}
    if variants:
        m["variants"] = [
            {"name": "avx2", "library": "model.avx2.so", "cpu_features": ["avx2", "fma"],
             "arena_bytes": 4096, "weights": [0, 1]},
            {"name": "avx512", "library": "model.avx512.so", "cpu_features": ["avx512f"],
             "arena_bytes": 4096, "weights": [1, 0]}]
        m["executable_variant"] = "avx2"
    else:
        m.update({"library": "model.so", "cpu_features": [], "arena_bytes": 1024})
    return m


def description(m, variant=None):
    """What the library compiled for `variant` of manifest `m` says about
    itself (hyc_artifact_desc_v0, runtime/artifact/description.cpp)."""
    v = m["variants"][variant] if variant is not None else {
        "name": m["target"], "arena_bytes": m["arena_bytes"],
        "weights": list(range(len(m["weights"]["tensors"])))}
    tensors = m["weights"]["tensors"]
    weights = [tensors[i] for i in v["weights"]]
    return {"abi_version": m["abi_version"], "variant": v["name"],
            "entry_points": m["entry_points"], "limits": m["limits"],
            "vocab_size": m["model"]["vocab_size"], "arena_bytes": v["arena_bytes"],
            "kv_cache": m["kv_cache"], "weights": weights}


def hytk(kind, tokens, types, merges=(), pipeline=None, template=""):
    version = 2 if pipeline is not None else 1
    out = b"HYTK" + struct.pack("<Iiiiii", version, kind, 1, 2, 0, len(tokens))
    for i, (t, ty) in enumerate(zip(tokens, types)):
        b = t.encode()
        out += struct.pack("<I", len(b)) + b + struct.pack("<fi", -float(i), ty)
    out += struct.pack("<I", len(merges))
    for m in merges:
        out += struct.pack("<I", len(m.encode())) + m.encode()
    if pipeline is not None:
        for s in (pipeline, template):
            out += struct.pack("<I", len(s.encode())) + s.encode()
    return out


def corpus():
    j = lambda obj: json.dumps(obj, indent=1).encode()
    tj = tokenizer_json()
    pipeline = {k: tj[k] for k in ("normalizer", "pre_tokenizer", "decoder")}
    pipeline["model"] = {k: v for k, v in tj["model"].items() if k not in ("vocab", "merges")}
    pipeline.update({"add_bos": False, "add_eos": False})
    return {
        "fuzz_gguf": {"llama.gguf": gguf_llama(), "qwen2-f16.gguf": gguf_llama("qwen2", True, "gpt2"),
                      "qwen3.gguf": gguf_llama("qwen3"), "qwen3moe.gguf": gguf_moe("qwen3moe"),
                      "deepseek2.gguf": gguf_moe("deepseek2"),
                      "block-types.gguf": gguf_block_types()},
        "fuzz_safetensors": safetensors_seeds(),
        "fuzz_hf_config": {k: j(v) for k, v in hf_configs().items()},
        "fuzz_llama2c": {"v0.bin": llama2c(0), "v0-unshared.bin": llama2c(0, shared=False),
                         "v1.bin": llama2c(1), "v2.bin": llama2c(2, shared=False)},
        "fuzz_tokenizer_bin": {"vocab8.bin": bytes([8]) + tokenizer_bin(LLAMA2C_PIECES),
                               "to-eof.bin": bytes([255]) + tokenizer_bin(LLAMA2C_PIECES)},
        "fuzz_tokenizer_json": {"bpe.json": j(tj),
                                "bpe-config.json": j(tj) + b"\n--config--\n" + j(tokenizer_config()),
                                "sentencepiece.json": j(sentencepiece_tokenizer_json()),
                                "unigram.json": j(sentencepiece_tokenizer_json("Unigram"))},
        "fuzz_tokenizer_artifact": {
            "llama2c.hytk": hytk(0, LLAMA2C_PIECES, [2, 3, 3, 1, 1, 1, 1, 1]),
            "sentencepiece.hytk": hytk(1, ["<unk>", "<s>", "</s>", "\u2581", "a", "\u2581a",
                                           "<0x41>", "b"], [2, 3, 3, 1, 1, 1, 6, 1]),
            "hf.hytk": hytk(3, list(tj["model"]["vocab"]) + ["<|im_end|>", "<|endoftext|>"],
                            [1] * len(tj["model"]["vocab"]) + [3, 3], tj["model"]["merges"],
                            json.dumps(pipeline),
                            tokenizer_config()["chat_template"])},
        "fuzz_chat_template": chat_template_seeds(),
        "fuzz_http_request": http_request_seeds(),
        "fuzz_manifest": {"variants.json": j(manifest()), "single.json": j(manifest(False)),
                          "variants-desc.json": j(manifest()) + b"\0" + j(description(manifest(), 0)),
                          "single-desc.json": j(manifest(False)) + b"\0" + j(description(manifest(False)))},
    }


# ------------------------------------------------------ serving surfaces ---
def chat_template_seeds():
    """Templates (written here, in the constructs real chat templates use)
    with the variables after a "--vars--" line."""
    chat = {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Hi <b>"},
                         {"role": "assistant", "content": "Hello", "tool_calls": [
                             {"function": {"name": "f", "arguments": {"x": 1}}}]}],
            "add_generation_prompt": True, "tools": [{"name": "f", "parameters": {"type": "object"}}],
            "bos_token": "<s>", "eos_token": "</s>"}
    plain = tokenizer_config()["chat_template"]
    rich = ("{%- set ns = namespace(sys='', n=0) -%}"
            "{%- if messages[0].role == 'system' %}{% set ns.sys = messages[0].content %}{% endif -%}"
            "{{ bos_token }}{% if tools %}{{ tools | tojson }}{% endif %}"
            "{%- for m in messages[1:] if m.role != 'system' %}"
            "{%- set ns.n = ns.n + 1 %}[{{ loop.index0 }}/{{ ns.n }}:{{ m.role | upper }}]"
            "{%- if m.content is string %}{{ m.content | trim }}{% elif m.content %}{{ m.content | length }}{% endif %}"
            "{%- for c in m.tool_calls | default([]) %}<call>{{ c.function.name }}"
            "{{ c.function.arguments | tojson }}</call>{% endfor %}"
            "{%- if not loop.last %}{{ eos_token }}{% endif %}{% endfor %}"
            "{%- if add_generation_prompt %}{{ '[ASSISTANT]' ~ (ns.sys | replace('.', '!'))[:3] }}{% endif %}")
    loops = "{% for i in range(3) %}{% for j in range(i, 5) %}{{ i * j // 2 % 3 }}{% endfor %}{% endfor %}"
    sep = b"\n--vars--\n"
    return {"plain.jinja": plain.encode() + sep + json.dumps(chat).encode(),
            "rich.jinja": rich.encode() + sep + json.dumps(chat).encode(),
            "loops.jinja": loops.encode() + sep + b"{}"}


def http_request_seeds():
    """Raw requests as `hyc serve` receives them (pipelined ones too)."""
    def post(path, body, extra=""):
        b = json.dumps(body).encode()
        return (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n{extra}"
                f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n").encode() + b
    completion = post("/v1/completions", {"model": "m", "prompt": "Once upon ab", "max_tokens": 8,
                                          "temperature": 0.5, "top_p": 0.9, "stop": ["\n"], "seed": 3})
    ids = post("/v1/completions", {"model": "m", "prompt": [300, 97, 98], "stream": True,
                                   "stream_options": {"include_usage": True}})
    chat = post("/v1/chat/completions", {"model": "m", "messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        "chat_template_kwargs": {"x": 1}, "max_tokens": 4}, "Expect: 100-continue\r\n")
    get = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    return {"completion.http": completion, "ids-stream.http": ids, "chat.http": chat,
            "pipelined.http": get + completion + chat,
            "http10.http": b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"}


# ---------------------------------------------------------- regressions ---
def set_kv(key, value):
    """An edit for gguf_*: the metadata value of `key` (same type)."""
    def edit(kvs, tensors):
        i = next(i for i, kv in enumerate(kvs) if kv[0] == key)
        kvs[i] = (key, kvs[i][1], value)
    return edit


def set_tensor(name, shape, ggml_type=GGML_F32, data=b""):
    """An edit for gguf_*: tensor `name` with another shape / type / data."""
    def edit(kvs, tensors):
        i = next(i for i, t in enumerate(tensors) if t[0] == name)
        tensors[i] = (name, shape, ggml_type, data)
    return edit


def regressions():
    """The inputs that once crashed a reader (test/fuzz/README.md), rebuilt
    from the seeds by the corruption each crash needed, so that every run
    (the CI smoke run included) replays them first. Each one is also a unit
    test of the fix."""
    j = lambda obj: json.dumps(obj, indent=1).encode()
    m = manifest(False)
    float_offset = json.loads(json.dumps(description(m)))  # its own copy of the tensors
    float_offset["weights"][1]["offset"] = 1e28
    big_shape = manifest(False)
    big_shape["weights"]["tensors"][0]["shape"] = [1 << 40, 1 << 30]
    tj = tokenizer_json()
    tj["added_tokens"][0]["id"] = -63
    pipeline = {"model": {"type": "BPE"}, "add_bos": {}, "add_eos": False}
    count = hytk(1, ["<0x41>"], [6])
    count = count[:24] + struct.pack("<i", -33554424) + count[28:]  # 4261412872 tokens
    return {
        "fuzz_gguf": {
            "regress-block-count-oom.gguf": gguf_llama("qwen2", tokenizer="gpt2",
                                                       edit=set_kv("qwen2.block_count", 2949121)),
            # 2^62 + 1 F32 elements: 4 bytes once the byte size wraps.
            "regress-byte-size-wrap.gguf": gguf_llama(edit=set_tensor(
                "output_norm.weight", [(1 << 62) + 1], GGML_F32, b"\0" * 4)),
            "regress-zero-dim-experts.gguf": gguf_moe("qwen3moe", edit=set_tensor(
                "blk.0.ffn_gate_exps.weight", [1 << 40, 0, 4])),
            # GGML type 16 (IQ2_XXS) is not read by hyc: its size is unknown.
            "regress-unsupported-type-experts.gguf": gguf_moe("deepseek2", edit=set_tensor(
                "blk.0.ffn_gate_exps.weight", [1 << 40, 4, 4], 16, b"\0" * 32))},
        "fuzz_llama2c": {"regress-vocab-int-min.bin": struct.pack("<7i", 4, 8, 1, 2, 1, -2**31, 4)},
        "fuzz_tokenizer_json": {"regress-negative-added-id.json": j(tj)},
        # A string literal that is not UTF-8: the parser's JSON encoding threw.
        # A namespace set to itself: a reference cycle leaked every render.
        "fuzz_chat_template": {"regress-invalid-utf8-literal.jinja": b"{{ 'a\xe1' }}b",
                               "regress-namespace-cycle.jinja":
                                   b"{% set ns = namespace(n=0) %}{% set ns.n = [ns] %}{{ 1 }}"},
        "fuzz_tokenizer_artifact": {
            "regress-token-count.hytk": count,
            "regress-pipeline-field-type.hytk": hytk(3, ["a", "b", "c"], [1, 1, 1], [], json.dumps(pipeline))},
        "fuzz_manifest": {
            "regress-float-offset.bin": j(m) + b"\0" + j(float_offset),
            "regress-shape-overflow.bin": j(big_shape) + b"\0" + j(description(manifest(False)))},
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build-fuzz", "seeds")
    for target, files in list(corpus().items()) + list(regressions().items()):
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
