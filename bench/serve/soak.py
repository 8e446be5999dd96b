#!/usr/bin/env python3
"""Soak benchmark for `hyc serve` (issue 26; not run in CI).

Runs one server for --duration seconds under a mix of concurrent clients,
each kind in its own threads:

  honest        greedy completions and chats, streaming and not; every answer
                must equal the same request's answer on the idle server
  malformed     broken HTTP and JSON, bad fields, wrong keys, unknown routes,
                out-of-vocabulary and over-long prompts: each its documented 4xx
  oversized     claimed 1 TiB bodies and bodies just over --max-body-bytes: 413;
                a body at the limit: 200
  slow          slowloris heads (a header line a second) and dripped bodies:
                408 or a closed connection, without starving honest clients
  disconnecting streams closed after a few chunks, requests closed before
                their answer or mid-body

and samples the server's RSS, open descriptors and /metrics gauges every
--sample-interval seconds. It fails (exit 1) on a crash, a mismatch, an
unexpected answer, KV pages still in use once the load has drained, or RSS
growth of 10% or more from the start of the load to the end.

  python3 bench/serve/soak.py --hyc build/compiler/hyc --artifact s.hyc \\
      [--duration 1800] [--honest 8 --malformed 4 --oversized 2 --slow 20 \\
      --disconnecting 2] [--json report.json]
  python3 bench/serve/soak.py --base http://127.0.0.1:8000 --pid PID --api-key K ...

Python standard library only.
"""
import argparse
import http.client
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

from load import percentile

# Prompts of the honest clients (TinyStories-like openings).
PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben", "One day",
           "The sun was", "Tom had a red ball", "Sara liked to", "There was a big tree"]


class Counter:
    """Thread-safe nested counts: kind -> case -> outcome -> n."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}

    def add(self, kind, case, outcome):
        with self.lock:
            by_case = self.counts.setdefault(kind, {}).setdefault(case, {})
            by_case[outcome] = by_case.get(outcome, 0) + 1

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps(self.counts))


class Soak:
    def __init__(self, args):
        self.args = args
        u = urllib.parse.urlparse(args.base)
        self.host, self.port = u.hostname, u.port
        self.stop = threading.Event()
        self.counts = Counter()
        self.lock = threading.Lock()
        self.honest_latency = []      # (finish time, seconds) of honest requests
        self.mismatches = []          # (case, expected, got)
        self.errors = []              # first messages of unexpected outcomes
        self.samples = []
        self.max_seq_len = 0

    # --- plumbing --------------------------------------------------------

    def connect(self, timeout):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def head(self, method, path, length=None, key=True, extra=""):
        h = f"{method} {path} HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n"
        if key:
            h += f"Authorization: Bearer {self.args.api_key}\r\n"
        if length is not None:
            h += f"Content-Type: application/json\r\nContent-Length: {length}\r\n"
        return (h + extra + "\r\n").encode()

    def post(self, path, body, key=True, extra=""):
        body = body if isinstance(body, bytes) else body.encode()
        return self.head("POST", path, len(body), key, extra) + body

    def exchange(self, raw, timeout):
        """Sends `raw` on a fresh connection; returns (status, body) of the
        answer, status 0 with the reason when there is none."""
        try:
            s = self.connect(timeout)
        except OSError as e:
            return 0, f"connect: {e}"
        try:
            s.sendall(raw)
            return read_response(s, time.monotonic() + timeout)
        except (BrokenPipeError, ConnectionResetError):
            return 0, "reset"
        except OSError as e:
            return 0, f"error: {e}"
        finally:
            s.close()

    def record_error(self, kind, case, outcome, detail=""):
        self.counts.add(kind, case, outcome)
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(f"{kind}/{case}: {outcome} {detail[:200]}")

    def metrics(self):
        c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
        finally:
            c.close()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, v = line.rpartition(" ")
                values[name] = float(v)
        return values

    # --- honest clients --------------------------------------------------

    def honest_cases(self):
        cases = []
        for i, prompt in enumerate(PROMPTS):
            for chat in (False, True):
                for stream in (False, True):
                    body = {"model": self.args.model, "temperature": 0,
                            "max_tokens": 24 + 12 * (i % 6)}
                    if chat:
                        body["messages"] = [{"role": "user", "content": prompt}]
                    else:
                        body["prompt"] = prompt
                    if stream:
                        body["stream"] = True
                        body["stream_options"] = {"include_usage": True}
                    name = f"{'chat' if chat else 'completion'}{'-stream' if stream else ''}:{prompt}"
                    cases.append((name, chat, body))
        # Token-id prompts generating their full length (EOS ignored), two of
        # them sharing a 64-token prefix (the prefix cache serves the second).
        rng = random.Random(7)
        shared = [rng.randrange(3, 256) for _ in range(64)]
        for j in range(4):
            prompt = (shared if j < 2 else []) + [rng.randrange(3, 256) for _ in range(40)]
            body = {"model": self.args.model, "prompt": prompt, "temperature": 0,
                    "max_tokens": 96, "ignore_eos": True, "stream": j % 2 == 1}
            cases.append((f"token-ids-{j}{'-stream' if j % 2 else ''}", False, body))
        # A second chat turn over the first one's answer; a stop string.
        cases.append(("chat-second-turn", True, None))
        cases.append(("completion-stop", False,
                      {"model": self.args.model, "prompt": PROMPTS[0], "temperature": 0,
                       "max_tokens": 64, "stop": [".", "!"]}))
        return cases

    def ask(self, chat, body, timeout):
        """One request on a fresh connection; returns (text, finish, tokens)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request("POST", "/v1/chat/completions" if chat else "/v1/completions",
                      json.dumps(body), {"Content-Type": "application/json",
                                         "Authorization": "Bearer " + self.args.api_key})
            r = c.getresponse()
            if r.status != 200:
                raise Unexpected(f"status {r.status}", r.read()[:300].decode(errors="replace"))
            if not body.get("stream"):
                j = json.loads(r.read())
                ch = j["choices"][0]
                text = ch["message"]["content"] if chat else ch["text"]
                return text, ch["finish_reason"], j["usage"]["completion_tokens"]
            text, finish, tokens, done = "", None, None, False
            for raw in r:
                line = raw.decode().strip()
                if not line:
                    continue
                if line == "data: [DONE]":
                    done = True
                    continue
                if not line.startswith("data: "):
                    raise Unexpected("stream", line[:200])
                event = json.loads(line[6:])
                if "error" in event:
                    raise Unexpected("stream error", event["error"]["message"])
                if event.get("usage"):
                    tokens = event["usage"]["completion_tokens"]
                for ch in event["choices"]:
                    text += (ch.get("delta", {}).get("content") or "") if chat else ch["text"]
                    finish = ch.get("finish_reason") or finish
            if not done:
                raise Unexpected("stream", "ended without data: [DONE]")
            return text, finish, tokens
        finally:
            c.close()

    def references(self):
        """Each honest case sent alone to the idle server: the answers every
        later one must equal."""
        refs, latency = {}, []
        cases = []
        for name, chat, body in self.honest_cases():
            if body is None:  # the second turn needs the first's answer
                first = refs["chat:" + PROMPTS[0]][0]
                body = {"model": self.args.model, "temperature": 0, "max_tokens": 40,
                        "messages": [{"role": "user", "content": PROMPTS[0]},
                                     {"role": "assistant", "content": first[0]},
                                     {"role": "user", "content": "And then?"}]}
            t0 = time.perf_counter()
            refs[name] = (self.ask(chat, body, 60), body)
            latency.append(time.perf_counter() - t0)
            cases.append((name, chat, body))
        return cases, refs, latency

    def honest(self, cid, cases, refs):
        rng = random.Random(cid)
        while not self.stop.is_set():
            name, chat, body = rng.choice(cases)
            t0 = time.perf_counter()
            try:
                got = self.ask(chat, body, self.args.honest_timeout)
            except Unexpected as e:
                self.record_error("honest", name, e.outcome, e.detail)
                continue
            except socket.timeout:
                self.record_error("honest", name, "timeout")
                continue
            except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
                self.record_error("honest", name, type(e).__name__, str(e))
                continue
            with self.lock:
                self.honest_latency.append((time.monotonic(), time.perf_counter() - t0))
            want = refs[name][0]
            # A stream's usage is optional: compare its token count when present.
            if got[0] != want[0] or got[1] != want[1] or (got[2] is not None and got[2] != want[2]):
                self.counts.add("honest", name, "mismatch")
                with self.lock:
                    self.mismatches.append((name, want, got))
            else:
                self.counts.add("honest", name, "ok")
            if self.args.honest_pause:
                time.sleep(self.args.honest_pause)

    # --- malformed and oversized clients --------------------------------

    def malformed_cases(self):
        m = self.args.model

        def completion(**fields):
            return self.post("/v1/completions", json.dumps({"model": m, **fields}))

        def chat(**fields):
            return self.post("/v1/chat/completions", json.dumps({"model": m, **fields}))

        long_ids = [5] * (self.max_seq_len + 1)
        return [
            ("invalid-json", self.post("/v1/completions", '{"model": "x", "prompt": '), {400}),
            ("body-not-object", self.post("/v1/completions", "[1, 2]"), {400}),
            ("empty-body", self.post("/v1/completions", ""), {400}),
            ("missing-prompt", completion(max_tokens=4), {400}),
            ("temperature-string", completion(prompt="x", temperature="hot"), {400}),
            ("temperature-high", completion(prompt="x", temperature=5), {400}),
            ("top-p-zero", completion(prompt="x", top_p=0), {400}),
            ("prompt-object", completion(prompt={"text": "x"}), {400}),
            ("prompt-float-ids", completion(prompt=[1.5, 2]), {400}),
            ("max-tokens-string", completion(prompt="x", max_tokens="5"), {400}),
            ("max-tokens-negative", completion(prompt="x", max_tokens=-1), {400}),
            ("max-tokens-zero", completion(prompt="x", max_tokens=0), {400}),
            ("max-tokens-huge", completion(prompt="x", max_tokens=10 ** 12), {400}),
            ("max-tokens-over-context", completion(prompt="x", max_tokens=self.max_seq_len), {400}),
            ("stream-string", completion(prompt="x", stream="yes"), {400}),
            ("stop-number", completion(prompt="x", stop=7), {400}),
            ("n-two", completion(prompt="x", n=2), {400}),
            ("logprobs", completion(prompt="x", logprobs=5), {400}),
            ("messages-string", chat(messages="hi"), {400}),
            ("messages-empty", chat(messages=[]), {400}),
            ("message-content-number", chat(messages=[{"role": "user", "content": 5}]), {400}),
            ("message-role-unknown", chat(messages=[{"role": "wizard", "content": "x"}]), {400}),
            ("unknown-model", self.post("/v1/completions", json.dumps({"model": "gpt-4", "prompt": "x"})), {404}),
            ("deep-nesting", self.post("/v1/completions", '{"prompt": "x", "user": ' + "[" * 100000 + "]" * 100000 + "}"), {400}),
            ("deep-nesting-unclosed", self.post("/v1/completions", "[" * 100000), {400}),
            ("invalid-utf8", self.post("/v1/completions", b'{"prompt": "\xff\xfe\xc3(", "max_tokens": 4}'), {400}),
            ("lone-surrogate", self.post("/v1/completions", '{"prompt": "\\ud800x", "max_tokens": 4}'), {400}),
            ("token-id-over-vocab", completion(prompt=[1, 99999]), {400}),
            ("token-id-negative", completion(prompt=[-1]), {400}),
            ("token-id-over-int32", completion(prompt=[2 ** 32 + 5]), {400}),
            ("token-id-over-int64", completion(prompt=[2 ** 64 - 1]), {400}),
            ("prompt-ids-over-context", completion(prompt=long_ids), {400}),
            ("prompt-text-over-context", completion(prompt="Once upon a time " * 400), {400}),
            ("chat-over-context", chat(messages=[{"role": "user", "content": "Once upon a time " * 400}]), {400}),
            ("key-wrong", self.post("/v1/completions", "{}", key=False,
                                    extra="Authorization: Bearer nope\r\n"), {401}),
            ("key-missing", self.post("/v1/completions", "{}", key=False), {401}),
            ("key-missing-models", self.head("GET", "/v1/models", key=False), {401}),
            ("content-length-letters", self.head("POST", "/v1/completions", "abc"), {400}),
            ("content-length-negative", self.head("POST", "/v1/completions", "-5"), {400}),
            ("content-length-conflict", self.head("POST", "/v1/completions", 2,
                                                  extra="Content-Length: 3\r\n") + b"{}", {400}),
            ("content-length-short", self.head("POST", "/v1/completions", 5) + b'{"prompt": "x"}', {400}),
            ("chunked-body", self.head("POST", "/v1/completions", key=True,
                                       extra="Transfer-Encoding: chunked\r\n") + b"2\r\n{}\r\n0\r\n\r\n", {411}),
            ("expect-unknown", self.post("/v1/completions", "{}", extra="Expect: 200-ok\r\n"), {417}),
            ("garbage-request-line", b"HELLO\r\n\r\n", {400}),
            ("binary-garbage", bytes(random.Random(3).randrange(256) for _ in range(300)) + b"\r\n\r\n", {400}),
            ("http2-version", b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", {505}),
            ("header-no-colon", b"GET /health HTTP/1.1\r\nHost x\r\n\r\n", {400}),
            ("too-many-headers", b"GET /health HTTP/1.1\r\n" + b"X-A: 1\r\n" * 70 + b"\r\n", {431}),
            ("head-too-long", b"GET /health HTTP/1.1\r\nX-Long: " + b"a" * 20000 + b"\r\n\r\n", {431}),
            ("method-delete", self.head("DELETE", "/v1/completions"), {404, 405}),
            ("method-get-completions", self.head("GET", "/v1/completions"), {404, 405}),
            ("path-unknown", self.post("/v1/nothing-here", "{}"), {404}),
            ("path-root", self.head("GET", "/"), {404}),
        ]

    def run_cases(self, kind, cid, cases):
        rng = random.Random(1000 + cid)
        while not self.stop.wait(self.args.hostile_pause):
            name, raw, expected = rng.choice(cases)
            status, body = self.exchange(raw, self.args.answer_timeout)
            if status in expected:
                # Every refusal carries an OpenAI error body.
                try:
                    ok = bool(json.loads(body)["error"]["message"])
                except (ValueError, KeyError, TypeError):
                    ok = False
                if ok:
                    self.counts.add(kind, name, str(status))
                else:
                    self.record_error(kind, name, "no-error-body", body[:200])
            elif status == 0:
                self.record_error(kind, name, body.split(":")[0])
            else:
                self.record_error(kind, name, str(status), body[:200])

    def oversized_cases(self):
        limit = self.args.max_body_bytes
        # A body exactly at the limit: a prompt padded with spaces; answered.
        filler = {"model": self.args.model, "prompt": "x", "max_tokens": 1, "temperature": 0}
        text = json.dumps(filler)
        at_limit = text[:-1] + " " * (limit - len(text)) + "}"
        return [
            ("claimed-1TiB", self.head("POST", "/v1/completions", 2 ** 40), {413}),
            ("claimed-1TiB-no-key", self.head("POST", "/v1/completions", 2 ** 40, key=False), {401}),
            ("claimed-limit-plus-1", self.head("POST", "/v1/completions", limit + 1), {413}),
            ("claimed-19-nines", self.head("POST", "/v1/completions", "9" * 19), {413}),
            ("content-length-20-digits", self.head("POST", "/v1/completions", "1" * 20), {400}),
            ("body-at-limit", self.post("/v1/completions", at_limit), {200}),
        ]

    def oversized(self, cid, cases):
        # Cases answered with an OpenAI error body, plus the 200 at the limit.
        rng = random.Random(2000 + cid)
        while not self.stop.wait(self.args.hostile_pause):
            name, raw, expected = rng.choice(cases)
            status, body = self.exchange(raw, self.args.answer_timeout)
            if status in expected:
                self.counts.add("oversized", name, str(status))
            elif status == 0:
                self.record_error("oversized", name, body.split(":")[0])
            else:
                self.record_error("oversized", name, str(status), body[:200])

    # --- slow clients ----------------------------------------------------

    def slow(self, cid):
        rng = random.Random(3000 + cid)
        # Staggered starts: the drips do not all land on the same second.
        self.stop.wait(rng.random() * 2)
        limit = self.args.request_timeout + 10  # past this, the server hangs
        while not self.stop.is_set():
            case = rng.choice(["header-drip", "body-drip"])
            try:
                s = self.connect(5)
            except OSError as e:
                self.record_error("slow", case, "connect", str(e))
                self.stop.wait(1)
                continue
            start = time.monotonic()
            outcome = None
            try:
                if case == "header-drip":
                    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: soak\r\n"
                              f"Authorization: Bearer {self.args.api_key}\r\n".encode())
                    drip = lambda i: f"X-Slow-{i}: 1\r\n".encode()
                else:
                    s.sendall(self.head("POST", "/v1/completions", 400))
                    drip = lambda i: b" "
                i = 0
                while outcome is None and time.monotonic() - start < limit:
                    r, _, _ = select.select([s], [], [], 1.0)
                    if r:
                        status, _ = read_response(s, time.monotonic() + 5)
                        outcome = "408" if status == 408 else ("closed" if status == 0 else str(status))
                        break
                    if self.stop.is_set():
                        outcome = "stopped"
                        break
                    s.sendall(drip(i))
                    i += 1
            except (BrokenPipeError, ConnectionResetError):
                outcome = "closed"
            except OSError as e:
                outcome = "error: " + str(e)
            finally:
                s.close()
            if outcome is None:
                self.record_error("slow", case, "hang", f"no answer in {limit} s")
            elif outcome in ("408", "closed"):
                self.counts.add("slow", case, outcome)
            elif outcome != "stopped":
                self.record_error("slow", case, outcome)

    # --- disconnecting clients ------------------------------------------

    def disconnecting(self, cid):
        rng = random.Random(4000 + cid)
        while not self.stop.wait(self.args.hostile_pause):
            case = rng.choice(["stream-closed-mid", "stream-closed-mid", "closed-before-answer",
                               "closed-mid-body"])
            body = {"model": self.args.model, "prompt": rng.choice(PROMPTS), "temperature": 0,
                    "max_tokens": 200, "ignore_eos": True,
                    "stream": case == "stream-closed-mid"}
            raw = self.post("/v1/completions", json.dumps(body))
            try:
                s = self.connect(30)
            except OSError as e:
                self.record_error("disconnecting", case, "connect", str(e))
                continue
            try:
                if case == "closed-mid-body":
                    s.sendall(raw[: len(raw) - 20])
                    time.sleep(rng.random() * 0.5)
                    self.counts.add("disconnecting", case, "closed")
                elif case == "closed-before-answer":
                    s.sendall(raw)
                    time.sleep(rng.random() * 0.2)
                    self.counts.add("disconnecting", case, "closed")
                else:
                    s.sendall(raw)
                    want = rng.randint(1, 5)
                    got, seen, deadline = b"", 0, time.monotonic() + self.args.honest_timeout
                    while seen < want and time.monotonic() < deadline:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                        seen = got.count(b"data: ")
                    if not got.startswith(b"HTTP/1.1 200"):
                        self.record_error("disconnecting", case, "no-stream", got[:200].decode(errors="replace"))
                    elif seen >= want:
                        self.counts.add("disconnecting", case, "closed")
                    else:
                        self.record_error("disconnecting", case, "short-stream", f"{seen} events")
            except socket.timeout:
                self.record_error("disconnecting", case, "timeout")
            except OSError as e:
                self.record_error("disconnecting", case, type(e).__name__, str(e))
            finally:
                s.close()  # with unread data: a reset, as a client that crashed

    # --- sampling --------------------------------------------------------

    def sample(self, phase, t0):
        row = {"t_s": round(time.monotonic() - t0, 1), "phase": phase}
        pid = self.args.pid
        if pid:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith(("VmRSS:", "Threads:")):
                            k, v = line.split(":")
                            row["rss_kib" if k == "VmRSS" else "threads"] = int(v.split()[0])
                row["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                row["rss_kib"] = None
        try:
            m = self.metrics()
            for key, name in (("kv_pages_used", "hyc_kv_pages_used"),
                              ("prefix_cache_pages", "hyc_prefix_cache_pages"),
                              ("queued", "hyc_queue_depth"),
                              ("running", "hyc_requests_running"),
                              ("steps", "hyc_engine_steps_total")):
                row[key] = int(m.get(name, -1))
            # 500 and 503 (the soak expects a 505 for its HTTP/2.0 request line).
            row["server_5xx"] = int(sum(v for k, v in m.items() if k.startswith("hyc_requests_total")
                                        and ('code="500"' in k or 'code="503"' in k)))
        except (OSError, http.client.HTTPException, ValueError) as e:
            row["metrics_error"] = str(e)
        with self.lock:
            window = [d for (t, d) in self.honest_latency if t > time.monotonic() - self.args.sample_interval]
        row["honest_done"] = len(window)
        row["honest_p50_ms"] = round(percentile([d * 1000 for d in window], 50), 1)
        row["honest_p99_ms"] = round(percentile([d * 1000 for d in window], 99), 1)
        self.samples.append(row)
        if not self.args.quiet:
            print("sample " + " ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        return row


class Unexpected(Exception):
    def __init__(self, outcome, detail=""):
        super().__init__(f"{outcome}: {detail}")
        self.outcome, self.detail = outcome, detail


def read_response(s, deadline):
    """Reads one HTTP response from `s` (its head, then a Content-Length body
    or everything up to the close); returns (status, body text), or (0,
    reason) when no status line arrives."""
    data = b""
    while b"\r\n\r\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            return 0, "timeout"
        s.settimeout(left)
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return 0, "timeout"
        except ConnectionResetError:
            return (0, "reset") if not data.startswith(b"HTTP/") else parse_partial(data)
        if not chunk:
            return (0, "closed") if not data.startswith(b"HTTP/") else parse_partial(data)
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2 or not parts[1].isdigit():
        return 0, "garbled: " + lines[0][:100]
    status = int(parts[1])
    length = None
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    while (length is None or len(body) < length) and time.monotonic() < deadline:
        s.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        body += chunk
    return status, body.decode(errors="replace")


def parse_partial(data):
    parts = data.split(b"\r\n", 1)[0].split(b" ")
    return (int(parts[1]), "") if len(parts) > 1 and parts[1].isdigit() else (0, "closed")


def start_server(args):
    """Starts `hyc serve`; returns the process and its base URL."""
    cmd = [args.hyc, "serve", args.artifact, "--port", "0", "--api-key", args.api_key,
           "--model-name", args.model, "--request-timeout", str(args.request_timeout)]
    if args.max_body_bytes:
        cmd += ["--max-body-bytes", str(args.max_body_bytes)]
    cmd += args.server_arg
    log = open(args.server_log, "wb")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log)
    line = proc.stdout.readline().decode()
    if "listening on http://" not in line:
        proc.kill()
        raise SystemExit(f"soak: hyc serve did not start: {line!r} (see {args.server_log})")
    print(line.strip(), flush=True)
    # The rest of its stdout goes to the log; reading it keeps the pipe open.
    threading.Thread(target=lambda: [log.write(b) for b in proc.stdout], daemon=True).start()
    base = line.split("listening on ")[1].split()[0]
    return proc, base, " ".join(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hyc", default="build/compiler/hyc")
    ap.add_argument("--artifact", help="start `hyc serve ARTIFACT` (else --base)")
    ap.add_argument("--base", help="an already running server (with --pid for RSS)")
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--api-key", default="soak-key")
    ap.add_argument("--model", default="stories", help="the served model name")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="more `hyc serve` flags (repeat: --server-arg=--kv-pages --server-arg=64)")
    ap.add_argument("--server-log", default="soak-server.log")
    ap.add_argument("--request-timeout", type=float, default=10,
                    help="the server's --request-timeout (the slow clients' 408)")
    ap.add_argument("--max-body-bytes", type=int, default=0,
                    help="the server's --max-body-bytes (default: 1 MiB + 64 B x max_seq_len)")
    ap.add_argument("--duration", type=float, default=1800)
    ap.add_argument("--warmup", type=float, default=30,
                    help="seconds of the full mix before RSS is first taken")
    ap.add_argument("--sample-interval", type=float, default=10)
    ap.add_argument("--honest", type=int, default=8)
    ap.add_argument("--malformed", type=int, default=4)
    ap.add_argument("--oversized", type=int, default=2)
    ap.add_argument("--slow", type=int, default=20)
    ap.add_argument("--disconnecting", type=int, default=2)
    ap.add_argument("--honest-pause", type=float, default=0, help="seconds between an honest client's requests")
    ap.add_argument("--hostile-pause", type=float, default=0.05,
                    help="seconds between a malformed, oversized or disconnecting client's requests")
    ap.add_argument("--honest-timeout", type=float, default=120)
    ap.add_argument("--answer-timeout", type=float, default=30, help="for a refusal")
    ap.add_argument("--max-rss-growth", type=float, default=10, help="percent")
    ap.add_argument("--json", help="write the report here too")
    ap.add_argument("--quiet", action="store_true", help="no sample lines")
    args = ap.parse_args()

    proc, command = None, None
    if args.artifact:
        proc, args.base, command = start_server(args)
        args.pid = proc.pid
    elif not args.base:
        ap.error("give --artifact (start a server) or --base (use one)")
    soak = Soak(args)
    c = http.client.HTTPConnection(soak.host, soak.port, timeout=10)
    c.request("GET", "/v1/models", headers={"Authorization": "Bearer " + args.api_key})
    soak.max_seq_len = json.loads(c.getresponse().read())["data"][0]["max_model_len"]
    c.close()
    if not args.max_body_bytes:
        args.max_body_bytes = (1 << 20) + 64 * soak.max_seq_len
    t0 = time.monotonic()
    report = {"server_command": command, "base": args.base, "pid": args.pid,
              "clients": {k: getattr(args, k) for k in
                          ("honest", "malformed", "oversized", "slow", "disconnecting")}}
    report["rss_kib_launch"] = soak.sample("launch", t0).get("rss_kib")

    cases, refs, alone = soak.references()
    report["references"] = len(refs)
    report["honest_alone_ms_p50"] = round(percentile([d * 1000 for d in alone], 50), 1)
    # Streaming and not must agree with each other before any load.
    ref_disagree = [n for n in refs if "-stream" in n and n.replace("-stream", "") in refs
                    and refs[n][0][:2] != refs[n.replace("-stream", "")][0][:2]]
    print(f"references: {len(refs)} cases alone, p50 {report['honest_alone_ms_p50']} ms; "
          f"stream vs not disagree: {ref_disagree or 'none'}", flush=True)

    malformed, oversized = soak.malformed_cases(), soak.oversized_cases()
    threads = []
    for kind, n, target, extra in (("honest", args.honest, soak.honest, (cases, refs)),
                                   ("malformed", args.malformed, soak.run_cases, ("malformed", malformed)),
                                   ("oversized", args.oversized, soak.oversized, (oversized,)),
                                   ("slow", args.slow, soak.slow, ()),
                                   ("disconnecting", args.disconnecting, soak.disconnecting, ())):
        for i in range(n):
            a = (kind, i, *extra[1:]) if kind == "malformed" else (i, *extra)
            threads.append(threading.Thread(target=target, args=a, name=f"{kind}-{i}", daemon=True))
    for t in threads:
        t.start()

    crashed = False

    def alive():
        return proc is None or proc.poll() is None

    # Warm-up: the full mix, so that thread stacks and allocator arenas are
    # in place before the RSS baseline; its counts are kept.
    warm_end = time.monotonic() + args.warmup
    while time.monotonic() < warm_end and alive():
        time.sleep(min(args.sample_interval, max(warm_end - time.monotonic(), 0)))
        soak.sample("warmup", t0)
    start_row = soak.sample("start", t0)
    load_t0 = time.monotonic()
    end = load_t0 + args.duration
    while time.monotonic() < end and alive():
        time.sleep(min(args.sample_interval, max(end - time.monotonic(), 0)))
        soak.sample("load", t0)
    load_s = time.monotonic() - load_t0
    crashed = not alive()
    soak.stop.set()
    for t in threads:
        t.join(timeout=max(args.honest_timeout, args.request_timeout + 15))
    stuck = [t.name for t in threads if t.is_alive()]

    # Drain: whatever the cut-off clients left running ends and frees its pages.
    drained = None
    drain_end = time.monotonic() + 60
    while not crashed and time.monotonic() < drain_end:
        drained = soak.sample("drain", t0)
        if drained.get("running") == 0 and drained.get("queued") == 0 and drained.get("kv_pages_used") == 0:
            break
        time.sleep(1)
    end_row = drained or {}

    exit_status = None
    if proc is not None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                exit_status = "did not stop in 30 s after SIGTERM (killed)"
        code = proc.returncode
        if exit_status is None:
            exit_status = (f"killed by signal {-code}" if code < 0 else f"exit {code}")
        crashed = crashed or code != 0

    counts = soak.counts.snapshot()
    by_kind = {}
    for kind, by_case in counts.items():
        total, bad = 0, 0
        outcomes = {}
        for case, o in by_case.items():
            for outcome, n in o.items():
                total += n
                outcomes[outcome] = outcomes.get(outcome, 0) + n
        by_kind[kind] = {"requests": total, "outcomes": outcomes}
    errors_by_class = {}
    expected_outcomes = {"honest": {"ok", "mismatch"},  # mismatches: counted apart
                         "slow": {"408", "closed"}, "disconnecting": {"closed"}}
    mal_expected = {n: {str(s) for s in e} for n, _, e in malformed + oversized}
    for kind, by_case in counts.items():
        for case, o in by_case.items():
            good = expected_outcomes.get(kind) or mal_expected.get(case, set())
            for outcome, n in o.items():
                if outcome not in good:
                    errors_by_class[f"{kind}/{case}/{outcome}"] = n
    rss0, rss1 = start_row.get("rss_kib"), end_row.get("rss_kib")
    growth = round(100 * (rss1 - rss0) / rss0, 2) if rss0 and rss1 else None
    lat = [d * 1000 for (t, d) in soak.honest_latency]
    report.update({
        "warmup_s": args.warmup, "duration_s": round(load_s, 1),
        "requests": by_kind, "requests_by_case": counts, "errors_by_class": errors_by_class,
        "mismatches": len(soak.mismatches),
        "honest_ms_p50": round(percentile(lat, 50), 1), "honest_ms_p99": round(percentile(lat, 99), 1),
        "honest_stalled_windows": sum(1 for r in soak.samples
                                      if r["phase"] == "load" and args.honest and r["honest_done"] == 0),
        "kv_pages_start": start_row.get("kv_pages_used"), "kv_pages_end": end_row.get("kv_pages_used"),
        "prefix_cache_pages_end": end_row.get("prefix_cache_pages"),
        "rss_kib_start": rss0, "rss_kib_end": rss1, "rss_growth_pct": growth,
        "fds_start": start_row.get("fds"), "fds_end": end_row.get("fds"),
        "threads_start": start_row.get("threads"), "threads_end": end_row.get("threads"),
        "server_5xx": end_row.get("server_5xx"),
        "stuck_client_threads": stuck, "server_exit": exit_status,
        "first_errors": soak.errors[:10],
        "first_mismatches": [{"case": n, "expected": w, "got": g} for n, w, g in soak.mismatches[:5]],
        "samples": soak.samples,
    })
    failures = []
    if crashed:
        failures.append(f"server: {exit_status or 'died'}")
    if soak.mismatches:
        failures.append(f"{len(soak.mismatches)} mismatches")
    if ref_disagree:
        failures.append(f"references: stream and not disagree on {ref_disagree}")
    if errors_by_class:
        failures.append(f"{sum(errors_by_class.values())} unexpected answers")
    if end_row.get("kv_pages_used") != 0:
        failures.append(f"KV pages in use after the drain: {end_row.get('kv_pages_used')}")
    if growth is None and args.pid:
        failures.append("no RSS reading")
    elif growth is not None and growth >= args.max_rss_growth:
        failures.append(f"RSS grew {growth}%")
    if report["honest_stalled_windows"]:
        failures.append(f"{report['honest_stalled_windows']} sample windows without an honest answer")
    if stuck:
        failures.append(f"client threads stuck: {stuck}")
    if end_row.get("server_5xx"):
        failures.append(f"server counted {end_row['server_5xx']} 5xx answers")
    report["failures"] = failures
    report["passed"] = not failures

    print(f"\nsoak: {report['duration_s']} s of load (+{args.warmup} s warm-up) against {args.base}")
    for kind, v in by_kind.items():
        print(f"  {kind:14s} {v['requests']:7d} requests  {v['outcomes']}")
    print(f"  errors by class: {errors_by_class or 'none'}")
    print(f"  mismatches: {len(soak.mismatches)}")
    for n, w, g in soak.mismatches[:5]:
        print(f"    {n}: expected {w!r}\n    {' ' * len(n)}  got      {g!r}")
    for e in soak.errors[:10]:
        print(f"    error: {e}")
    print(f"  honest latency p50 / p99: {report['honest_ms_p50']} / {report['honest_ms_p99']} ms "
          f"(alone p50 {report['honest_alone_ms_p50']} ms); stalled windows: {report['honest_stalled_windows']}")
    print(f"  KV pages in use: start {report['kv_pages_start']}, end {report['kv_pages_end']} "
          f"(prefix cache holds {report['prefix_cache_pages_end']})")
    print(f"  RSS: start {rss0} KiB, end {rss1} KiB, growth {growth}% "
          f"(at launch {report['rss_kib_launch']} KiB); fds {report['fds_start']} -> {report['fds_end']}, "
          f"threads {report['threads_start']} -> {report['threads_end']}")
    print(f"  server: {exit_status or 'not ours (left running)'}")
    print("PASSED" if not failures else "FAILED: " + "; ".join(failures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
