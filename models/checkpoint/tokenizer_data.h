// A checkpoint's tokenizer (TokenizerSpec, as the loaders read it) turned
// into the runtime's tokenizer tables (hyrt::TokenizerData): the one bridge
// between the compiler-side readers and the runtime's Tokenizer. Its own
// library (hyc_tokenizer_data) so that hyc_checkpoint stays free of the
// runtime.
#ifndef HYC_MODELS_CHECKPOINT_TOKENIZER_DATA_H
#define HYC_MODELS_CHECKPOINT_TOKENIZER_DATA_H

#include "hyrt/status.h"
#include "hyrt/text/tokenizer.h"
#include "models/checkpoint/model_spec.h"

namespace hyc::models {

/// Fills `out` for `t`: kind "hf" reads tokenizer.json and
/// tokenizer_config.json from t.hf_dir as the runtime does (its errors name
/// an unsupported component); "llama2c", "sentencepiece" and "gpt2" copy the
/// tables the loader read. Any other kind is an error naming it.
hyrt::Status to_tokenizer_data(const TokenizerSpec &t, hyrt::TokenizerData *out);

} // namespace hyc::models

#endif
