// The variables a chat template sees (see chat_template_variables in
// hyrt/text/chat_template.h): special-token strings from tokenizer_config.json
// plus the caller's request.
#include "hyrt/text/chat_template.h"
#include "hyrt/support/json.h"

#include "../text_input.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace hyrt {

Status chat_template_variables(const std::string &tokenizer_dir,
                               const std::string &request_json,
                               std::string *variables_json) {
  using ojson = nlohmann::ordered_json;
  ojson request;
  if (std::string e = parse_json(request_json, &request); !e.empty())
    return Status::Error("chat request: " + e);
  if (!request.is_object())
    return Status::Error("chat request: expected a JSON object");
  ojson vars = ojson::object();
  const std::string path =
      (std::filesystem::path(tokenizer_dir) / "tokenizer_config.json")
          .string();
  std::string text;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (Status s = cli::read_regular_file(path, uint64_t(1) << 30, &text); !s.ok())
      return s;
    ojson config;
    if (std::string e = parse_json(text, &config); !e.empty())
      return Status::Error(path + ": " + e);
    if (!config.is_object())
      return Status::Error(path + ": expected a JSON object at the top level");
    for (const char *key : {"bos_token", "eos_token", "pad_token",
                            "unk_token"}) {
      if (!config.contains(key))
        continue;
      const ojson &v = config[key];
      if (v.is_string())
        vars[key] = v;
      else if (v.is_object() && v.contains("content"))
        vars[key] = v["content"];
    }
  }
  vars["add_generation_prompt"] = false;
  for (auto it = request.begin(); it != request.end(); ++it)
    vars[it.key()] = it.value();
  *variables_json = vars.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return Status::Ok();
}

} // namespace hyrt
