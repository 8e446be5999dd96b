#!/usr/bin/env python3
"""Serving benchmark for any OpenAI-compatible endpoint (hyc serve, vLLM,
SGLang, llama-server): TTFT, TPOT, ITL and throughput over a concurrency sweep.

  python3 bench/serve/bench_serve.py http://127.0.0.1:8000 \\
      [--lengths 128/128,1024/128,sharegpt] [--concurrency 1,4,16,64] \\
      [--num-requests N | --duration S] [--json out.json]

For every length spec and every concurrency level C, C clients send
streaming requests back to back (or paced by --rate), each asking for
max_tokens = its output length with EOS ignored, and the level reports
request and token throughput and TTFT / TPOT / ITL / E2E mean, p50, p99.
Length specs and the ShareGPT-like mix: serve_workload.py; definitions of
the figures: serve_stats.py; docs/serving.md#load-testing.

Before the sweep, probes find what the server takes: token-id prompts
(else random-word text prompts, whose length is fitted to and then read
back from the server's usage.prompt_tokens), usage in the stream, one
event per token. Per-server request fields go in --extra-body JSON
(e.g. llama-server's '{"n_predict": 128}'); --no-ignore-eos drops
ignore_eos for a server that refuses it. Failed requests are counted and listed,
never dropped; the exit status is 1 when any failed, 2 when the setup
(probe, arguments) failed. Python standard library only.
"""
import argparse
import datetime
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client  # noqa: E402
import serve_stats  # noqa: E402
import serve_workload  # noqa: E402

DEFAULT_MAX_LEN_UNKNOWN = 4096
PROBE_TOKENS = 8
STREAM_PROBES = 3  # prompts tried before calling a server's streaming batched


class SetupError(Exception):
    pass


def int_list(limit):
    """An argparse type: positive integers up to limit, separated by commas."""
    def parse(s):
        try:
            v = [int(x) for x in s.split(",") if x]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected integers separated by commas, found {s!r}")
        if not v or any(x < 1 or x > limit for x in v):
            raise argparse.ArgumentTypeError(f"expected values in 1..{limit}, found {s!r}")
        return v
    return parse


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Presets: " + ", ".join(serve_workload.PRESETS) + "; sharegpt: "
               "log-normal lengths, input mean 161 / output mean 338 tokens (serve_workload.py).")
    ap.add_argument("url", nargs="?", help="base URL, e.g. http://127.0.0.1:8000 (or .../v1)")
    ap.add_argument("--model", help="model id (default: the first of /v1/models)")
    ap.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", ""),
                    help="sent as 'Authorization: Bearer KEY' (default: $OPENAI_API_KEY)")
    ap.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    ap.add_argument("--lengths", default="128/128",
                    help="comma-separated IN/OUT token lengths or 'sharegpt' (default 128/128)")
    ap.add_argument("--range-ratio", type=float, default=1.0,
                    help="IN/OUT lengths uniform in [ratio*L, L] (default 1: fixed)")
    ap.add_argument("--concurrency", type=int_list(4096), default=[1, 4, 16, 64],
                    help="levels to sweep (default 1,4,16,64)")
    ap.add_argument("--num-requests", type=int_list(1 << 20), default=None,
                    help="requests per level: one count, or one per --concurrency level "
                         "(default: 4 x concurrency, at least 8)")
    ap.add_argument("--duration", type=float, default=0,
                    help="seconds per level to keep sending (instead of --num-requests); "
                         "requests in flight then finish")
    ap.add_argument("--rate", type=float, default=0,
                    help="requests per second over all clients; request i leaves no "
                         "earlier than i / rate (0: back to back)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="requests sent one at a time before each length spec, not counted")
    ap.add_argument("--prompt", choices=("auto", "token-ids", "text"), default="auto",
                    help="auto: token ids when the server takes them, else text")
    ap.add_argument("--token-ids", default="3:256",
                    help="LO:HI, random prompt ids in [LO, HI) (default 3:256: below "
                         "every vocabulary, above the usual special ids)")
    ap.add_argument("--shared-prefix", type=int, default=0,
                    help="tokens every prompt starts with (a system prompt for the prefix cache)")
    ap.add_argument("--max-model-len", type=int, default=0,
                    help="context length (default: /v1/models' max_model_len, else "
                         f"{DEFAULT_MAX_LEN_UNKNOWN}); overrides the server's")
    ap.add_argument("--no-ignore-eos", action="store_true",
                    help="do not send ignore_eos (for servers that refuse the field)")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--extra-body", default="{}",
                    help="JSON object merged into every request body (per-server fields)")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds one request may take in all (default 600)")
    ap.add_argument("--read-timeout", type=float, default=600,
                    help="seconds without a byte before a request fails (default 600: "
                         "a request queued behind full batches may wait long for its "
                         "first byte)")
    ap.add_argument("--seed", type=int, default=0, help="seeds the request lengths")
    ap.add_argument("--prompt-seed", type=int, default=None,
                    help="seeds the prompts' content (default: a fresh one each run, so "
                         "a prefix cache filled by an earlier run finds nothing)")
    ap.add_argument("--json", metavar="FILE", help="write the full report (every request) here")
    ap.add_argument("--dry-run", type=int, metavar="N", default=0,
                    help="print N sampled (input, output) lengths per spec as JSON and exit")
    args = ap.parse_args(argv)
    try:
        args.extra_body = json.loads(args.extra_body)
    except ValueError as e:
        ap.error(f"--extra-body: expected a JSON object, found {args.extra_body!r} ({e})")
    if not isinstance(args.extra_body, dict):
        ap.error(f"--extra-body: expected a JSON object, found {type(args.extra_body).__name__}")
    try:
        args.specs = [s.strip() for s in args.lengths.split(",") if s.strip()]
        for s in args.specs:
            serve_workload.parse_spec(s)
        lo, hi = (int(x) for x in args.token_ids.split(":"))
        if not 0 <= lo < hi:
            raise ValueError(f"--token-ids: expected 0 <= LO < HI, found {args.token_ids!r}")
        args.id_lo, args.id_hi = lo, hi
    except ValueError as e:
        ap.error(str(e))
    if not 0 < args.range_ratio <= 1:
        ap.error(f"--range-ratio: expected a value in (0, 1], found {args.range_ratio}")
    if args.num_requests and args.duration:
        ap.error("--num-requests and --duration: give one")
    if args.num_requests and len(args.num_requests) not in (1, len(args.concurrency)):
        ap.error(f"--num-requests: expected one count or {len(args.concurrency)} (one per "
                 f"--concurrency level), found {len(args.num_requests)}")
    if args.duration < 0 or args.rate < 0 or args.shared_prefix < 0:
        ap.error("--duration, --rate and --shared-prefix must be >= 0")
    if args.timeout <= 0 or args.read_timeout <= 0:
        ap.error("--timeout and --read-timeout must be > 0")
    if args.max_model_len and args.max_model_len < 8:
        ap.error(f"--max-model-len: expected at least 8, found {args.max_model_len}")
    if args.prompt_seed is None:
        args.prompt_seed = int.from_bytes(os.urandom(4), "little")
    if not args.url and not args.dry_run:
        ap.error("URL is required (except with --dry-run)")
    if args.endpoint == "chat" and args.prompt == "token-ids":
        ap.error("--endpoint chat takes text prompts only")
    return args


class Bench:
    """One server: what the probes found, and how to build its requests."""

    def __init__(self, args):
        self.args = args
        self.ep = serve_client.Endpoint(args.url, args.api_key, args.read_timeout)
        self.path = "/v1/chat/completions" if args.endpoint == "chat" else "/v1/completions"
        self.notes = []
        self.model = args.model
        self.max_len = args.max_model_len or None
        self.max_len_from = "--max-model-len" if args.max_model_len else None
        self.prompts = None
        self.per_token_streaming = None

    def note(self, msg):
        self.notes.append(msg)
        print("note:", msg, file=sys.stderr)

    def body(self, prompt, max_tokens):
        a = self.args
        b = {"model": self.model, "max_tokens": max_tokens, "stream": True,
             "stream_options": {"include_usage": True}, "temperature": a.temperature}
        if a.endpoint == "chat":
            b["messages"] = [{"role": "user", "content": prompt}]
        else:
            b["prompt"] = prompt
        if not a.no_ignore_eos:
            b["ignore_eos"] = True
        b.update(a.extra_body)
        return b

    def send(self, prompt, max_tokens):
        return serve_client.stream_request(self.ep, self.path, self.body(prompt, max_tokens),
                                           self.args.timeout)

    def discover(self):
        try:
            models = serve_client.get_json(self.ep, "/v1/models")
        except (OSError, http.client.HTTPException) as e:
            # No answer at all (refused, reset, timed out): nothing to measure.
            raise SetupError(f"cannot reach {self.ep.url('/v1/models')}: {e}")
        except serve_client.ServerError as e:
            if not self.model:
                raise SetupError(f"GET /v1/models failed ({e}); name the model with --model")
            self.note(f"GET /v1/models failed ({e}); using --model {self.model}")
            models = {}
        data = models.get("data") if isinstance(models, dict) else None
        entry = None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            entry = next((m for m in data if isinstance(m, dict) and m.get("id") == self.model),
                         data[0])
            if not self.model:
                if not isinstance(entry.get("id"), str):
                    raise SetupError("/v1/models: the first model has no string id")
                self.model = entry["id"]
        elif not self.model:
            raise SetupError(f"/v1/models: expected {{'data': [{{'id': ...}}]}}, found "
                             f"{json.dumps(models)[:200]}")
        if entry and not self.max_len:
            for key in ("max_model_len", "context_length"):
                v = entry.get(key)
                if isinstance(v, int) and v >= 8:
                    self.max_len, self.max_len_from = v, f"/v1/models {key}"
                    break
        if not self.max_len:
            self.max_len, self.max_len_from = DEFAULT_MAX_LEN_UNKNOWN, "assumed"
            self.note(f"the server reports no max_model_len; assuming {self.max_len} "
                      "(set --max-model-len)")

    def _probe(self, prompt):
        r = self.send(prompt, PROBE_TOKENS)
        if not r.ok:
            return r, r.error
        return r, None

    def probe(self):
        """Finds the prompt form the server takes and checks its streaming."""
        a = self.args
        r = None
        if a.prompt in ("auto", "token-ids") and a.endpoint == "completions":
            self.prompts = serve_workload.PromptMaker("token_ids", a.prompt_seed, a.id_lo, a.id_hi,
                                                      a.shared_prefix)
            r, err = self._probe(self.prompts.make(16, "probe"))
            if err and a.prompt == "token-ids":
                raise SetupError(f"a token-id prompt failed: {err}")
            if err:
                self.note(f"token-id prompts refused ({err}); using text prompts")
                r = None
            elif r.prompt_tokens is not None and r.prompt_tokens != 16:
                self.note(f"a 16-token id prompt counted as {r.prompt_tokens} prompt tokens")
        if r is None:
            self.prompts = serve_workload.PromptMaker("text", a.prompt_seed,
                                                      shared_prefix=a.shared_prefix)
            rng = random.Random(a.prompt_seed)
            ra, err = self._probe(self.prompts.words(16, rng))
            if err:
                raise SetupError(f"a text prompt failed: {err}")
            rb, err = self._probe(self.prompts.words(80, rng))
            if err:
                raise SetupError(f"a text prompt failed: {err}")
            if ra.prompt_tokens is None or rb.prompt_tokens is None:
                self.prompts.tokens_per_word = 1.3
                self.note("the server reports no usage.prompt_tokens: text prompt lengths "
                          "are estimates (1.3 tokens a word) and input token counts are "
                          "the wanted lengths")
            else:
                self.prompts.calibrate(16, ra.prompt_tokens, 80, rb.prompt_tokens)
            r = rb
        if not r.streamed:
            self.note("the server answered a stream: true request with one JSON body: "
                      "TTFT equals E2E and there is no ITL")
        if r.tokens_from != "usage":
            self.note("no usage in the stream (stream_options.include_usage): output "
                      "tokens are counted as events carrying text")
        n = r.completion_tokens
        # A server that streams per token still sends no event for a token
        # whose text is empty (an EOS generated under ignore_eos, a byte that
        # ends no UTF-8 character yet), so one probe with fewer events than
        # tokens proves nothing: per-token streaming is shown by any of a few
        # probes with as many events as tokens; one that batches tokens never
        # shows it.
        for extra in range(STREAM_PROBES - 1):
            if n <= 1 or len(r.output_times) >= n:
                break
            prompt = (self.prompts.make(16, f"probe/{extra + 1}")
                      if self.prompts.mode == "token_ids" else
                      self.prompts.words(16, random.Random(f"{a.prompt_seed}/{extra + 1}")))
            again, err = self._probe(prompt)
            if err:
                raise SetupError(f"a probe that had succeeded failed when repeated: {err}")
            r, n = again, again.completion_tokens
        self.per_token_streaming = len(r.output_times) >= n and n > 1
        if n > 1 and len(r.output_times) <= 1:
            self.note(f"the server sent {n} tokens in one event: it does not stream per "
                      "token, so TTFT is the whole generation and ITL is not measured")
        elif n > 1 and len(r.output_times) < n:
            self.note(f"{n} tokens came in {len(r.output_times)} events: ITL is per event")
        if n != PROBE_TOKENS:
            self.note(f"asked for {PROBE_TOKENS} tokens, got {n} (finish_reason "
                      f"{r.finish_reason}): EOS may not be ignored "
                      "(--extra-body for this server's field)")

    def run_level(self, spec, level, concurrency):
        a = self.args
        if a.num_requests:
            planned = a.num_requests[level if len(a.num_requests) > 1 else 0]
        else:
            planned = max(8, 4 * concurrency)
        results, lock = [], threading.Lock()
        next_index = [0]
        t0 = time.perf_counter()
        stop_at = t0 + a.duration if a.duration else None

        def client():
            while True:
                with lock:
                    i = next_index[0]
                    if stop_at is None and i >= planned:
                        return
                    if stop_at is not None and time.perf_counter() >= stop_at:
                        return
                    next_index[0] += 1
                if a.rate > 0:
                    delay = t0 + i / a.rate - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                n_in, n_out = serve_workload.sample_length(spec, i, a.seed, self.max_len,
                                                           a.range_ratio)
                # Prompts differ between levels (a level repeated in the list
                # too) so no level reuses another's cached prefixes; lengths
                # repeat so levels share a workload.
                r = self.send(self.prompts.make(n_in, f"{spec}/{level}/{i}"), n_out)
                with lock:
                    results.append((i, n_in, n_out, r))

        threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        t_end = max((r.end for _, _, _, r in results), default=time.perf_counter())
        return serve_stats.summarize(spec, concurrency, None if stop_at else planned,
                                     results, t0, t_end)

    def warm(self, spec):
        for i in range(self.args.warmup):
            n_in, n_out = serve_workload.sample_length(spec, i, self.args.seed + 1, self.max_len,
                                                       self.args.range_ratio)
            r = self.send(self.prompts.make(n_in, f"warmup/{spec}/{i}"), n_out)
            if not r.ok:
                self.note(f"warm-up request for {spec} failed: {r.error}")


def dry_run(args):
    max_len = args.max_model_len or DEFAULT_MAX_LEN_UNKNOWN
    out = {}
    for spec in args.specs:
        pairs = [serve_workload.sample_length(spec, i, args.seed, max_len, args.range_ratio)
                 for i in range(args.dry_run)]
        out[spec] = {"max_model_len": max_len, "lengths": pairs}
    print(json.dumps(out))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.dry_run:
        return dry_run(args)
    bench = Bench(args)
    try:
        bench.discover()
        bench.probe()
    except (SetupError, ValueError) as e:
        print(f"bench_serve: {e}", file=sys.stderr)
        return 2
    print(f"bench_serve: {args.url} model {bench.model}, /v1/{args.endpoint}, "
          f"{bench.prompts.mode} prompts, max_model_len {bench.max_len} ({bench.max_len_from})",
          file=sys.stderr)
    report = {
        "tool": "bench_serve", "version": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "url": args.url, "model": bench.model, "endpoint": args.endpoint,
        "prompt_mode": bench.prompts.mode, "max_model_len": bench.max_len,
        "max_model_len_from": bench.max_len_from, "ignore_eos": not args.no_ignore_eos,
        "extra_body": args.extra_body, "seed": args.seed, "prompt_seed": args.prompt_seed,
        "rate": args.rate,
        "per_token_streaming": bench.per_token_streaming, "notes": bench.notes,
        "levels": [], "skipped": [],
    }
    for spec in args.specs:
        fixed = serve_workload.parse_spec(spec)
        if fixed and sum(fixed) > bench.max_len:
            reason = f"{spec}: {sum(fixed)} tokens exceed max_model_len {bench.max_len}"
            bench.note("skipped " + reason)
            report["skipped"].append({"lengths": spec, "reason": reason})
            continue
        bench.warm(spec)
        for n, c in enumerate(args.concurrency):
            level = bench.run_level(spec, n, c)
            report["levels"].append(level)
            print(f"  {spec} concurrency {c}: {level['completed']} ok, {level['failed']} failed, "
                  f"{level['output_throughput']:.1f} output tok/s", file=sys.stderr)
    print(serve_stats.table(report["levels"]))
    failed = sum(L["failed"] for L in report["levels"])
    for L in report["levels"]:
        for msg, n in L["errors"].items():
            print(f"failed: {L['lengths']} c={L['concurrency']}: {n} x {msg}")
        if L["output_len_mismatch"]:
            print(f"note: {L['lengths']} c={L['concurrency']}: {L['output_len_mismatch']} "
                  "requests generated other than max_tokens")
    for n in bench.notes:
        print("note:", n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
