// A small JSON Schema checker for the structured-output e2e test, written
// apart from hyc's C++ validator so that the server's answers are judged by
// code that shares nothing with the compiler that constrained them. It
// covers the keywords the test's schemas use: type (and lists of types),
// properties, required, additionalProperties, enum, const, items,
// prefixItems, minItems, maxItems, minLength, maxLength (in code points),
// pattern (ECMAScript, search), format (date, time, date-time, uuid, email,
// ipv4), minimum, maximum, exclusiveMinimum, exclusiveMaximum, anyOf,
// oneOf, allOf, $ref into $defs. Any other keyword throws: a schema the
// checker cannot judge must not pass silently.
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema',
                             '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$defs',
                             'definitions']);
const FORMATS = {
  date: (s) => {
    const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
    if (!m) return false;
    const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
    return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
  },
  time: (s) => /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)?$/.test(s),
  'date-time': (s) => {
    const i = s.indexOf('T');
    return i > 0 && FORMATS.date(s.slice(0, i)) && FORMATS.time(s.slice(i + 1));
  },
  uuid: (s) => /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(s),
  email: (s) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(s),
  ipv4: (s) => /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(s),
};

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v; // string, boolean, object
}

function deepEqual(a, b) {
  return JSON.stringify(a) === JSON.stringify(b) ||
      (typeOf(a) === 'object' && typeOf(b) === 'object' &&
       Object.keys(a).length === Object.keys(b).length &&
       Object.keys(a).every((k) => k in b && deepEqual(a[k], b[k])));
}

/// Throws an Error naming the path and keyword when `value` does not
/// satisfy `schema`; `root` resolves $ref.
export function checkSchema(schema, value, root = schema, at = '$') {
  if (schema === true) return;
  if (schema === false) throw new Error(`${at}: schema false`);
  const fail = (kw, what) => { throw new Error(`${at}: ${kw}: ${what}, found ${JSON.stringify(value)}`); };
  for (const kw of Object.keys(schema)) {
    const s = schema[kw];
    switch (kw) {
      case 'type': {
        const types = Array.isArray(s) ? s : [s];
        const t = typeOf(value);
        if (!types.some((x) => x === t || (x === 'number' && t === 'integer'))) fail(kw, `expected ${types}`);
        break;
      }
      case 'properties':
        if (typeOf(value) === 'object')
          for (const [k, sub] of Object.entries(s))
            if (k in value) checkSchema(sub, value[k], root, `${at}.${k}`);
        break;
      case 'required':
        if (typeOf(value) === 'object')
          for (const k of s) if (!(k in value)) fail(kw, `missing ${k}`);
        break;
      case 'additionalProperties':
        if (typeOf(value) === 'object')
          for (const k of Object.keys(value))
            if (!(schema.properties && k in schema.properties)) {
              if (s === false) fail(kw, `unexpected ${k}`);
              checkSchema(s, value[k], root, `${at}.${k}`);
            }
        break;
      case 'enum':
        if (!s.some((x) => deepEqual(x, value))) fail(kw, `expected one of ${JSON.stringify(s)}`);
        break;
      case 'const':
        if (!deepEqual(s, value)) fail(kw, `expected ${JSON.stringify(s)}`);
        break;
      case 'items':
        if (Array.isArray(value))
          value.forEach((v, i) => {
            if (i >= (schema.prefixItems?.length ?? 0)) checkSchema(s, v, root, `${at}[${i}]`);
          });
        break;
      case 'prefixItems':
        if (Array.isArray(value))
          s.forEach((sub, i) => { if (i < value.length) checkSchema(sub, value[i], root, `${at}[${i}]`); });
        break;
      case 'minItems': if (Array.isArray(value) && value.length < s) fail(kw, `at least ${s}`); break;
      case 'maxItems': if (Array.isArray(value) && value.length > s) fail(kw, `at most ${s}`); break;
      case 'minLength': if (typeof value === 'string' && [...value].length < s) fail(kw, `at least ${s}`); break;
      case 'maxLength': if (typeof value === 'string' && [...value].length > s) fail(kw, `at most ${s}`); break;
      case 'pattern': if (typeof value === 'string' && !new RegExp(s, 'u').test(value)) fail(kw, s); break;
      case 'format':
        if (typeof value === 'string' && FORMATS[s] && !FORMATS[s](value)) fail(kw, s);
        break;
      case 'minimum': if (typeof value === 'number' && value < s) fail(kw, `>= ${s}`); break;
      case 'maximum': if (typeof value === 'number' && value > s) fail(kw, `<= ${s}`); break;
      case 'exclusiveMinimum': if (typeof value === 'number' && value <= s) fail(kw, `> ${s}`); break;
      case 'exclusiveMaximum': if (typeof value === 'number' && value >= s) fail(kw, `< ${s}`); break;
      case 'anyOf': case 'oneOf': {
        let passed = 0;
        for (const sub of s) {
          try { checkSchema(sub, value, root, at); ++passed; } catch { /* next */ }
        }
        if (passed === 0 || (kw === 'oneOf' && passed > 1)) fail(kw, `${passed} alternatives match`);
        break;
      }
      case 'allOf': for (const sub of s) checkSchema(sub, value, root, at); break;
      case '$ref': {
        if (!s.startsWith('#')) throw new Error(`${at}: $ref ${s}: only local refs`);
        let target = root;
        for (const part of s.slice(1).split('/').filter(Boolean)) target = target[part];
        if (target === undefined) throw new Error(`${at}: $ref ${s} resolves to nothing`);
        checkSchema(target, value, root, at);
        break;
      }
      default:
        if (!ANNOTATIONS.has(kw)) throw new Error(`${at}: the checker does not know keyword ${kw}`);
    }
  }
}
