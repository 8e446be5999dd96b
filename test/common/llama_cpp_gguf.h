// Writes a Hugging Face checkpoint as a GGUF file the way llama.cpp's
// convert_hf_to_gguf.py lays it out (metadata keys, tensor names, q/k row
// permutation for llama, stacked experts, deepseek2's split kv_b), with
// GgufSpecWriter and none of hyc's GGUF code: a second, independent
// reading of the conventions that models/checkpoint/load_gguf.cpp follows.
#ifndef HYC_TEST_COMMON_LLAMA_CPP_GGUF_H
#define HYC_TEST_COMMON_LLAMA_CPP_GGUF_H

#include <cstdint>
#include <string>

namespace hyc::test {

/// Converts the HF directory `hf_dir` (config.json + model.safetensors, F32;
/// model_type llama, qwen2, qwen3, qwen3_moe, deepseek_v3) to `gguf_path`.
/// `alignment` is the data alignment (general.alignment when not 32).
/// Returns "" or what went wrong.
std::string write_llama_cpp_gguf(const std::string &hf_dir,
                                 const std::string &gguf_path,
                                 uint32_t alignment = 32);

} // namespace hyc::test

#endif // HYC_TEST_COMMON_LLAMA_CPP_GGUF_H
