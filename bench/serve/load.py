#!/usr/bin/env python3
"""Load generator for `hyc serve` (in the manner of SGLang's bench_serving).

N concurrent clients send streaming /v1/completions requests of random
token-id prompts (fixed or uniformly random input / output lengths, EOS
ignored so every request generates its full length), optionally paced to a
request rate; reports output throughput and TTFT / TPOT percentiles.

  python3 bench/serve/load.py --base http://127.0.0.1:8000 --model m \
      --clients 4 --requests 32 --input 128 --output 64 [--rate R] [--json]
"""
import argparse
import json
import random
import statistics
import threading
import time
import urllib.request


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def one_request(args, rng, vocab):
    n_in = rng.randint(args.input // 2, args.input) if args.random_lengths else args.input
    n_out = rng.randint(args.output // 2, args.output) if args.random_lengths else args.output
    # --shared-prefix: every request starts with the same tokens (a system
    # prompt), which the server's prefix cache can reuse.
    shared = [random.Random(args.seed).randrange(3, vocab) for _ in range(args.shared_prefix)]
    prompt = shared + [rng.randrange(3, vocab) for _ in range(max(1, n_in - len(shared)))]
    body = {"model": args.model, "prompt": prompt,
            "max_tokens": n_out, "temperature": 0, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    req = urllib.request.Request(args.base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + args.api_key})
    t0 = time.perf_counter()
    first = last = None
    tokens = None  # from the final chunk's usage: a chunk may carry several tokens
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if "error" in event:
                raise RuntimeError(event["error"]["message"])
            now = time.perf_counter()
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
            if event["choices"] and event["choices"][0].get("finish_reason") is None:
                first = first or now
                last = now
    if tokens is None:
        raise RuntimeError("the stream ended without usage (stream_options.include_usage)")
    ttft = (first - t0) if first else float("nan")
    tpot = (last - first) / (tokens - 1) if first and tokens > 1 else float("nan")
    return tokens, ttft, tpot


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="http://127.0.0.1:8000")
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", default="")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--input", type=int, default=128)
    ap.add_argument("--output", type=int, default=64)
    ap.add_argument("--random-lengths", action="store_true",
                    help="lengths uniform in [L/2, L] instead of fixed")
    ap.add_argument("--rate", type=float, default=0,
                    help="requests per second over all clients (0: back to back)")
    ap.add_argument("--shared-prefix", type=int, default=0,
                    help="tokens every prompt starts with (a system prompt)")
    ap.add_argument("--vocab", type=int, default=0, help="default: the server's /v1/models")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    vocab = args.vocab or 256  # token ids below every synthetic vocabulary
    results, errors, lock = [], [], threading.Lock()
    next_index = [0]
    start = time.perf_counter()

    def client(cid):
        rng = random.Random(args.seed * 1000 + cid)
        while True:
            with lock:
                i = next_index[0]
                if i >= args.requests:
                    return
                next_index[0] += 1
            if args.rate > 0:  # request i leaves no earlier than i / rate
                delay = start + i / args.rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            try:
                r = one_request(args, rng, vocab)
                with lock:
                    results.append(r)
            except Exception as e:  # counted and reported, not fatal
                with lock:
                    errors.append(str(e))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    out_tokens = sum(r[0] for r in results)
    ttft = [r[1] * 1000 for r in results]
    tpot = [r[2] * 1000 for r in results if r[2] == r[2]]
    report = {"clients": args.clients, "requests": len(results), "errors": len(errors),
              "wall_s": round(wall, 2), "output_tok_s": round(out_tokens / wall, 1),
              "req_s": round(len(results) / wall, 2),
              "ttft_ms_p50": round(percentile(ttft, 50), 1), "ttft_ms_p99": round(percentile(ttft, 99), 1),
              "tpot_ms_p50": round(percentile(tpot, 50), 2), "tpot_ms_p99": round(percentile(tpot, 99), 2)}
    if args.json:
        print(json.dumps(report))
    else:
        print(" ".join(f"{k}={v}" for k, v in report.items()))
        for e in errors[:5]:
            print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
