// schema_compiler.cpp - JSON schema keywords -> grammar fragments.
#include "schema_compiler.h"

#include "regex_compiler.h"

#include <cmath>
#include <set>

namespace hyrt::structured {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {
    "title",    "description", "default",   "examples",  "$schema",
    "$id",      "$comment",    "deprecated", "readOnly", "writeOnly",
    "$defs",    "definitions", "contentMediaType", "contentEncoding"};

const std::set<std::string> kSupported = {
    "type",          "properties",       "required",
    "additionalProperties", "enum",      "const",
    "items",         "prefixItems",      "minItems",
    "maxItems",      "anyOf",            "oneOf",
    "allOf",         "minLength",        "maxLength",
    "pattern",       "format",           "minimum",
    "maximum",       "exclusiveMinimum", "exclusiveMaximum",
    "$ref"};

// The formats enforced, as patterns over the string's content.
const char *format_pattern(const std::string &format) {
  static const std::map<std::string, const char *> kFormats = {
      {"date", "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"},
      {"time", "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?"
               "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"},
      {"date-time",
       "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T"
       "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?"
       "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"},
      {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
      {"email", "[A-Za-z0-9_+-]{1,32}(\\.[A-Za-z0-9_+-]{1,32}){0,3}@"
                "[A-Za-z0-9]([A-Za-z0-9-]{0,30}[A-Za-z0-9])?"
                "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,30}[A-Za-z0-9])?){1,3}"},
      {"ipv4", "((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}"
               "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"},
  };
  auto it = kFormats.find(format);
  return it == kFormats.end() ? nullptr : it->second;
}

// RFC 6901 unescaping of one reference token.
std::string unescape_pointer(std::string token) {
  for (size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i) {
    if (i + 1 < token.size() && token[i + 1] == '1')
      token.replace(i, 2, "/");
    else if (i + 1 < token.size() && token[i + 1] == '0')
      token.replace(i, 2, "~");
  }
  return token;
}

bool has_any(const Json &s, std::initializer_list<const char *> keys) {
  for (const char *k : keys)
    if (s.contains(k))
      return true;
  return false;
}

} // namespace

Frag SchemaCompiler::fail(const std::string &path, const std::string &message) {
  if (status_.ok())
    status_ = Status::Error("schema at " + path + ": " + message);
  return b_.empty();
}

Frag SchemaCompiler::value(const Json &schema, const std::string &path,
                           int depth) {
  if (!status_.ok())
    return b_.empty();
  if (depth > limits_.max_schema_depth)
    return fail(path, "subschemas nest deeper than " +
                          std::to_string(limits_.max_schema_depth) +
                          " levels (limit)");
  if (schema.is_boolean()) {
    if (!schema.get<bool>())
      return fail(path, "the schema false admits no value");
    return b_.call(json_.any_value_rule());
  }
  if (!schema.is_object())
    return fail(path, "expected a schema (an object or a boolean), found " +
                          std::string(schema.type_name()));
  for (const auto &[key, unused] : schema.items())
    if (!kAnnotations.count(key) && !kSupported.count(key))
      return fail(path, "unsupported keyword \"" + key + "\"");

  if (schema.contains("$ref")) {
    for (const auto &[key, unused] : schema.items())
      if (kSupported.count(key) && key != "$ref")
        return fail(path, "\"$ref\" beside \"" + key +
                              "\" is not supported (put them in one schema)");
    if (!schema["$ref"].is_string())
      return fail(path, "\"$ref\" must be a string");
    return ref(schema["$ref"].get<std::string>(), path, depth);
  }
  if (schema.contains("const"))
    return b_.literal(schema["const"].dump());
  if (schema.contains("enum")) {
    const Json &values = schema["enum"];
    if (!values.is_array() || values.empty())
      return fail(path, "\"enum\" must be a non-empty array");
    if (int64_t(values.size()) > limits_.max_enum_values)
      return fail(path, "\"enum\" has " + std::to_string(values.size()) +
                            " values; at most " +
                            std::to_string(limits_.max_enum_values) +
                            " are accepted");
    std::vector<std::string> texts;
    for (const Json &v : values)
      texts.push_back(v.dump());
    return b_.literal_set(texts);
  }
  for (const char *combinator : {"anyOf", "oneOf"}) {
    if (!schema.contains(combinator))
      continue;
    const Json &alts = schema[combinator];
    if (!alts.is_array() || alts.empty())
      return fail(path, std::string("\"") + combinator +
                            "\" must be a non-empty array");
    for (const auto &[key, unused] : schema.items())
      if (kSupported.count(key) && key != combinator)
        return fail(path, "\"" + std::string(combinator) + "\" beside \"" +
                              key + "\" is not supported");
    std::vector<Frag> frags;
    for (size_t i = 0; i < alts.size(); ++i)
      frags.push_back(value(alts[i],
                            path + "/" + combinator + "/" + std::to_string(i),
                            depth + 1));
    return b_.alt(frags);
  }
  if (schema.contains("allOf")) {
    const Json &all = schema["allOf"];
    if (!all.is_array() || all.size() != 1)
      return fail(path, "\"allOf\" is supported with exactly one member");
    for (const auto &[key, unused] : schema.items())
      if (kSupported.count(key) && key != "allOf")
        return fail(path, "\"allOf\" beside \"" + key + "\" is not supported");
    return value(all[0], path + "/allOf/0", depth + 1);
  }

  std::vector<std::string> types;
  if (schema.contains("type")) {
    const Json &t = schema["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const Json &e : t) {
        if (!e.is_string())
          return fail(path, "\"type\" array entries must be strings");
        types.push_back(e.get<std::string>());
      }
    } else {
      return fail(path, "\"type\" must be a string or a non-empty array");
    }
  } else if (has_any(schema, {"properties", "required",
                              "additionalProperties"})) {
    types = {"object"};
  } else if (has_any(schema, {"items", "prefixItems", "minItems",
                              "maxItems"})) {
    types = {"array"};
  } else if (has_any(schema, {"minLength", "maxLength", "pattern",
                              "format"})) {
    types = {"string"};
  } else if (has_any(schema, {"minimum", "maximum", "exclusiveMinimum",
                              "exclusiveMaximum"})) {
    types = {"number"};
  } else {
    return b_.call(json_.any_value_rule());
  }
  std::vector<Frag> alts;
  for (const std::string &type : types)
    alts.push_back(of_type(type, schema, path, depth));
  return alts.size() == 1 ? alts[0] : b_.alt(alts);
}

Frag SchemaCompiler::ref(const std::string &target, const std::string &path,
                         int depth) {
  const int32_t rule = ref_rule(target, path, depth);
  return rule < 0 ? b_.empty() : b_.call(rule);
}

int32_t SchemaCompiler::ref_rule(const std::string &target,
                                 const std::string &path, int depth) {
  if (auto it = ref_rules_.find(target); it != ref_rules_.end())
    return it->second;
  if (target.empty() || target[0] != '#') {
    fail(path, "\"$ref\": \"" + target +
                   "\": only references inside the schema (\"#...\") "
                   "are supported");
    return -1;
  }
  const Json *at = &doc_;
  std::string rest = target.substr(1);
  while (!rest.empty()) {
    if (rest[0] != '/') {
      fail(path, "\"$ref\": \"" + target + "\" is not a JSON pointer");
      return -1;
    }
    const size_t next = rest.find('/', 1);
    const std::string token = unescape_pointer(rest.substr(1, next - 1));
    rest = next == std::string::npos ? "" : rest.substr(next);
    if (at->is_object() && at->contains(token)) {
      at = &(*at)[token];
    } else if (at->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos &&
               token.size() < 10 && std::stoul(token) < at->size()) {
      at = &(*at)[std::stoul(token)];
    } else {
      fail(path, "\"$ref\": \"" + target + "\" points to nothing");
      return -1;
    }
  }
  // A rule per target, made before its body so that the body may refer to
  // it again: recursion then nests on the stack, bounded by its depth.
  const int32_t rule = b_.new_rule("$ref " + target);
  ref_rules_[target] = rule;
  // A chain of references counts toward the depth limit (each is compiled
  // once; recursion itself nests at run time, on the bounded stack).
  b_.set_rule_body(rule, value(*at, target, depth + 1));
  return rule;
}

Frag SchemaCompiler::of_type(const std::string &type, const Json &schema,
                             const std::string &path, int depth) {
  if (type == "object")
    return object(schema, path, depth);
  if (type == "array")
    return array(schema, path, depth);
  if (type == "string")
    return string(schema, path);
  if (type == "number" || type == "integer")
    return number(schema, path, type == "integer");
  if (type == "boolean")
    return b_.literal_set({"true", "false"});
  if (type == "null")
    return b_.literal("null");
  return fail(path, "unknown type \"" + type +
                        "\" (expected object, array, string, number, "
                        "integer, boolean or null)");
}

bool SchemaCompiler::count(const Json &schema, const char *key,
                           const std::string &path, int64_t *out) {
  if (!schema.contains(key))
    return true;
  const Json &v = schema[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    fail(path, std::string("\"") + key + "\" must be a non-negative integer");
    return false;
  }
  if (v.get<int64_t>() > limits_.max_count_bound) {
    fail(path, std::string("\"") + key + "\" is " + v.dump() +
                   "; at most " + std::to_string(limits_.max_count_bound) +
                   " is supported");
    return false;
  }
  *out = v.get<int64_t>();
  return true;
}

Frag SchemaCompiler::object(const Json &schema, const std::string &path,
                            int depth) {
  static const Json kEmpty = Json::object();
  const Json &props =
      schema.contains("properties") ? schema["properties"] : kEmpty;
  if (!props.is_object())
    return fail(path, "\"properties\" must be an object");
  std::set<std::string> required;
  if (schema.contains("required")) {
    if (!schema["required"].is_array())
      return fail(path, "\"required\" must be an array of names");
    for (const Json &r : schema["required"]) {
      if (!r.is_string())
        return fail(path, "\"required\" must be an array of names");
      required.insert(r.get<std::string>());
    }
  }
  // Additional properties: absent means none once properties are listed.
  const Json *additional = nullptr;
  static const Json kTrue = true;
  if (schema.contains("additionalProperties")) {
    const Json &a = schema["additionalProperties"];
    if (!(a.is_boolean() && !a.get<bool>()))
      additional = &a;
  } else if (!schema.contains("properties")) {
    additional = &kTrue;
  }
  std::vector<std::pair<std::string, const Json *>> members;
  for (const auto &[name, sub] : props.items())
    members.push_back({name, &sub});
  for (const std::string &r : required)
    if (!props.contains(r)) {
      if (!additional)
        return fail(path, "\"required\" names \"" + r +
                              "\", which is not among the properties and "
                              "additionalProperties is false");
      members.push_back({r, additional});
    }

  Frag open = b_.literal("{");
  int32_t none = open.out; // nothing written yet
  int32_t some = -1;       // at least one member written
  auto key_value = [&](Frag key, Frag value) {
    return b_.seq({key, b_.literal(":"), json_.ws(), value});
  };
  auto enter = [&](Frag member) {
    if (none >= 0)
      b_.link(none, member.in);
    if (some >= 0) {
      Frag comma = b_.seq(b_.literal(","), json_.ws());
      b_.link(some, comma.in);
      b_.link(comma.out, member.in);
    }
  };
  for (const auto &[name, sub] : members) {
    const std::string sub_path = path + "/properties/" + name;
    Frag member = key_value(b_.literal(Json(name).dump()),
                            value(*sub, sub_path, depth + 1));
    enter(member);
    if (required.count(name)) {
      none = -1;
      some = member.out;
    } else {
      const int32_t joined = b_.empty().in;
      b_.link(member.out, joined);
      if (some >= 0)
        b_.link(some, joined);
      some = joined;
    }
  }
  if (additional) {
    // Any further "key": value pairs (keys may repeat declared names; the
    // schema has no way to say otherwise without propertyNames).
    Frag extra = key_value(json_.string(0, -1),
                           value(*additional, path + "/additionalProperties",
                                 depth + 1));
    enter(extra);
    const int32_t joined = b_.empty().in;
    b_.link(extra.out, joined);
    if (some >= 0)
      b_.link(some, joined);
    Frag comma = b_.seq(b_.literal(","), json_.ws());
    b_.link(extra.out, comma.in);
    b_.link(comma.out, extra.in);
    some = joined;
  }
  Frag close = b_.literal("}");
  if (none >= 0)
    b_.link(none, close.in);
  if (some >= 0)
    b_.link(some, close.in);
  return {open.in, close.out};
}

Frag SchemaCompiler::array(const Json &schema, const std::string &path,
                           int depth) {
  int64_t min_items = 0, max_items = -1;
  if (!count(schema, "minItems", path, &min_items) ||
      !count(schema, "maxItems", path, &max_items))
    return b_.empty();
  if (max_items >= 0 && max_items < min_items)
    return fail(path, "\"maxItems\" is below \"minItems\"");
  std::vector<Frag> prefix;
  if (schema.contains("prefixItems")) {
    const Json &p = schema["prefixItems"];
    if (!p.is_array())
      return fail(path, "\"prefixItems\" must be an array of schemas");
    for (size_t i = 0; i < p.size(); ++i)
      prefix.push_back(value(p[i], path + "/prefixItems/" + std::to_string(i),
                             depth + 1));
  }
  const int64_t n_prefix = int64_t(prefix.size());
  if (max_items >= 0 && max_items < n_prefix)
    return fail(path, "\"maxItems\" is below the number of prefixItems (all "
                      "prefix items are written)");
  // Items after the prefix: one rule, called once per position, so that a
  // counted repetition copies a call and not the item's whole automaton.
  bool more_allowed = true;
  int32_t item_rule = -1;
  if (schema.contains("items")) {
    const Json &items = schema["items"];
    if (items.is_boolean() && !items.get<bool>()) {
      more_allowed = false;
    } else if (items.is_object() && items.size() == 1 &&
               items.contains("$ref") && items["$ref"].is_string()) {
      // Items that are a reference call its rule directly: one stack frame
      // per level of a recursive structure, not two.
      item_rule = ref_rule(items["$ref"].get<std::string>(), path + "/items",
                           depth + 1);
      if (item_rule < 0)
        return b_.empty();
    } else {
      item_rule = b_.new_rule("items of " + path);
      b_.set_rule_body(item_rule, value(items, path + "/items", depth + 1));
    }
  } else {
    item_rule = json_.any_value_rule();
  }
  const int64_t more_min = std::max<int64_t>(0, min_items - n_prefix);
  const int64_t more_max =
      !more_allowed ? 0 : max_items < 0 ? -1 : max_items - n_prefix;
  if (more_min > 0 && !more_allowed)
    return fail(path, "\"minItems\" exceeds the prefixItems and \"items\" is "
                      "false");
  auto comma_item = [&] {
    return b_.seq({b_.literal(","), json_.ws(), b_.call(item_rule)});
  };
  Frag body = b_.empty();
  for (int64_t i = 0; i < n_prefix; ++i)
    body = i == 0 ? b_.seq(body, prefix[i])
                  : b_.seq({body, b_.literal(","), json_.ws(), prefix[i]});
  if (more_max != 0) {
    if (n_prefix > 0) {
      body = b_.seq(body, b_.repeat(comma_item, more_min, more_max));
    } else {
      Frag first = b_.call(item_rule);
      Frag rest = b_.repeat(comma_item, std::max<int64_t>(more_min - 1, 0),
                            more_max < 0 ? -1 : more_max - 1);
      Frag some = b_.seq(first, rest);
      body = more_min > 0 ? some : b_.optional(some);
    }
  }
  return b_.seq({b_.literal("["), body, b_.literal("]")});
}

Frag SchemaCompiler::string(const Json &schema, const std::string &path) {
  int64_t min_length = 0, max_length = -1;
  if (!count(schema, "minLength", path, &min_length) ||
      !count(schema, "maxLength", path, &max_length))
    return b_.empty();
  if (max_length >= 0 && max_length < min_length)
    return fail(path, "\"maxLength\" is below \"minLength\"");
  const bool lengths = schema.contains("minLength") ||
                       schema.contains("maxLength");
  std::string pattern;
  if (schema.contains("pattern")) {
    if (!schema["pattern"].is_string())
      return fail(path, "\"pattern\" must be a string");
    pattern = schema["pattern"].get<std::string>();
  }
  if (schema.contains("format")) {
    if (!schema["format"].is_string())
      return fail(path, "\"format\" must be a string");
    if (const char *p = format_pattern(schema["format"].get<std::string>())) {
      if (!pattern.empty())
        return fail(path, "\"pattern\" and a \"format\" together are not "
                          "supported");
      pattern = p;
    }
  }
  if (pattern.empty())
    return json_.string(min_length, max_length);
  if (lengths)
    return fail(path, "\"pattern\" (or \"format\") with \"minLength\" / "
                      "\"maxLength\" is not supported; put the length in the "
                      "pattern");
  Frag inner;
  if (Status s = compile_pattern(pattern, b_, &inner); !s.ok())
    return fail(path, s.message());
  return b_.seq({b_.literal("\""), inner, b_.literal("\"")});
}

Frag SchemaCompiler::number(const Json &schema, const std::string &path,
                            bool integer) {
  std::optional<NumberBound> lo, hi;
  auto bound = [&](const char *key, bool exclusive,
                   std::optional<NumberBound> *b, bool lower) -> bool {
    if (!schema.contains(key))
      return true;
    const Json &v = schema[key];
    if (!v.is_number()) {
      fail(path, std::string("\"") + key + "\" must be a number");
      return false;
    }
    const double x = v.get<double>();
    if (!std::isfinite(x) || std::fabs(x) > 1e300) {
      fail(path, std::string("\"") + key + "\" is out of range");
      return false;
    }
    NumberBound nb{x, exclusive};
    // Of two bounds on one side, the tighter wins.
    if (!*b || (lower ? x > (*b)->value : x < (*b)->value) ||
        (x == (*b)->value && exclusive))
      *b = nb;
    return true;
  };
  if (!bound("minimum", false, &lo, true) ||
      !bound("exclusiveMinimum", true, &lo, true) ||
      !bound("maximum", false, &hi, false) ||
      !bound("exclusiveMaximum", true, &hi, false))
    return b_.empty();
  const double cap = double(kMaxUnboundedMagnitude);
  if (integer) {
    double l = -cap, h = cap;
    if (lo)
      l = lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value);
    if (hi)
      h = hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value);
    l = std::max(l, -cap);
    h = std::min(h, cap);
    if (l > h)
      return fail(path, "no integer lies within the bounds (or they pass "
                        "the supported magnitude, 15 digits)");
    return json_.integer(int64_t(l), int64_t(h));
  }
  if (!lo && !hi)
    return json_.number();
  std::optional<Frag> f = json_.number_in(lo, hi);
  if (!f)
    return fail(path, "the number bounds leave no value this compiler can "
                      "write (it needs a whole number within them)");
  return *f;
}

} // namespace hyrt::structured
