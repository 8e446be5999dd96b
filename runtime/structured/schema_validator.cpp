// schema_validator.cpp - a direct, recursive JSON Schema checker for the
// supported subset (instances and schemas come from parse_json, so nesting
// is bounded; $ref recursion is bounded by kMaxRefDepth).
#include "hyrt/structured/schema_validator.h"

#include <cmath>
#include <regex>
#include <set>

namespace hyrt::structured {
namespace {

using Json = nlohmann::ordered_json;
constexpr int kMaxRefDepth = 128;

const std::set<std::string> kIgnored = {
    "title",   "description", "default",    "examples",  "$schema",
    "$id",     "$comment",    "deprecated", "readOnly",  "writeOnly",
    "$defs",   "definitions", "contentMediaType", "contentEncoding"};
const std::set<std::string> kKnown = {
    "type",     "properties", "required",  "additionalProperties",
    "enum",     "const",      "items",     "prefixItems",
    "minItems", "maxItems",   "anyOf",     "oneOf",
    "allOf",    "minLength",  "maxLength", "pattern",
    "format",   "minimum",    "maximum",   "exclusiveMinimum",
    "exclusiveMaximum", "$ref"};

size_t code_points(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool valid_date(const std::string &s) {
  static const std::regex re("^(\\d{4})-(\\d{2})-(\\d{2})$");
  std::smatch m;
  if (!std::regex_match(s, m, re))
    return false;
  const int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1)
    return false;
  return d <= kDays[mo - 1] + (mo == 2 && leap(y));
}

bool valid_time(const std::string &s) {
  static const std::regex re(
      "^([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?"
      "([zZ]|[+-]([01]\\d|2[0-3]):[0-5]\\d)$");
  return std::regex_match(s, re);
}

bool valid_format(const std::string &format, const std::string &s) {
  if (format == "date")
    return valid_date(s);
  if (format == "time")
    return valid_time(s);
  if (format == "date-time") {
    const size_t t = s.find_first_of("Tt");
    return t == 10 && valid_date(s.substr(0, 10)) && valid_time(s.substr(11));
  }
  if (format == "uuid") {
    static const std::regex re("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                               "[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
    return std::regex_match(s, re);
  }
  if (format == "email") {
    static const std::regex re("^[^@\\s]+@[^@\\s.]+(\\.[^@\\s.]+)+$");
    return s.size() <= 320 && std::regex_match(s, re);
  }
  if (format == "ipv4") {
    static const std::regex re("^(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})$");
    std::smatch m;
    if (!std::regex_match(s, m, re))
      return false;
    for (int i = 1; i <= 4; ++i)
      if (std::stoi(m[i]) > 255 || (m[i].length() > 1 && m[i].str()[0] == '0'))
        return false;
    return true;
  }
  return true; // other formats are annotations
}

class Validator {
public:
  explicit Validator(const Json &root) : root_(root) {}

  Status check(const Json &schema, const Json &x, const std::string &at,
               int refs) {
    if (schema.is_boolean())
      return schema.get<bool>() ? Status::Ok()
                                : fail(at, "schema false", "nothing", x);
    if (!schema.is_object())
      return Status::Error("schema for " + at + " is not an object");
    for (const auto &[k, unused] : schema.items())
      if (!kKnown.count(k) && !kIgnored.count(k))
        return Status::Error("unsupported keyword \"" + k + "\" (schema for " +
                             at + ")");
    if (schema.contains("$ref")) {
      if (refs >= kMaxRefDepth)
        return Status::Error("$ref nesting above " +
                             std::to_string(kMaxRefDepth) + " at " + at);
      const Json *target = resolve(schema["$ref"].get<std::string>());
      if (!target)
        return Status::Error("$ref " + schema["$ref"].dump() +
                             " resolves to nothing");
      if (Status s = check(*target, x, at, refs + 1); !s.ok())
        return s;
    }
    if (schema.contains("type") && !type_matches(schema["type"], x))
      return fail(at, "type", schema["type"].dump(), x);
    if (schema.contains("const") && !same(schema["const"], x))
      return fail(at, "const", schema["const"].dump(), x);
    if (schema.contains("enum")) {
      bool found = false;
      for (const Json &v : schema["enum"])
        found = found || same(v, x);
      if (!found)
        return fail(at, "enum", schema["enum"].dump(), x);
    }
    if (schema.contains("anyOf")) {
      bool any = false;
      for (const Json &s : schema["anyOf"])
        any = any || check(s, x, at, refs).ok();
      if (!any)
        return fail(at, "anyOf", "a match of some alternative", x);
    }
    if (schema.contains("oneOf")) {
      int matches = 0;
      for (const Json &s : schema["oneOf"])
        matches += check(s, x, at, refs).ok();
      if (matches != 1)
        return fail(at, "oneOf", "exactly one matching alternative, found " +
                                     std::to_string(matches), x);
    }
    if (schema.contains("allOf"))
      for (const Json &s : schema["allOf"])
        if (Status st = check(s, x, at, refs); !st.ok())
          return st;
    if (x.is_object())
      return object(schema, x, at, refs);
    if (x.is_array())
      return array(schema, x, at, refs);
    if (x.is_string())
      return string(schema, x, at);
    if (x.is_number())
      return number(schema, x, at);
    return Status::Ok();
  }

private:
  static Status fail(const std::string &at, const std::string &keyword,
                     const std::string &expected, const Json &found) {
    std::string f = found.dump();
    if (f.size() > 200)
      f = f.substr(0, 200) + "...";
    return Status::Error(at + ": " + keyword + ": expected " + expected +
                         ", found " + f);
  }

  static bool same(const Json &a, const Json &b) {
    // Unordered comparison: object member order does not matter.
    return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
  }

  static bool is_type(const std::string &t, const Json &x) {
    if (t == "object") return x.is_object();
    if (t == "array") return x.is_array();
    if (t == "string") return x.is_string();
    if (t == "boolean") return x.is_boolean();
    if (t == "null") return x.is_null();
    if (t == "number") return x.is_number();
    if (t == "integer")
      return x.is_number_integer() ||
             (x.is_number_float() && std::isfinite(x.get<double>()) &&
              std::floor(x.get<double>()) == x.get<double>());
    return false;
  }

  static bool type_matches(const Json &type, const Json &x) {
    if (type.is_string())
      return is_type(type.get<std::string>(), x);
    for (const Json &t : type)
      if (t.is_string() && is_type(t.get<std::string>(), x))
        return true;
    return false;
  }

  const Json *resolve(const std::string &ref) const {
    if (ref.empty() || ref[0] != '#')
      return nullptr;
    try {
      return &root_.at(nlohmann::ordered_json::json_pointer(ref.substr(1)));
    } catch (const nlohmann::ordered_json::exception &) {
      return nullptr;
    }
  }

  Status object(const Json &schema, const Json &x, const std::string &at,
                int refs) {
    if (schema.contains("required"))
      for (const Json &r : schema["required"])
        if (!x.contains(r.get<std::string>()))
          return fail(at, "required", "member " + r.dump(), x);
    const bool has_props = schema.contains("properties");
    for (const auto &[k, v] : x.items()) {
      const std::string sub = at + "/" + k;
      if (has_props && schema["properties"].contains(k)) {
        if (Status s = check(schema["properties"][k], v, sub, refs); !s.ok())
          return s;
      } else if (schema.contains("additionalProperties")) {
        if (Status s = check(schema["additionalProperties"], v, sub, refs);
            !s.ok())
          return s;
      }
    }
    return Status::Ok();
  }

  Status array(const Json &schema, const Json &x, const std::string &at,
               int refs) {
    const int64_t n = int64_t(x.size());
    if (schema.contains("minItems") && n < schema["minItems"].get<int64_t>())
      return fail(at, "minItems", schema["minItems"].dump() + " items", x);
    if (schema.contains("maxItems") && n > schema["maxItems"].get<int64_t>())
      return fail(at, "maxItems", schema["maxItems"].dump() + " items", x);
    size_t first = 0;
    if (schema.contains("prefixItems")) {
      const Json &p = schema["prefixItems"];
      for (; first < p.size() && first < x.size(); ++first)
        if (Status s = check(p[first], x[first],
                             at + "/" + std::to_string(first), refs);
            !s.ok())
          return s;
    }
    if (schema.contains("items"))
      for (size_t i = first; i < x.size(); ++i)
        if (Status s = check(schema["items"], x[i],
                             at + "/" + std::to_string(i), refs);
            !s.ok())
          return s;
    return Status::Ok();
  }

  Status string(const Json &schema, const Json &x, const std::string &at) {
    const std::string &s = x.get_ref<const std::string &>();
    const int64_t n = int64_t(code_points(s));
    if (schema.contains("minLength") && n < schema["minLength"].get<int64_t>())
      return fail(at, "minLength", schema["minLength"].dump() + " characters", x);
    if (schema.contains("maxLength") && n > schema["maxLength"].get<int64_t>())
      return fail(at, "maxLength", schema["maxLength"].dump() + " characters", x);
    if (schema.contains("pattern")) {
      if (s.size() > 4096)
        return Status::Error(at + ": pattern: strings over 4096 bytes are not "
                                  "checked");
      try {
        const std::regex re(schema["pattern"].get<std::string>(),
                            std::regex::ECMAScript);
        if (!std::regex_search(s, re))
          return fail(at, "pattern", schema["pattern"].dump(), x);
      } catch (const std::regex_error &e) {
        return Status::Error(at + ": pattern " + schema["pattern"].dump() +
                             " is not a valid regex: " + e.what());
      }
    }
    if (schema.contains("format") &&
        !valid_format(schema["format"].get<std::string>(), s))
      return fail(at, "format", schema["format"].dump(), x);
    return Status::Ok();
  }

  Status number(const Json &schema, const Json &x, const std::string &at) {
    const double v = x.get<double>();
    auto bound = [&](const char *key, auto ok) -> Status {
      if (schema.contains(key) && !ok(v, schema[key].get<double>()))
        return fail(at, key, std::string(key) + " " + schema[key].dump(), x);
      return Status::Ok();
    };
    if (Status s = bound("minimum", [](double a, double b) { return a >= b; }); !s.ok())
      return s;
    if (Status s = bound("maximum", [](double a, double b) { return a <= b; }); !s.ok())
      return s;
    if (Status s = bound("exclusiveMinimum", [](double a, double b) { return a > b; }); !s.ok())
      return s;
    return bound("exclusiveMaximum", [](double a, double b) { return a < b; });
  }

  const Json &root_;
};

} // namespace

Status validate_json(const nlohmann::ordered_json &schema,
                     const nlohmann::ordered_json &instance) {
  return Validator(schema).check(schema, instance, "#", 0);
}

} // namespace hyrt::structured
