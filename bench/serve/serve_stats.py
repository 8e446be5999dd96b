"""Figures of bench_serve.py: one concurrency level's summary, and its table.

Definitions (those of vLLM's and SGLang's serving benchmarks):
  TTFT  send -> first event carrying output (an event with text, or the
        first event with a choice: hyc sends a token's event even when its
        text is empty, and so does a chat server's role-only first chunk)
  E2E   send -> end of the stream
  TPOT  (E2E - TTFT) / (output tokens - 1), per request with >= 2 tokens
  ITL   every gap between consecutive events carrying output, all requests
        pooled (a server that packs several tokens per event shows longer,
        fewer gaps: tokens_per_event says how many it packed on average)
  throughputs: counts over the level's wall time, from its first send to
        its last request's end; input and output tokens are the server's
        usage counts (output counted per event where it reports none)
Percentiles interpolate linearly between order statistics.
"""
import math


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(math.floor(k))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def distribution(values_s):
    """mean / p50 / p90 / p99 / max in ms of values in seconds (None if empty)."""
    ms = [v * 1000.0 for v in values_s]
    if not ms:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    r = lambda v: round(v, 3)
    return {"n": len(ms), "mean": r(sum(ms) / len(ms)), "p50": r(percentile(ms, 50)),
            "p90": r(percentile(ms, 90)), "p99": r(percentile(ms, 99)), "max": r(max(ms))}


def summarize(spec, concurrency, planned, results, t0, t_end):
    """The JSON record of one level. results: (index, wanted_in, wanted_out,
    serve_client.Result) of every request sent, failed ones included."""
    ok = [(i, wi, wo, r) for i, wi, wo, r in results if r.ok]
    failed = [(i, wi, wo, r) for i, wi, wo, r in results if not r.ok]
    wall = max(t_end - t0, 1e-9)
    errors = {}
    for _, _, _, r in failed:
        errors[r.error] = errors.get(r.error, 0) + 1
    ttft, e2e, tpot, itl = [], [], [], []
    in_tokens = out_tokens = events = 0
    in_known = True
    detail = []
    for i, wi, wo, r in sorted(results, key=lambda x: x[0]):
        row = {"index": i, "input_wanted": wi, "output_wanted": wo,
               "start_s": round(r.start - t0, 6), "end_s": round(r.end - t0, 6), "ok": r.ok}
        if r.ok:
            first = r.output_times[0] - r.start
            total = r.end - r.start
            ttft.append(first)
            e2e.append(total)
            n = r.completion_tokens
            if n >= 2:
                tpot.append((total - first) / (n - 1))
            itl.extend(b - a for a, b in zip(r.output_times, r.output_times[1:]))
            out_tokens += n
            events += len(r.output_times)
            if r.prompt_tokens is None:
                in_known = False
            in_tokens += r.prompt_tokens if r.prompt_tokens is not None else wi
            row.update({"input_tokens": r.prompt_tokens, "output_tokens": n,
                        "tokens_from": r.tokens_from, "events": len(r.output_times),
                        "ttft_ms": round(first * 1000, 3), "e2e_ms": round(total * 1000, 3),
                        "finish_reason": r.finish_reason, "streamed": r.streamed})
        else:
            row["error"] = r.error
        detail.append(row)
    return {
        "lengths": spec, "concurrency": concurrency, "planned": planned,
        "sent": len(results), "completed": len(ok), "failed": len(failed), "errors": errors,
        "wall_s": round(wall, 6),
        "input_tokens": in_tokens, "input_tokens_from_usage": in_known,
        "output_tokens": out_tokens,
        # Requests whose usage says they generated other than max_tokens:
        # with EOS ignored this should be 0.
        "output_len_mismatch": sum(1 for _, _, wo, r in ok if r.completion_tokens != wo),
        "request_throughput": round(len(ok) / wall, 6),
        "output_throughput": round(out_tokens / wall, 6),
        "total_throughput": round((in_tokens + out_tokens) / wall, 6),
        "tokens_per_event": round(out_tokens / events, 4) if events else None,
        "non_streamed": sum(1 for _, _, _, r in ok if not r.streamed),
        "ttft_ms": distribution(ttft), "tpot_ms": distribution(tpot),
        "itl_ms": distribution(itl), "e2e_ms": distribution(e2e),
        "requests": detail,
    }


def _f(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def table(levels):
    """A readable table of level records (one line per level)."""
    head = ("lengths", "conc", "ok", "fail", "req/s", "out tok/s", "tot tok/s",
            "TTFT ms mean/p50/p99", "TPOT ms mean/p50/p99", "ITL ms mean/p50/p99")
    rows = [head]
    for L in levels:
        trip = lambda d, n: "/".join(_f(d[k], n) for k in ("mean", "p50", "p99"))
        rows.append((L["lengths"], str(L["concurrency"]), str(L["completed"]), str(L["failed"]),
                     _f(L["request_throughput"], 2), _f(L["output_throughput"]),
                     _f(L["total_throughput"]), trip(L["ttft_ms"], 1), trip(L["tpot_ms"], 2),
                     trip(L["itl_ms"], 2)))
    widths = [max(len(r[c]) for r in rows) for c in range(len(head))]
    out = []
    for n, r in enumerate(rows):
        out.append("  ".join(v.rjust(w) if c else v.ljust(w)
                             for c, (v, w) in enumerate(zip(r, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
