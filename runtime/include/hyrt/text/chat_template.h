// hyrt/text/chat_template.h - renders a checkpoint's Jinja chat template (the
// subset Hugging Face chat templates use) into the prompt text.
#pragma once

#include "hyrt/status.h"

#include <memory>
#include <string>

namespace hyrt {

namespace detail {
struct TemplateNode;
}

/// A compiled chat template. Rendering follows transformers'
/// apply_chat_template environment: trim_blocks, lstrip_blocks, loop
/// controls, `tojson` as Python's json.dumps(ensure_ascii=False) and
/// `raise_exception(msg)`. Supported: {{ }}, {# #}, whitespace control,
/// if/elif/else, for (with loop.index/index0/first/last/length, else,
/// break/continue), set (names and namespace attributes), namespace(),
/// literals, lists, dicts, attribute/subscript/slice access, + - * / // %
/// ~, comparisons, and/or/not, in / not in, `is` tests, the filters and
/// string/dict methods listed in chat_template_eval.cpp. Anything else is an
/// error naming the construct.
class ChatTemplate {
public:
  ChatTemplate();
  ~ChatTemplate();
  ChatTemplate(ChatTemplate &&) noexcept;
  ChatTemplate &operator=(ChatTemplate &&) noexcept;

  /// Parses `source`; errors name the construct and the line.
  Status compile(const std::string &source);

  /// Renders with the top-level variables in `variables_json`, a JSON
  /// object (e.g. {"messages": [...], "add_generation_prompt": true,
  /// "bos_token": "<s>", "enable_thinking": false}).
  Status render(const std::string &variables_json, std::string *out) const;

private:
  std::unique_ptr<detail::TemplateNode> root_;
};

} // namespace hyrt

namespace hyrt {

/// The variables transformers' apply_chat_template passes, as a JSON
/// object: the special-token strings of `tokenizer_dir`'s
/// tokenizer_config.json (bos_token, eos_token, pad_token, unk_token, those
/// that are set), then every field of `request_json` ({"messages": [...],
/// "tools": [...], "add_generation_prompt": true, "enable_thinking": false,
/// ...}); add_generation_prompt defaults to false.
Status chat_template_variables(const std::string &tokenizer_dir,
                               const std::string &request_json,
                               std::string *variables_json);

} // namespace hyrt
