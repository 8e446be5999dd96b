// schema_compiler.h - turns one schema document into grammar fragments on
// a shared builder (so that tool calls can put several schemas into one
// grammar, each inside its wire format).
#pragma once

#include "grammar_builder.h"
#include "hyrt/structured/json_schema.h"
#include "json_pieces.h"

#include <map>
#include <string>

namespace hyrt::structured {

class SchemaCompiler {
public:
  /// `document` is what "#" refers to; it must outlive the compiler.
  SchemaCompiler(GrammarBuilder &builder, JsonPieces &pieces,
                 const nlohmann::ordered_json &document,
                 const SchemaLimits &limits)
      : b_(builder), json_(pieces), doc_(document), limits_(limits) {}

  /// The fragment of values matching `schema` (located at `path`, for
  /// messages). After an error, fragments are dummies and status() says
  /// what went wrong first.
  Frag value(const nlohmann::ordered_json &schema, const std::string &path,
             int depth);
  const Status &status() const { return status_; }

private:
  Frag fail(const std::string &path, const std::string &message);
  Frag ref(const std::string &target, const std::string &path, int depth);
  int32_t ref_rule(const std::string &target, const std::string &path,
                   int depth);
  Frag of_type(const std::string &type, const nlohmann::ordered_json &schema,
               const std::string &path, int depth);
  Frag object(const nlohmann::ordered_json &schema, const std::string &path,
              int depth);
  Frag array(const nlohmann::ordered_json &schema, const std::string &path,
             int depth);
  Frag string(const nlohmann::ordered_json &schema, const std::string &path);
  Frag number(const nlohmann::ordered_json &schema, const std::string &path,
              bool integer);
  bool count(const nlohmann::ordered_json &schema, const char *key,
             const std::string &path, int64_t *out);

  GrammarBuilder &b_;
  JsonPieces &json_;
  const nlohmann::ordered_json &doc_;
  SchemaLimits limits_;
  Status status_;
  std::map<std::string, int32_t> ref_rules_;
};

} // namespace hyrt::structured
