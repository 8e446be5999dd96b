// Structured output, tool calls and reasoning through a spawned `hyc serve`
// with the official `openai` client, on random-weight models whose
// tokenizers are the real Qwen3 and DeepSeek-V3 ones: constrained decoding
// guarantees the form whatever the weights, so every answer is parsed and
// checked (json_schema_check.mjs, written apart from the C++ validator).
//  - 24 JSON schemas (chat and completions, streamed and not) and JSON mode;
//  - bad schemas and hostile tools: a 400 naming the problem;
//  - tool_choice required / named / none, parallel_tool_calls (several
//    calls, or exactly one whatever the model prefers), streamed tool-call
//    deltas (the name first, then argument pieces that add up to the
//    non-streamed reply's calls), the three wire formats (Qwen3's and DeepSeek-V3's
//    real templates, a Llama-3.1-style one in templates/), each round-
//    tripped: the assistant's tool_calls and the tool's result, sent back,
//    are what the template renders into the next prompt (/tokenize ==
//    usage.prompt_tokens, /detokenize shows them);
//  - reasoning: logit_bias + repetition_penalty make the greedy random model
//    write "<think>Let me think</think>" (each biased token, once written,
//    drops below the next), which must come back as reasoning_content while
//    a JSON schema constrains only the answer after it; an R1-style
//    template whose prompt opens the block does the same from inside it.
// Args: HYC QWEN_ART DS_ART NODE_MODULES TEMPLATES_DIR
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
import { checkSchema } from './json_schema_check.mjs';

const [hyc, qwenArt, dsArt, modules, templates] = process.argv.slice(2);
const require = createRequire(modules + '/');
const openaiModule = require('openai');
const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;
const MODEL = 'm';

const spawned = [];
process.on('exit', () => {
  for (const p of spawned) if (p.exitCode === null) p.kill('SIGKILL');
});

async function withServer(art, args, body) {
  const proc = spawn(hyc, ['serve', art, '--port', '0', '--model-name', MODEL, ...args],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
  spawned.push(proc);
  const base = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('hyc serve did not start: ' + out)), 60000);
    proc.on('exit', (code) => reject(new Error(`hyc serve exited (${code}): ${out}`)));
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
  const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
  try {
    await body(client, base);
  } finally {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  }
}

async function post(base, route, body) {
  const r = await fetch(base + route, { method: 'POST', body: JSON.stringify(body),
                                        headers: { 'Content-Type': 'application/json' } });
  return { status: r.status, body: await r.json() };
}

const str = (extra = {}) => ({ type: 'string', maxLength: 12, ...extra });
const SCHEMAS = [
  { type: 'object', properties: { name: str(), age: { type: 'integer', minimum: 0, maximum: 120 } }, required: ['name', 'age'] },
  { type: 'object', properties: { ok: { type: 'boolean' }, note: { type: 'null' } }, required: ['ok', 'note'], additionalProperties: false },
  { type: 'object', properties: { color: { enum: ['red', 'green', 'blue'] } }, required: ['color'] },
  { type: 'object', properties: { v: { const: 'fixed' }, n: { type: 'number', minimum: -1.5, maximum: 2.5 } }, required: ['v', 'n'] },
  { type: 'array', items: { type: 'integer', minimum: 1, maximum: 9 }, minItems: 2, maxItems: 4 },
  { type: 'object', properties: { tags: { type: 'array', items: str({ minLength: 1, maxLength: 5 }), maxItems: 3 } }, required: ['tags'] },
  { type: 'object', properties: { when: { type: 'string', format: 'date' } }, required: ['when'] },
  { type: 'object', properties: { id: { type: 'string', format: 'uuid' } }, required: ['id'] },
  { type: 'object', properties: { ip: { type: 'string', format: 'ipv4' } }, required: ['ip'] },
  { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{2}$' } }, required: ['code'] },
  { type: 'object', properties: { x: { anyOf: [{ type: 'integer', minimum: 0, maximum: 5 }, str()] } }, required: ['x'] },
  { type: 'object', properties: { p: { $ref: '#/$defs/point' }, q: { $ref: '#/$defs/point' } }, required: ['p', 'q'],
    $defs: { point: { type: 'object', properties: { x: { type: 'integer', maximum: 99, minimum: -99 }, y: { type: 'integer', maximum: 99, minimum: -99 } }, required: ['x', 'y'] } } },
  { type: 'object', properties: { pair: { type: 'array', prefixItems: [str(), { type: 'boolean' }], items: false, minItems: 2 } }, required: ['pair'] },
  { type: 'object', properties: { maybe: { type: ['string', 'null'], maxLength: 6 } }, required: ['maybe'] },
  { type: 'object', properties: { score: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 10 } }, required: ['score'] },
  { type: 'object', properties: { inner: { type: 'object', properties: { deep: { type: 'object', properties: { z: { type: 'boolean' } }, required: ['z'] } }, required: ['deep'] } }, required: ['inner'] },
  { type: 'object', properties: { a: str(), b: str(), c: { type: 'integer', minimum: 10, maximum: 20 } }, required: ['a', 'c'] },
  { type: 'object', properties: { kind: { oneOf: [{ const: 'cat' }, { const: 'dog' }] }, legs: { type: 'integer', minimum: 0, maximum: 4 } }, required: ['kind', 'legs'] },
  { type: 'object', properties: { t: { type: 'string', format: 'time' } }, required: ['t'] },
  { type: 'object', properties: { grid: { type: 'array', items: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 1 }, minItems: 2, maxItems: 2 }, minItems: 2, maxItems: 2 } }, required: ['grid'] },
  { type: 'object', properties: { word: { type: 'string', minLength: 3, maxLength: 3 } }, required: ['word'] },
  { type: 'object', properties: { mail: { type: 'string', format: 'email' } }, required: ['mail'] },
  { type: 'boolean' },
  { type: 'object', properties: { list: { type: 'array', items: { $ref: '#/$defs/item' }, maxItems: 2 } }, required: ['list'],
    $defs: { item: { type: 'object', properties: { k: { enum: [1, 2, 3] }, v: str() }, required: ['k'] } } },
];

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: str({ minLength: 1 }), unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
                  required: ['city', 'unit'] } } },
  { type: 'function', function: { name: 'add', parameters: { type: 'object',
    properties: { a: { type: 'integer', minimum: -999, maximum: 999 }, b: { type: 'integer', minimum: -999, maximum: 999 } }, required: ['a', 'b'] } } },
];
const NO_THINK = { chat_template_kwargs: { enable_thinking: false } };

async function jsonSchemas(client) {
  for (const [i, schema] of SCHEMAS.entries()) {
    const response_format = { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } };
    const common = { model: MODEL, max_tokens: 300, temperature: 0.9, seed: 100 + i, response_format };
    let text, finish;
    const route = i % 3 === 2 ? 'completions' : 'chat';
    const stream = i % 4 === 1;
    if (route === 'chat') {
      const req = { ...common, ...NO_THINK, messages: [{ role: 'user', content: `Answer ${i} as JSON.` }] };
      if (stream) {
        text = ''; finish = null;
        for await (const c of await client.chat.completions.create({ ...req, stream: true })) {
          text += c.choices[0]?.delta?.content ?? '';
          finish = c.choices[0]?.finish_reason ?? finish;
        }
      } else {
        const r = await client.chat.completions.create(req);
        text = r.choices[0].message.content;
        finish = r.choices[0].finish_reason;
      }
    } else {
      const r = await client.completions.create({ ...common, prompt: `Answer ${i} as JSON:` });
      text = r.choices[0].text;
      finish = r.choices[0].finish_reason;
    }
    assert.equal(finish, 'stop', `schema ${i}: finish ${finish}, text ${text}`);
    let value;
    assert.doesNotThrow(() => { value = JSON.parse(text); }, `schema ${i}: not JSON: ${text}`);
    checkSchema(schema, value);
  }
  // JSON mode, both routes.
  for (const route of ['chat', 'completions']) {
    const common = { model: MODEL, max_tokens: 200, temperature: 0.7, seed: 7,
                     response_format: { type: 'json_object' } };
    const r = route === 'chat'
        ? await client.chat.completions.create({ ...common, ...NO_THINK, messages: [{ role: 'user', content: 'JSON please' }] })
        : await client.completions.create({ ...common, prompt: 'JSON:' });
    const text = route === 'chat' ? r.choices[0].message.content : r.choices[0].text;
    assert.equal(r.choices[0].finish_reason, 'stop', text);
    const v = JSON.parse(text);
    assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), `json_object gave ${text}`);
  }
  // n = 3 with one schema: each choice has its own constraint state.
  const r = await client.chat.completions.create({
    model: MODEL, max_tokens: 200, temperature: 1, seed: 5, n: 3, ...NO_THINK,
    messages: [{ role: 'user', content: 'three' }],
    response_format: { type: 'json_schema', json_schema: { name: 'n3', schema: SCHEMAS[0] } } });
  assert.equal(r.choices.length, 3);
  for (const c of r.choices) checkSchema(SCHEMAS[0], JSON.parse(c.message.content));
  console.log(`ok: ${SCHEMAS.length} JSON schemas (chat, completions, streamed) parsed and valid; json_object; n = 3`);
}

async function badRequests(base) {
  const chat = (extra) => ({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }], ...extra });
  const rf = (schema) => ({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
  const fn = (name, parameters = { type: 'object' }) => ({ type: 'function', function: { name, parameters } });
  const cases = [
    [chat(rf({ type: 'strange' })), 'response_format', /unknown type "strange"/],
    [chat(rf({ type: 'string', frobnicate: 1 })), 'response_format', /frobnicate/],
    [chat(rf({ $ref: '#/$defs/missing' })), 'response_format', /missing/],
    [chat(rf({ type: 'object', properties: Object.fromEntries(Array.from({ length: 9000 }, (_, i) => [`p${i}`, { type: 'integer' }])) })),
     'response_format.json_schema.schema', /bytes of JSON; at most 131072/],
    [chat({ response_format: { type: 'xml' } }), 'response_format', /type "xml"/],
    [chat({ response_format: { type: 'json_schema', json_schema: { name: 'has space', schema: {} } } }),
     'response_format.json_schema.name', /1 to 64 of a-z/],
    [chat({ tools: Array.from({ length: 129 }, (_, i) => fn(`f${i}`)) }), 'tools', /at most 128 tools, found 129/],
    [chat({ tools: [fn('bad name!')] }), 'tools[0].function.name', /1 to 64 of a-z/],
    [chat({ tools: [fn('x'.repeat(65))] }), 'tools[0].function.name', /1 to 64/],
    [chat({ tools: [fn('f'), fn('f')] }), 'tools', /defined twice/],
    [chat({ tools: [fn('f', { type: 'object', properties: { a: { type: 'nope' } } })], tool_choice: 'required' }), 'tools', /unknown type "nope"/],
    [chat({ tools: [fn('f')], tool_choice: { type: 'function', function: { name: 'g' } } }), 'tool_choice', /not among the tools/],
    [chat({ tool_choice: 'required' }), 'tool_choice', /needs tools/],
    [chat({ tools: [fn('f')], tool_choice: 'sometimes' }), 'tool_choice', /expected "none", "auto"/],
    [chat({ tools: [fn('f')], tool_choice: 'required', response_format: { type: 'json_object' } }), 'response_format', /give one/],
    [chat({ messages: [{ role: 'tool', content: 'r' }] }), 'messages[0].tool_call_id', /expected a string/],
    [chat({ messages: [{ role: 'user', content: 'x', tool_calls: [] }] }), 'messages[0].tool_calls', /only assistant/],
    [chat({ messages: [{ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: {} } }] }] }),
     'messages[0].tool_calls[0].function.arguments', /as a JSON string/],
    [chat({ functions: [] }), 'functions', /use tools/],
  ];
  for (const [body, param, message] of cases) {
    const r = await post(base, '/v1/chat/completions', body);
    assert.equal(r.status, 400, `${param}: ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.equal(r.body.error.param, param, JSON.stringify(r.body));
    assert.match(r.body.error.message, message);
  }
  assert.equal((await fetch(base + '/health')).status, 200);
  console.log(`ok: ${cases.length} bad schemas / tools / messages refused with a 400 naming them`);
}

/// A required call, then the same conversation with its tool_calls and a
/// tool result sent back: the template must render both.
async function toolRoundTrip(client, base, family, renderedCall, renderedResult) {
  const user = { role: 'user', content: 'What is the weather in Oslo?' };
  const r = await client.chat.completions.create({
    model: MODEL, max_tokens: 120, temperature: 0, ...NO_THINK, messages: [user], tools: TOOLS,
    tool_choice: 'required', parallel_tool_calls: false });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls', `${family}: ${JSON.stringify(choice)}`);
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  const tool = TOOLS.find((t) => t.function.name === call.function.name);
  assert.ok(tool, `${family}: called ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  checkSchema(tool.function.parameters, args);

  // Named, streamed: the call's first delta names it (id, type, name,
  // empty arguments), then its arguments come in pieces; they add up to
  // the same request answered whole.
  const named = { model: MODEL, max_tokens: 120, temperature: 0, ...NO_THINK, messages: [user], tools: TOOLS,
                  tool_choice: { type: 'function', function: { name: 'add' } } };
  const whole = (await client.chat.completions.create(named)).choices[0];
  assert.equal(whole.message.tool_calls.length, 1);
  assert.equal(whole.message.tool_calls[0].function.name, 'add');
  checkSchema(TOOLS[1].function.parameters, JSON.parse(whole.message.tool_calls[0].function.arguments));
  const streamed = await streamedCalls(client, { ...named, stream: true });
  assert.equal(streamed.finish, 'tool_calls');
  assert.equal(streamed.content, '');
  const first = streamed.deltas[0];
  assert.equal(first.index, 0);
  assert.equal(first.type, 'function');
  assert.match(first.id, /^call_/);
  assert.equal(first.function.name, 'add');
  assert.equal(first.function.arguments, '', `${family}: first delta ${JSON.stringify(first)}`);
  assert.ok(streamed.deltas.length > 3, `${family}: arguments in ${streamed.deltas.length - 1} pieces`);
  for (const d of streamed.deltas.slice(1)) {
    assert.equal(d.index, 0);
    assert.equal(d.id, undefined);
    assert.equal(d.function.name, undefined);
  }
  assert.deepEqual(streamed.calls, whole.message.tool_calls.map((c) => c.function));

  // Round trip: the assistant turn as the client got it, plus a result.
  const result = '{"temp": 21}';
  const messages = [user, choice.message, { role: 'tool', tool_call_id: call.id, content: result }];
  const next = await client.chat.completions.create({ model: MODEL, max_tokens: 4, temperature: 0, ...NO_THINK,
                                                      messages, tools: TOOLS });
  const tok = await post(base, '/tokenize', { model: MODEL, messages, tools: TOOLS, ...NO_THINK });
  assert.equal(tok.status, 200, JSON.stringify(tok.body));
  assert.equal(tok.body.count, next.usage.prompt_tokens, `${family}: /tokenize vs usage`);
  const text = (await post(base, '/detokenize', { model: MODEL, tokens: tok.body.tokens })).body.prompt;
  // The call as the template wrote it: its arguments between the family's
  // markers, equal to what the client got (as an object: tojson respaces).
  const [before, after] = renderedCall(call.function.name);
  const at = text.indexOf(before);
  assert.ok(at >= 0, `${family}: no ${JSON.stringify(before)} in the prompt:\n${text}`);
  const end = text.indexOf(after, at + before.length);
  assert.ok(end > at, `${family}: no ${JSON.stringify(after)} after the call:\n${text}`);
  assert.deepEqual(JSON.parse(text.slice(at + before.length, end)), args);
  assert.ok(text.includes(renderedResult(result)), `${family}: the result is not rendered:\n${text}`);
  // tool_choice none: the tools are neither rendered nor parsed.
  const none = await client.chat.completions.create({ model: MODEL, max_tokens: 2, temperature: 0, ...NO_THINK,
                                                      messages: [user], tools: TOOLS, tool_choice: 'none' });
  const bare = await client.chat.completions.create({ model: MODEL, max_tokens: 2, temperature: 0, ...NO_THINK,
                                                      messages: [user] });
  assert.equal(none.usage.prompt_tokens, bare.usage.prompt_tokens, `${family}: tool_choice none rendered tools`);
  console.log(`ok: ${family}: required call ${call.function.name}(${call.function.arguments}), named + streamed, ` +
              `round trip renders call and result (${next.usage.prompt_tokens} prompt tokens), none`);
}

/// A streamed reply's tool calls rebuilt from their deltas as a client
/// does (by index: the first delta's name, the arguments concatenated).
async function streamedCalls(client, request) {
  const deltas = [], calls = [];
  let finish = null, content = '';
  for await (const c of await client.chat.completions.create(request)) {
    for (const d of c.choices[0]?.delta?.tool_calls ?? []) {
      deltas.push(d);
      if (d.id !== undefined) calls[d.index] = { name: d.function.name, arguments: '' };
      calls[d.index].arguments += d.function?.arguments ?? '';
    }
    content += c.choices[0]?.delta?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  return { deltas, calls, finish, content };
}

/// tool_choice required with the token that begins the family's separator
/// between calls pushed up: with parallel_tool_calls the grammar lets
/// further calls follow (streamed they add up to the same calls); without,
/// it ends after one, whatever the model prefers.
async function parallelCalls(client, base, family, separator) {
  const [sep] = await tokenIds(base, separator);
  const request = { model: MODEL, max_tokens: 160, temperature: 0, ...NO_THINK, tools: TOOLS,
                    messages: [{ role: 'user', content: 'Weather in Oslo and Rome?' }],
                    tool_choice: 'required', logit_bias: { [sep]: 100 } };
  const many = (await client.chat.completions.create(request)).choices[0];
  const calls = many.message.tool_calls ?? [];
  assert.ok(calls.length >= 2, `${family}: parallel calls: ${JSON.stringify(many.message)}`);
  // The separators between calls are markup, not content; the only
  // content is a last call cut off by max_tokens before its name closed.
  const rest = many.message.content ?? '';
  assert.ok(rest === '' || (many.finish_reason === 'length' && /^\S/.test(rest)),
            `${family}: ${JSON.stringify(many.message)}`);
  for (const c of calls.slice(0, -1)) {
    const tool = TOOLS.find((t) => t.function.name === c.function.name);
    checkSchema(tool.function.parameters, JSON.parse(c.function.arguments));
  }
  const streamed = await streamedCalls(client, { ...request, stream: true });
  assert.deepEqual(streamed.calls, calls.map((c) => c.function), `${family}: streamed parallel calls`);
  assert.equal(streamed.finish, many.finish_reason);
  assert.equal(streamed.content, rest);

  const one = (await client.chat.completions.create({ ...request, parallel_tool_calls: false })).choices[0];
  assert.equal(one.finish_reason, 'tool_calls', `${family}: ${JSON.stringify(one)}`);
  assert.equal(one.message.tool_calls.length, 1);
  assert.deepEqual(one.message.tool_calls[0].function, calls[0].function);
  const oneStreamed = await streamedCalls(client, { ...request, parallel_tool_calls: false, stream: true });
  assert.deepEqual(oneStreamed.calls, [calls[0].function]);
  // auto without parallel calls: free text is untouched by the constraint.
  const auto = { ...request, tool_choice: 'auto', parallel_tool_calls: false, logit_bias: undefined, max_tokens: 6 };
  const free = (await client.chat.completions.create(auto)).choices[0];
  const unconstrained = (await client.chat.completions.create({ ...auto, parallel_tool_calls: true })).choices[0];
  assert.deepEqual(free.message, unconstrained.message);
  console.log(`ok: ${family}: required + parallel: ${calls.length} calls (streamed alike); ` +
              'parallel_tool_calls false: exactly one');
}

async function tokenIds(base, text) {
  const r = await post(base, '/tokenize', { model: MODEL, prompt: text, add_special_tokens: false });
  return r.body.tokens;
}

/// Biases that make the greedy model write "<think>" (when `open`), then
/// "Let me think", then "</think>".
async function thinkingBias(base, open) {
  const bias = {};
  const [think] = await tokenIds(base, '<think>');
  const [close] = await tokenIds(base, '</think>');
  const words = await tokenIds(base, 'Let me think');
  assert.equal(words.length, 3, `"Let me think" is ${words.length} tokens`);
  // Steps of 10 logits dwarf a random model's own spread; each token, once
  // written, is divided by the repetition penalty below the next one.
  if (open) bias[think] = 50;
  words.forEach((id, k) => { bias[id] = 40 - 10 * k; });
  bias[close] = 10;
  return { logit_bias: bias, repetition_penalty: 10, temperature: 0 };
}

async function reasoning(client, base, { open, label }) {
  const sampling = await thinkingBias(base, open);
  const schema = SCHEMAS[0];
  const messages = [{ role: 'user', content: 'Who are you?' }];
  const response_format = { type: 'json_schema', json_schema: { name: 'who', schema } };
  const r = await client.chat.completions.create({ model: MODEL, max_tokens: 120, ...sampling, messages,
                                                   response_format });
  const m = r.choices[0].message;
  assert.equal(m.reasoning_content, 'Let me think', `${label}: ${JSON.stringify(m)}`);
  assert.equal(r.choices[0].finish_reason, 'stop');
  checkSchema(schema, JSON.parse(m.content));
  // Streamed: reasoning and content arrive in their own deltas.
  let reasoningText = '', content = '';
  for await (const c of await client.chat.completions.create({ model: MODEL, max_tokens: 120, ...sampling,
                                                               messages, response_format, stream: true })) {
    reasoningText += c.choices[0]?.delta?.reasoning_content ?? '';
    content += c.choices[0]?.delta?.content ?? '';
  }
  assert.equal(reasoningText, 'Let me think');
  assert.equal(content, m.content);
  console.log(`ok: ${label}: reasoning_content ${JSON.stringify(m.reasoning_content)}, answer ${m.content} valid (streamed too)`);
}

async function main() {
  await withServer(qwenArt, [], async (client, base) => {
    await jsonSchemas(client);
    await badRequests(base);
    await toolRoundTrip(client, base, 'Qwen3 template',
                        (name) => [`<tool_call>\n{"name": "${name}", "arguments": `, '}\n</tool_call>'],
                        (res) => `<tool_response>\n${res}\n</tool_response>`);
    await parallelCalls(client, base, 'Qwen3 template', '\n');
    await reasoning(client, base, { open: true, label: 'Qwen3, thinking on' });
    // Thinking off: no reasoning, content only.
    const off = await client.chat.completions.create({ model: MODEL, max_tokens: 60, temperature: 0, ...NO_THINK,
        messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } });
    assert.equal(off.choices[0].message.reasoning_content, null);
    JSON.parse(off.choices[0].message.content);
  });
  await withServer(qwenArt, ['--chat-template', path.join(templates, 'llama31_style.jinja')], async (client, base) => {
    await toolRoundTrip(client, base, 'Llama-3.1-style template',
                        (name) => [`{"name": "${name}", "parameters": `, '}<|eot_id|>'],
                        (res) => `<|start_header_id|>ipython<|end_header_id|>\n\n${res}<|eot_id|>`);
    await parallelCalls(client, base, 'Llama-3.1-style template', ';');
  });
  await withServer(qwenArt, ['--chat-template', path.join(templates, 'r1_style.jinja')], async (client, base) => {
    await reasoning(client, base, { open: false, label: 'R1-style template (prompt opens <think>)' });
  });
  await withServer(dsArt, [], async (client, base) => {
    await toolRoundTrip(client, base, 'DeepSeek-V3 template',
                        (name) => [`<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n`,
                                   '\n```<｜tool▁call▁end｜>'],
                        (res) => `<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>${res}<｜tool▁output▁end｜>`);
    await parallelCalls(client, base, 'DeepSeek-V3 template', '\n');
  });
}

main().then(() => console.log('structured e2e: all ok'), (e) => {
  console.error(e);
  process.exit(1);
});
