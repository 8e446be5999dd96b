// `hyc tokenize DIR`: text <-> ids with a checkpoint's Hugging Face
// tokenizer (or an artifact's tokenizer.hytk), and chat-template rendering.
// Input is taken byte for byte so that users and tests see exactly what the
// engine would encode.
#include "hyrt/cli/cli.h"
#include "hyrt/support/json.h"

#include "args.h"
#include "../text/text_input.h"
#include "common.h"
#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"
#include "../text/tokenizer/hf_pipeline.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace hyrt {

namespace {

const char kTokenizeUsage[] =
    "usage: hyc tokenize DIR [--add-special] [--decode [--skip-special]]\n"
    "                        [--chat FILE.json [--text] "
    "[--no-generation-prompt]]\n"
    "  DIR        a checkpoint or folder with tokenizer.json (or an artifact\n"
    "             with tokenizer.hytk)\n"
    "  (default)  UTF-8 text on stdin, byte for byte -> ids, comma-separated\n"
    "  --add-special   add the tokenizer's special tokens (e.g. BOS)\n"
    "  --decode   comma-separated ids on stdin -> text (no newline added)\n"
    "  --skip-special  with --decode: drop special tokens\n"
    "  --chat FILE.json  render a message list (a JSON list, or an object\n"
    "             with \"messages\", optional \"tools\" and template\n"
    "             variables such as \"enable_thinking\") with the chat\n"
    "             template and print its ids; --text prints the rendering\n"
    "  --no-generation-prompt  with --chat: add_generation_prompt=false\n";

/// The most standard input `hyc tokenize` reads (it may be /dev/zero).
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;
/// The most a --chat file may hold.
constexpr uint64_t kMaxChatBytes = uint64_t(64) << 20;

Status load_tokenizer(const std::string &dir, Tokenizer *tok) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "tokenizer.json", ec)) {
    TokenizerData data;
    if (Status s = read_hf_tokenizer(dir, &data); !s.ok())
      return s;
    return tok->init(std::move(data));
  }
  if (fs::exists(fs::path(dir) / "tokenizer.hytk", ec))
    return Tokenizer::load((fs::path(dir) / "tokenizer.hytk").string(), tok);
  return Status::Error(dir + ": expected tokenizer.json (a Hugging Face "
                             "checkpoint) or tokenizer.hytk (an artifact)");
}

Status parse_ids(const std::string &text, int64_t vocab,
                 std::vector<int32_t> *ids) {
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const size_t b = item.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
      continue;
    const size_t e = item.find_last_not_of(" \t\r\n");
    const std::string t = item.substr(b, e - b + 1);
    char *end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v >= vocab)
      return Status::Error("expected token ids in [0, " +
                           std::to_string(vocab) + "), found '" + t + "'");
    ids->push_back(int32_t(v));
  }
  return Status::Ok();
}

Status render_chat(const std::string &dir, const Tokenizer &tok,
                   const std::string &file, bool generation_prompt,
                   std::string *rendered) {
  using ojson = nlohmann::ordered_json;
  std::string text;
  if (Status s = cli::read_regular_file(file, kMaxChatBytes, &text); !s.ok())
    return s;
  ojson chat;
  if (std::string e = parse_json(text, &chat); !e.empty())
    return Status::Error(file + ": malformed JSON: " + e);
  ojson request = chat.is_array() ? ojson{{"messages", chat}} : chat;
  if (!request.is_object() || !request.contains("messages") ||
      !request["messages"].is_array())
    return Status::Error(file + ": expected a list of messages or an object "
                                "with \"messages\"");
  if (!request.contains("add_generation_prompt"))
    request["add_generation_prompt"] = generation_prompt;
  if (tok.data().chat_template.empty())
    return Status::Error(dir + ": the tokenizer has no chat_template");
  ChatTemplate tmpl;
  if (Status s = tmpl.compile(tok.data().chat_template); !s.ok())
    return s;
  std::string vars;
  if (Status s = chat_template_variables(dir, request.dump(), &vars); !s.ok())
    return s;
  return tmpl.render(vars, rendered);
}

void print_ids(const std::vector<int32_t> &ids, std::ostream &out) {
  for (size_t i = 0; i < ids.size(); ++i)
    out << (i ? "," : "") << ids[i];
  out << "\n";
}

/// Prints the ids of `text`, or the tokenizer's error (exit 1).
int print_encoded(const Tokenizer &tok, const std::string &text, bool special,
                  std::ostream &out, std::ostream &err) {
  std::vector<int32_t> ids;
  if (Status s = tok.encode(text, special, &ids); !s.ok()) {
    err << "hyc tokenize: " << s.message() << "\n";
    return 1;
  }
  print_ids(ids, out);
  return 0;
}

} // namespace

int cli_tokenize(const std::vector<std::string> &args, std::istream &in,
                 std::ostream &out, std::ostream &err) {
  bool add_special = false, decode = false, skip_special = false,
       text_only = false, no_gen_prompt = false, help = false, chat_seen = false;
  std::string chat_file;
  cli::ArgParser p;
  p.add_switch("--add-special", &add_special);
  p.add_switch("--decode", &decode);
  p.add_switch("--skip-special", &skip_special);
  p.add_switch("--text", &text_only);
  p.add_switch("--no-generation-prompt", &no_gen_prompt);
  p.add_switch("--help", &help);
  p.add_string("--chat", &chat_file, &chat_seen);
  std::vector<std::string> positional;
  if (Status s = p.parse(args, &positional); !s.ok() || help ||
                                             positional.size() != 1) {
    if (!s.ok())
      err << "hyc tokenize: " << s.message() << "\n";
    err << kTokenizeUsage;
    return help ? 0 : 2;
  }
  if (decode && chat_seen) {
    err << "hyc tokenize: --decode and --chat exclude each other\n"
        << kTokenizeUsage;
    return 2;
  }
  const std::string &dir = positional[0];
  Tokenizer tok;
  if (Status s = load_tokenizer(dir, &tok); !s.ok()) {
    err << "hyc tokenize: " << s.message() << "\n";
    return 1;
  }
  if (chat_seen) {
    std::string rendered;
    if (Status s = render_chat(dir, tok, chat_file, !no_gen_prompt, &rendered);
        !s.ok()) {
      err << "hyc tokenize: " << s.message() << "\n";
      return 1;
    }
    if (!text_only)
      return print_encoded(tok, rendered, false, out, err);
    out << rendered;
    return 0;
  }
  std::string input;
  if (Status s = cli::read_bounded(in, kMaxInputBytes, "standard input", &input);
      !s.ok()) {
    err << "hyc tokenize: " << s.message() << "\n";
    return 1;
  }
  if (decode) {
    std::vector<int32_t> ids;
    if (Status s = parse_ids(input, tok.vocab_size(), &ids); !s.ok()) {
      err << "hyc tokenize --decode: " << s.message() << "\n";
      return 1;
    }
    out << tok.decode_text(ids, skip_special);
    return 0;
  }
  if (!detail::valid_utf8(input)) {
    err << "hyc tokenize: standard input is not valid UTF-8\n";
    return 1;
  }
  return print_encoded(tok, input, add_special, out, err);
}

} // namespace hyrt

extern "C" int hyrt_cli_tokenize(int argc, char **argv) {
  return hyrt::cli_tokenize(hyrt::cli::args_after_command(argc, argv),
                            std::cin, std::cout, std::cerr);
}
