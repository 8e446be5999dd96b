#!/usr/bin/env python3
"""Alternating `hyc bench` pairs of two artifacts of one model (e.g. --quant
w4a8 against w8a8): ROUNDS pairs, each artifact once per pair, in the same
minutes, so the host's bandwidth drift hits both alike. Prints each run and
the medians of the paired ratios (B / A) of decode and prefill tokens/s,
and each artifact's median decode bytes per token and bandwidth share.

usage: pairs.py HYC ART_A ART_B [ROUNDS] [-- bench options]
"""
import json
import statistics
import subprocess
import sys


def bench(hyc, art, extra):
    out = subprocess.run([hyc, "bench", art, "--json", "--rounds", "1", *extra],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    hyc, a, b = args[:3]
    rounds = int(args[3]) if len(args) > 3 else 3
    runs = {a: [], b: []}
    for r in range(rounds):
        for art in (a, b) if r % 2 == 0 else (b, a):
            d = bench(hyc, art, extra)
            runs[art].append(d)
            print(f"round {r + 1} {art}: decode {d['decode_tok_s']:.2f} tok/s "
                  f"({d['decode_bytes_per_token'] / 1e6:.1f} MB/token, "
                  f"{100 * d['decode_bw_efficiency']:.0f}% of {d['stream_read_gbs']:.1f} GB/s), "
                  f"prefill {d['prefill_tok_s']:.1f} tok/s", flush=True)
    med = statistics.median
    for key, what in (("decode_tok_s", "decode"), ("prefill_tok_s", "prefill")):
        ratios = [y[key] / x[key] for x, y in zip(runs[a], runs[b])]
        print(f"{what}: {med(x[key] for x in runs[a]):.2f} -> {med(y[key] for y in runs[b]):.2f} "
              f"tok/s, paired ratio B/A median {med(ratios):.2f} "
              f"(range {min(ratios):.2f}-{max(ratios):.2f})")
    for art in (a, b):
        print(f"{art}: {med(d['decode_bytes_per_token'] for d in runs[art]) / 1e6:.1f} MB/token, "
              f"decode at {100 * med(d['decode_bw_efficiency'] for d in runs[art]):.0f}% of "
              f"the streaming read measured between rounds")


if __name__ == "__main__":
    main()
