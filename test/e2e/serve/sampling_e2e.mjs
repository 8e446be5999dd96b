// The request surface of `hyc serve` beyond plain generation, through the
// official `openai` client: logprobs (streamed and not; equal to the
// log-softmax of `hyc run --logits-out` to 1e-4), n choices (greedy n = 4
// equals four single requests), penalties, logit_bias, seeds reproducible
// whatever runs beside them, echo (with logprobs: the prompt's, equal to
// hyc run's logits too), stop_token_ids, unknown fields (a 400
// naming them; --lenient accepts them), /tokenize and /detokenize, and bad
// values refused naming what was expected and found.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

/// A float32 [rows][cols] .npy (runtime/cli/npy.cpp writes version 1.0).
function readNpy(file) {
  const buf = fs.readFileSync(file);
  assert.equal(buf.subarray(1, 6).toString('latin1'), 'NUMPY');
  const headerLen = buf.readUInt16LE(8);
  const header = buf.subarray(10, 10 + headerLen).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  const [rows, cols] = header.match(/'shape': \((\d+), (\d+)\)/).slice(1).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 10 + headerLen,
                                                 buf.byteOffset + buf.length));
  assert.equal(data.length, rows * cols);
  return { rows, cols, row: (r) => data.subarray(r * cols, (r + 1) * cols) };
}

function logSoftmax(row) {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  return Array.from(row, (v) => v - lse);
}

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; ++i) if (row[i] > row[best]) best = i;
  return best;
}

export async function samplingChecks({ hyc, art, base, client, model, key, launch }) {
  const post = async (p, body, k = key) => {
    const r = await fetch(base + p, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${k}` },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  const greedy = { model, temperature: 0 };

  // /tokenize, /detokenize, /v1/models.
  const tk = await post('/tokenize', { model, prompt: 'Once upon a time' });
  assert.equal(tk.status, 200, JSON.stringify(tk.body));
  assert.equal(tk.body.count, tk.body.tokens.length);
  assert.equal(tk.body.max_model_len, 512);
  const dt = await post('/detokenize', { model, tokens: tk.body.tokens });
  assert.equal(dt.status, 200);
  assert.equal(dt.body.prompt, 'Once upon a time');
  assert.equal((await post('/tokenize', { model, prompt: 'x' }, 'wrong')).status, 401);
  const badIds = await post('/detokenize', { model, tokens: [1, 512] });
  assert.equal(badIds.status, 400);
  assert.match(badIds.body.error.message, /token id 512 outside the vocabulary \[0, 512\)/);
  const chatTk = await post('/tokenize', { model, messages: [{ role: 'user', content: 'Hi' }] });
  const chatAsk = await client.chat.completions.create(
      { ...greedy, max_tokens: 1, messages: [{ role: 'user', content: 'Hi' }] });
  // The chat request adds the BOS to the rendered text (no template here).
  assert.equal(chatTk.body.count + 1, chatAsk.usage.prompt_tokens);
  const models = await client.models.list();
  assert.equal(models.data[0].max_model_len, 512);
  console.log('ok: /tokenize -> /detokenize round trip, ids bounds-checked, max_model_len');

  // Logprobs of greedy tokens == log-softmax of hyc run's logits.
  const ids = tk.body.tokens;
  const K = 12;
  const done = await client.completions.create(
      { ...greedy, prompt: ids, max_tokens: K, logprobs: 5, ignore_eos: true });
  const lp = done.choices[0].logprobs;
  assert.equal(lp.token_logprobs.length, K);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hyc-logits-'));
  const npy = path.join(dir, 'logits.npy');
  execFileSync(hyc, ['run', art, '--prompt-ids', ids.join(','), '-n', String(K),
                     '--temperature', '0', '--ignore-eos', '--no-stats', '--logits-out', npy],
               { encoding: 'utf8' });
  const logits = readNpy(npy);
  fs.rmSync(dir, { recursive: true });
  assert.equal(logits.rows, ids.length + K - 1);
  let worst = 0;
  for (let j = 0; j < K; ++j) {
    const ref = logSoftmax(logits.row(ids.length - 1 + j));
    const tok = argmax(logits.row(ids.length - 1 + j));
    worst = Math.max(worst, Math.abs(lp.token_logprobs[j] - ref[tok]));
    assert.ok(Math.abs(lp.token_logprobs[j] - ref[tok]) < 1e-4,
              `position ${j}: ${lp.token_logprobs[j]} vs ${ref[tok]}`);
    const want = [...ref].sort((a, b) => b - a).slice(0, 5);
    const got = Object.values(lp.top_logprobs[j]).sort((a, b) => b - a);
    // Distinct token texts: the dict holds at most 5 values, each a top-5 one.
    got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 1e-4 || want.some((w) => Math.abs(w - v) < 1e-4),
                                    `top_logprobs at ${j}: ${got} vs ${want}`));
  }
  assert.equal(lp.text_offset[0], 0);
  assert.equal(lp.tokens.join(''), done.choices[0].text);

  // echo with logprobs: the prompt's tokens lead, each after the first
  // with the log-softmax of hyc run's row for the position before it.
  const echoReq = { ...greedy, prompt: ids, max_tokens: K, logprobs: 5, ignore_eos: true, echo: true };
  const echoedLp = await client.completions.create(echoReq);
  const elp = echoedLp.choices[0].logprobs;
  assert.equal(elp.tokens.length, ids.length + K);
  assert.equal(elp.token_logprobs[0], null);
  assert.equal(elp.top_logprobs[0], null);
  assert.equal(elp.tokens.join(''), echoedLp.choices[0].text);
  assert.equal(elp.text_offset[ids.length], echoedLp.choices[0].text.length - done.choices[0].text.length);
  let worstPrompt = 0;
  for (let k = 1; k < ids.length; ++k) {
    const ref = logSoftmax(logits.row(k - 1));
    worstPrompt = Math.max(worstPrompt, Math.abs(elp.token_logprobs[k] - ref[ids[k]]));
    assert.ok(Math.abs(elp.token_logprobs[k] - ref[ids[k]]) < 1e-4,
              `prompt position ${k}: ${elp.token_logprobs[k]} vs ${ref[ids[k]]}`);
    const best = Math.max(...Object.values(elp.top_logprobs[k]));
    assert.ok(Math.abs(best - Math.max(...ref)) < 1e-4, `prompt top_logprobs at ${k}`);
  }
  elp.token_logprobs.slice(ids.length).forEach((v, j) =>
    assert.ok(Math.abs(v - lp.token_logprobs[j]) < 1e-4, `answer position ${j} with echo`));
  const echoStreamed = [];
  for await (const c of await client.completions.create({ ...echoReq, stream: true }))
    echoStreamed.push(...(c.choices[0]?.logprobs?.token_logprobs ?? []));
  assert.deepEqual(echoStreamed, elp.token_logprobs);
  console.log(`ok: echo + logprobs: ${ids.length - 1} prompt logprobs == log-softmax of hyc run's logits ` +
              `(max |diff| ${worstPrompt.toExponential(2)}), streamed alike`);

  // Streamed logprobs equal the non-streamed ones.
  const s = await client.completions.create(
      { ...greedy, prompt: ids, max_tokens: K, logprobs: 5, ignore_eos: true, stream: true });
  const streamed = [];
  for await (const c of s) streamed.push(...(c.choices[0]?.logprobs?.token_logprobs ?? []));
  assert.deepEqual(streamed, lp.token_logprobs);
  const chatReq = { ...greedy, max_tokens: 10, logprobs: true, top_logprobs: 3,
                    messages: [{ role: 'user', content: 'Tell me a story' }] };
  const chat = await client.chat.completions.create(chatReq);
  const content = chat.choices[0].logprobs.content;
  assert.equal(content.length, chat.usage.completion_tokens);
  for (const e of content) {
    assert.equal(e.top_logprobs.length, 3);
    assert.equal(e.top_logprobs[0].logprob, e.logprob); // greedy: the best
    assert.deepEqual(e.bytes, [...Buffer.from(e.token)]);
  }
  assert.equal(content.map((e) => e.token).join(''), chat.choices[0].message.content);
  const chatStream = await client.chat.completions.create({ ...chatReq, stream: true });
  const chatStreamed = [];
  for await (const c of chatStream) chatStreamed.push(...(c.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(chatStreamed, content);
  console.log(`ok: logprobs (completions, chat; streamed == not) == log-softmax of hyc run's logits (max |diff| ${worst.toExponential(2)})`);

  // n = 4 greedy == four single requests; choices indexed.
  const prompt = 'The little dog';
  const single = await client.completions.create({ ...greedy, prompt, max_tokens: 24 });
  const four = await client.completions.create({ ...greedy, prompt, max_tokens: 24, n: 4 });
  assert.deepEqual(four.choices.map((c) => c.index), [0, 1, 2, 3]);
  four.choices.forEach((c) => assert.equal(c.text, single.choices[0].text));
  assert.equal(four.usage.prompt_tokens, single.usage.prompt_tokens);
  assert.equal(four.usage.completion_tokens, 4 * single.usage.completion_tokens);
  const fourChat = await client.chat.completions.create(
      { ...greedy, max_tokens: 16, n: 4, stream: true, messages: [{ role: 'user', content: prompt }] });
  const texts = ['', '', '', ''];
  for await (const c of fourChat) for (const ch of c.choices) texts[ch.index] += ch.delta?.content ?? '';
  const oneChat = await client.chat.completions.create(
      { ...greedy, max_tokens: 16, messages: [{ role: 'user', content: prompt }] });
  texts.forEach((t) => assert.equal(t, oneChat.choices[0].message.content));
  console.log('ok: greedy n=4 (completions, streamed chat) == single requests');

  // Seeds: a sampled request alone == the same beside others; n = 3 seeded
  // choices distinct, and reproducible.
  const seeded = { model, prompt: 'Once upon a time', max_tokens: 30, temperature: 1, seed: 1234 };
  const alone = (await client.completions.create(seeded)).choices[0].text;
  const others = ['Lily and Ben', 'One day', 'The sun was', 'Tom had a red ball', 'The cat sat'].map(
      (p, i) => client.completions.create({ model, prompt: p, max_tokens: 40, temperature: i % 2, seed: i }));
  const [beside] = await Promise.all([client.completions.create(seeded), ...others]);
  assert.equal(beside.choices[0].text, alone);
  const three = await client.completions.create({ ...seeded, n: 3 });
  const again = await client.completions.create({ ...seeded, n: 3 });
  assert.deepEqual(three.choices.map((c) => c.text), again.choices.map((c) => c.text));
  assert.equal(three.choices[0].text, alone);
  assert.notEqual(three.choices[1].text, three.choices[0].text);
  assert.notEqual(three.choices[2].text, three.choices[1].text);
  console.log('ok: seeded output reproducible alone and beside 5 others; n=3 choices distinct');

  // Penalties: the greedy story repeats tokens; the largest presence and
  // frequency penalties (2 each, OpenAI's bound) cut the repeats by more
  // than half (not to zero: this model's logits can lead by more than 4).
  const repeats = (tokens) => tokens.length - new Set(tokens).size;
  const plain = await client.completions.create(
      { ...greedy, prompt: 'Once upon a time', max_tokens: 60, logprobs: 0, ignore_eos: true });
  const penalised = await client.completions.create(
      { ...greedy, prompt: 'Once upon a time', max_tokens: 60, logprobs: 0, ignore_eos: true,
        frequency_penalty: 2, presence_penalty: 2 });
  const before = repeats(plain.choices[0].logprobs.tokens);
  const after = repeats(penalised.choices[0].logprobs.tokens);
  assert.ok(before >= 10, `the greedy story repeats only ${before} tokens`);
  assert.ok(after * 2 < before, `penalised: ${after} repeats vs ${before}`);
  const rep = await client.completions.create(
      { ...greedy, prompt: 'Once upon a time', max_tokens: 60, ignore_eos: true, repetition_penalty: 1.5 });
  assert.notEqual(rep.choices[0].text, plain.choices[0].text);
  console.log(`ok: presence/frequency penalties: ${before} repeated tokens -> ${after}; repetition_penalty changes the text`);

  // logit_bias forces a token; stop_token_ids end at one; echo.
  const forced = 300;
  const biased = await client.completions.create(
      { ...greedy, prompt: 'Once upon a time', max_tokens: 3, logit_bias: { [forced]: 100 } });
  const forcedText = (await post('/detokenize', { model, tokens: [forced, forced, forced] })).body.prompt;
  assert.equal(biased.choices[0].text, forcedText);
  const story = argmax(logits.row(ids.length - 1 + 3)); // the 4th greedy token
  const cut = await client.completions.create(
      { ...greedy, prompt: ids, max_tokens: K, ignore_eos: true, stop_token_ids: [story] });
  assert.equal(cut.choices[0].finish_reason, 'stop');
  const firstAt = [0, 1, 2, 3].find((j) => argmax(logits.row(ids.length - 1 + j)) === story);
  assert.equal(cut.usage.completion_tokens, firstAt);
  const echoed = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 8, echo: true });
  const plain8 = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 8 });
  assert.equal(echoed.choices[0].text, 'Once upon a time' + plain8.choices[0].text);
  console.log('ok: logit_bias forces a token, stop_token_ids stop, echo prepends the prompt');

  // Unknown fields: a 400 naming them; bad values name expected and found.
  const chatBody = { model, messages: [{ role: 'user', content: 'Hi' }] };
  const bad = [
    ['/v1/completions', { model, prompt: 'x', max_tokns: 5 }, 'max_tokns', /unrecognized request argument supplied: 'max_tokns'/],
    ['/v1/chat/completions', { model, messages: [{ role: 'user', content: 'Hi', nmae: 'x' }] },
     'messages[0].nmae', /unrecognized field 'messages\[0\]\.nmae'/],
    ['/v1/completions', { model, prompt: 'x', n: 0 }, 'n', /expected an integer in \[1, 16\], found 0/],
    ['/v1/completions', { model, prompt: 'x', n: 10000 }, 'n', /expected an integer in \[1, 16\], found 10000/],
    ['/v1/chat/completions', { ...chatBody, logprobs: true, top_logprobs: 21 }, 'top_logprobs', /\[0, 20\], found 21/],
    ['/v1/completions', { model, prompt: 'x', logit_bias: { 99999: 5 } }, 'logit_bias', /token ids in \[0, 512\) as keys, found '99999'/],
    ['/v1/completions', { model, prompt: 'x', frequency_penalty: 'high' }, 'frequency_penalty', /expected a number, found string/],
    ['/v1/completions', { model, prompt: 'x', presence_penalty: 3 }, 'presence_penalty', /expected a number in \[-2\.0, 2\.0\], found 3/],
  ];
  for (const [p, body, param, message] of bad) {
    const r = await post(p, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.param, param);
    assert.match(r.body.error.message, message);
  }
  await assert.rejects(client.completions.create({ model, prompt: 'x', n: 0 }),
                       (e) => e.status === 400 && /found 0/.test(e.message));
  const { proc, base: lenientBase } = await launch(['--lenient']);
  try {
    const r = await fetch(lenientBase + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, prompt: 'x', max_tokens: 2, max_tokns: 5, extra: { a: 1 } }) });
    assert.equal(r.status, 200, await r.clone().text());
    assert.equal((await r.json()).usage.completion_tokens > 0, true);
  } finally {
    proc.kill('SIGTERM');
  }
  console.log('ok: unknown fields and bad values get a 400 naming them; --lenient accepts unknown fields');
}
