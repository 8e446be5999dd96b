// json_schema.cpp - the public entry points: schema text or document ->
// finished Grammar.
#include "hyrt/structured/json_schema.h"

#include "hyrt/support/json.h"
#include "schema_compiler.h"

namespace hyrt::structured {

Status compile_json_schema_text(std::string_view schema_text,
                           const SchemaLimits &limits,
                           std::shared_ptr<const Grammar> *out) {
  if (schema_text.size() > limits.max_schema_bytes)
    return Status::Error("JSON schema is " + std::to_string(schema_text.size()) +
                         " bytes; at most " +
                         std::to_string(limits.max_schema_bytes) +
                         " are accepted");
  nlohmann::ordered_json doc;
  if (std::string e = parse_json(schema_text, &doc); !e.empty())
    return Status::Error("JSON schema: " + e);
  return compile_json_schema(doc, limits, out);
}

Status compile_json_schema(const nlohmann::ordered_json &schema,
                           const SchemaLimits &limits,
                           std::shared_ptr<const Grammar> *out) {
  GrammarBuilder builder(limits.max_states);
  JsonPieces pieces(builder);
  SchemaCompiler compiler(builder, pieces, schema, limits);
  const int32_t root = builder.new_rule("schema");
  builder.set_rule_body(root, compiler.value(schema, "#", 0));
  if (!compiler.status().ok())
    return compiler.status();
  auto grammar = std::make_shared<Grammar>();
  if (Status s = builder.finish(root, limits.max_stack_depth, "JSON schema",
                                grammar.get());
      !s.ok())
    return s;
  *out = std::move(grammar);
  return Status::Ok();
}

std::shared_ptr<const Grammar> json_object_grammar(const SchemaLimits &limits) {
  GrammarBuilder builder(limits.max_states);
  JsonPieces pieces(builder);
  const int32_t root = builder.new_rule("JSON object");
  builder.set_rule_body(root, pieces.any_object());
  auto grammar = std::make_shared<Grammar>();
  // Cannot fail: a fixed, small grammar.
  (void)builder.finish(root, limits.max_stack_depth, "JSON object",
                       grammar.get());
  return grammar;
}

Status compile_response_format(const nlohmann::ordered_json &response_format,
                               const SchemaLimits &limits,
                               std::shared_ptr<const Grammar> *out) {
  *out = nullptr;
  if (!response_format.is_object() || !response_format.contains("type") ||
      !response_format["type"].is_string())
    return Status::Error("response_format: expected an object with a string "
                         "\"type\"");
  const std::string type = response_format["type"].get<std::string>();
  if (type == "text")
    return Status::Ok();
  if (type == "json_object") {
    *out = json_object_grammar(limits);
    return Status::Ok();
  }
  if (type != "json_schema")
    return Status::Error("response_format: type \"" + type +
                         "\" (expected text, json_object or json_schema)");
  if (!response_format.contains("json_schema") ||
      !response_format["json_schema"].is_object() ||
      !response_format["json_schema"].contains("schema"))
    return Status::Error("response_format: json_schema needs an object "
                         "\"json_schema\" holding \"schema\"");
  Status s = compile_json_schema(response_format["json_schema"]["schema"],
                                 limits, out);
  if (!s.ok())
    return Status::Error("response_format: " + s.message());
  return s;
}

} // namespace hyrt::structured
