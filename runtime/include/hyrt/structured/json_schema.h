// hyrt/structured/json_schema.h - JSON schema (and JSON mode) -> Grammar.
//
// What is supported: type (object, array, string, number, integer,
// boolean, null, and arrays of types), properties / required /
// additionalProperties, enum, const, items / prefixItems / minItems /
// maxItems, anyOf, oneOf (compiled as anyOf: the alternatives are meant to
// be disjoint), allOf with one member, minLength / maxLength, pattern (see
// regex_compiler.h), format (date, time, date-time, uuid, email, ipv4;
// other formats are annotations and ignored, as the specification allows),
// minimum / maximum / exclusiveMinimum / exclusiveMaximum, $ref to "#" or
// "#/..." with $defs / definitions (recursion bounded by the stack depth).
// Any other keyword is an error naming it. Annotations (title,
// description, default, examples, $schema, $id, $comment, deprecated,
// readOnly, writeOnly) are ignored.
//
// Choices the output follows (every output validates; some valid outputs
// are never produced):
// - properties come in declared order; optional ones may be skipped;
// - additionalProperties absent means none when "properties" is given
//   (as vLLM / XGrammar in strict mode do); an object schema without
//   properties accepts any object;
// - whitespace: none, except an optional single space after ':' and ','
//   (json_pieces.h says why);
// - numbers without bounds: at most 15 integral digits, 15 fraction
//   digits and a 2-digit exponent; bounded numbers carry no exponent;
// - date days stop at 28 so that every produced date exists.
#pragma once

#include "hyrt/status.h"
#include "hyrt/structured/grammar.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string_view>

namespace hyrt::structured {

/// Bounds on what a (possibly hostile) schema may cost.
struct SchemaLimits {
  size_t max_schema_bytes = 1 << 20;
  /// Subschemas nested inside each other (objects in arrays in ...).
  int max_schema_depth = 32;
  /// Automaton states: bounds compile time and memory.
  int64_t max_states = 200'000;
  /// Values of one enum.
  int64_t max_enum_values = 1024;
  /// Largest minLength / maxLength / minItems / maxItems expanded.
  int64_t max_count_bound = 10'000;
  /// How deep generic JSON and recursive $refs may nest in the output.
  int32_t max_stack_depth = 32;
};

/// Compiles a schema document (JSON text: key order is kept, and it sets
/// the order of properties in the output).
Status compile_json_schema_text(std::string_view schema_text,
                                const SchemaLimits &limits,
                           std::shared_ptr<const Grammar> *out);
/// The same, from an already parsed document (nlohmann::ordered_json keeps
/// the declared property order; a nlohmann::json converted to it has lost
/// that order and gets alphabetical order, which validates as well).
Status compile_json_schema(const nlohmann::ordered_json &schema,
                                const SchemaLimits &limits,
                           std::shared_ptr<const Grammar> *out);
/// JSON mode ({"type": "json_object"}): any JSON object.
std::shared_ptr<const Grammar> json_object_grammar(const SchemaLimits &limits);

/// An OpenAI response_format: {"type": "text"} gives *out = nullptr (no
/// constraint), {"type": "json_object"} JSON mode, {"type": "json_schema",
/// "json_schema": {"name": ..., "schema": {...}}} the schema. Anything else
/// is an error naming what was found.
Status compile_response_format(const nlohmann::ordered_json &response_format,
                               const SchemaLimits &limits,
                               std::shared_ptr<const Grammar> *out);

} // namespace hyrt::structured
