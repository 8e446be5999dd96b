// hyrt/structured/schema_validator.h - checks a JSON instance against the
// JSON Schema subset that json_schema.h compiles, written apart from the
// compiler (no shared code) so that each checks the other: what constrained
// decoding produces must validate here.
//
// Keywords: type, properties, required, additionalProperties, enum, const,
// items, prefixItems, minItems, maxItems, anyOf, oneOf, allOf, minLength,
// maxLength, pattern (ECMAScript regex search, strings up to 4096 bytes),
// format (date, time, date-time, uuid, email, ipv4; others ignored),
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, $ref ("#...").
// Annotations are ignored; any other keyword is an error naming it.
#pragma once

#include "hyrt/status.h"

#include <nlohmann/json.hpp>

namespace hyrt::structured {

/// Ok when `instance` satisfies `schema`; otherwise the first failure,
/// naming the instance path, the keyword, what was expected and found.
Status validate_json(const nlohmann::ordered_json &schema,
                     const nlohmann::ordered_json &instance);

} // namespace hyrt::structured
