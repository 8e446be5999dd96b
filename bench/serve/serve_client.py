"""HTTP side of bench_serve.py: one streaming OpenAI-style request, timed.

Everything read from the server is treated as hostile: bodies, lines and
event counts are bounded, every socket read has a timeout, and a watchdog
closes the connection at the request's deadline so a server that trickles
bytes cannot hold a client past it. Python standard library only.
"""
import http.client
import json
import socket
import threading
import time
import urllib.parse

MAX_LINE_BYTES = 1 << 20          # one SSE line (one JSON event)
MAX_BODY_BYTES = 8 << 20          # a non-streamed answer or an error body
MAX_STREAM_BYTES = 256 << 20      # everything one stream may send


class ServerError(Exception):
    """The server answered, but not as an OpenAI-compatible server would."""


class Endpoint:
    """Where requests go: base URL (with or without /v1), key, timeouts."""

    def __init__(self, url, api_key="", read_timeout=120.0):
        parsed = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if parsed.scheme not in ("http", "https"):
            raise ValueError(f"URL: expected http:// or https://, found {url!r}")
        if not parsed.hostname:
            raise ValueError(f"URL: no host in {url!r}")
        self.scheme = parsed.scheme
        self.host = parsed.hostname
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        # Accept both http://h:p and http://h:p/v1 (what OpenAI clients take).
        prefix = parsed.path.rstrip("/")
        self.prefix = prefix[: -len("/v1")] if prefix.endswith("/v1") else prefix
        self.api_key = api_key
        self.read_timeout = read_timeout

    def url(self, path):
        return f"{self.scheme}://{self.host}:{self.port}{self.prefix}{path}"

    def connect(self, timeout):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def headers(self):
        h = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        return h


def _read_bounded(resp, limit):
    data = resp.read(limit + 1)
    if len(data) > limit:
        raise ServerError(f"answer body over {limit} bytes")
    return data


def _error_text(status, body):
    """The server's own message for a non-200 answer, else the raw start."""
    try:
        j = json.loads(body)
        err = j.get("error") if isinstance(j, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return f"HTTP {status}: {err['message'][:500]}"
        if isinstance(err, str):
            return f"HTTP {status}: {err[:500]}"
        if isinstance(j, dict) and isinstance(j.get("message"), str):
            return f"HTTP {status}: {j['message'][:500]}"
    except ValueError:
        pass
    return f"HTTP {status}: {body[:300].decode('utf-8', 'replace')!r}"


def get_json(ep, path, timeout=30.0):
    """GET ep+path and parse JSON; raises ServerError naming what came back."""
    conn = ep.connect(timeout)
    try:
        conn.request("GET", ep.prefix + path, headers=ep.headers())
        resp = conn.getresponse()
        body = _read_bounded(resp, MAX_BODY_BYTES)
        if resp.status != 200:
            raise ServerError(_error_text(resp.status, body))
        try:
            return json.loads(body)
        except ValueError as e:
            raise ServerError(f"GET {path}: expected JSON, found {body[:80]!r} ({e})")
    finally:
        conn.close()


class Result:
    """One request as the client saw it. Times are time.perf_counter()."""

    __slots__ = ("ok", "error", "start", "end", "output_times", "prompt_tokens",
                 "completion_tokens", "tokens_from", "finish_reason", "streamed",
                 "events", "text_chars")

    def __init__(self):
        self.ok = False
        self.error = None
        self.start = self.end = 0.0
        self.output_times = []    # arrival time of each event carrying output
        self.prompt_tokens = None
        self.completion_tokens = None
        self.tokens_from = None   # "usage" or "chunks"
        self.finish_reason = None
        self.streamed = False     # the answer was text/event-stream
        self.events = 0
        self.text_chars = 0


def _choice_text(choice):
    """The output text of one choice of a completions or chat event."""
    if not isinstance(choice, dict):
        raise ServerError(f"choices[0]: expected an object, found {type(choice).__name__}")
    text = choice.get("text")
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else None
    message = choice.get("message") if isinstance(choice.get("message"), dict) else None
    parts = [text] if isinstance(text, str) else []
    for d in (delta, message):
        if d:
            # Reasoning models stream their thinking in a separate field; it
            # is generated output all the same.
            for key in ("content", "reasoning_content", "reasoning"):
                if isinstance(d.get(key), str):
                    parts.append(d[key])
    return "".join(parts)


def _take_event(res, event, now):
    """Folds one parsed JSON event (a stream chunk or a whole answer) into res."""
    if not isinstance(event, dict):
        raise ServerError(f"expected a JSON object per event, found {type(event).__name__}")
    if "error" in event:
        err = event["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        raise ServerError(f"error in the stream: {str(msg)[:500]}")
    res.events += 1
    usage = event.get("usage")
    if isinstance(usage, dict):
        # Servers that report usage on every chunk: the last one is the total.
        if isinstance(usage.get("prompt_tokens"), int):
            res.prompt_tokens = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            res.completion_tokens = usage["completion_tokens"]
    choices = event.get("choices")
    if not isinstance(choices, list) or not choices:
        return
    choice = choices[0]
    text = _choice_text(choice)
    finish = choice.get("finish_reason")
    if finish is not None:
        res.finish_reason = str(finish)[:64]
    # An event carries output when it has text, or when it is the first
    # event with a choice (hyc sends its first token's event even when the
    # token's text is empty, e.g. half of a UTF-8 character). A finish-only
    # event with no text carries nothing.
    if text or (not res.output_times and finish is None):
        res.output_times.append(now)
        res.text_chars += len(text)


def stream_request(ep, path, body, timeout):
    """POSTs body (stream: true expected) and times every event. Never raises:
    a failure comes back as Result.ok False with the reason in Result.error."""
    res = Result()
    data = json.dumps(body).encode()
    conn = ep.connect(min(ep.read_timeout, timeout))
    # The watchdog bounds the whole request, however slowly bytes arrive.
    expired = threading.Event()

    def expire():
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    res.start = time.perf_counter()
    watchdog.start()
    try:
        conn.request("POST", ep.prefix + path, body=data, headers=ep.headers())
        resp = conn.getresponse()
        if resp.status != 200:
            raise ServerError(_error_text(resp.status, _read_bounded(resp, MAX_BODY_BYTES)))
        ctype = (resp.getheader("Content-Type") or "").lower()
        if "text/event-stream" in ctype:
            res.streamed = True
            _read_stream(resp, res)
        else:
            # A server that ignores "stream": one JSON answer, one event.
            answer = _read_bounded(resp, MAX_BODY_BYTES)
            try:
                event = json.loads(answer)
            except ValueError:
                raise ServerError(f"expected text/event-stream or JSON, found "
                                  f"{ctype or 'no Content-Type'}: {answer[:80]!r}")
            _take_event(res, event, time.perf_counter())
        res.end = time.perf_counter()
        if not res.output_times:
            raise ServerError("the answer carried no output")
        if res.completion_tokens is not None:
            res.tokens_from = "usage"
        else:
            res.completion_tokens = len(res.output_times)
            res.tokens_from = "chunks"
        res.ok = True
    except Exception as e:  # every failure is reported, none is fatal
        res.end = time.perf_counter()
        if expired.is_set():
            res.error = f"timed out after {timeout:g} s"
        elif isinstance(e, (socket.timeout, TimeoutError)):
            res.error = f"no bytes for {ep.read_timeout:g} s (read timeout)"
        elif isinstance(e, ServerError):
            res.error = str(e)
        else:
            res.error = f"{type(e).__name__}: {e}"[:500]
    finally:
        watchdog.cancel()
        conn.close()
    return res


def _read_stream(resp, res):
    """Reads SSE events until [DONE] or the end of the stream."""
    total = 0
    while True:
        line = resp.readline(MAX_LINE_BYTES + 1)
        now = time.perf_counter()
        if not line:
            return  # the server closed the stream (some never send [DONE])
        total += len(line)
        if len(line) > MAX_LINE_BYTES:
            raise ServerError(f"an event line over {MAX_LINE_BYTES} bytes")
        if total > MAX_STREAM_BYTES:
            raise ServerError(f"the stream sent over {MAX_STREAM_BYTES} bytes")
        line = line.strip()
        # Blank lines end events; ':' comments are keep-alives; event:/id:/
        # retry: lines name or number events we do not need.
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return
        try:
            event = json.loads(payload)
        except ValueError:
            raise ServerError(f"a stream event is not JSON: {payload[:80]!r}")
        _take_event(res, event, now)
