"""Workloads of bench_serve.py: request lengths and the prompts that hit them.

Length specs:
  IN/OUT      every request IN prompt tokens, OUT generated tokens; the
              presets are 128/128, 128/1024, 1024/128 and 2048/128
  sharegpt    a ShareGPT-like mix (below)

ShareGPT-like mix. The vLLM paper (Kwon et al., SOSP 2023, Fig. 11) reports
mean lengths of 161 input and 338 output tokens on ShareGPT. Lengths here are
log-normal with those means: input sigma 1.0 (median 98 tokens), output
sigma 0.8 (median 245 tokens). The sigmas are our choice of a heavy right
tail, not fitted to the data set (which this tool does not download). Each
pair is clipped to input in [4, max_len - 4] and output in [4, max_len -
input], max_len being the server's max_model_len; clipping lowers the means
when max_len is small. A seed makes the mix reproducible.
"""
import math
import random

PRESETS = ("128/128", "128/1024", "1024/128", "2048/128")
SHAREGPT_INPUT_MEAN, SHAREGPT_INPUT_SIGMA = 161.0, 1.0
SHAREGPT_OUTPUT_MEAN, SHAREGPT_OUTPUT_SIGMA = 338.0, 0.8
MIN_SHAREGPT_LEN = 4

# Common English words: text prompts for servers that take no token ids.
# Each is one or two tokens in the usual BPE vocabularies.
WORDS = (
    "the of and to in is you that it he was for on are as with his they at be "
    "this have from or one had by word but not what all were we when your can "
    "said there use an each which she do how their if will up other about out "
    "many then them these so some her would make like him into time has look "
    "two more write go see number no way could people my than first water been "
    "call who oil its now find long down day did get come made may part over "
    "new sound take only little work know place year live me back give most "
    "very after thing our just name good sentence man think say great where "
    "help through much before line right too mean old any same tell boy follow "
    "came want show also around form three small set put end does another well "
    "large must big even such because turn here why ask went men read need land "
    "different home us move try kind hand picture again change off play spell "
    "air away animal house point page letter mother answer found study still "
    "learn should America world high every near add food between own below "
    "country plant last school father keep tree never start city earth eye light"
).split()


def _lognormal_with_mean(rng, mean, sigma):
    # E[X] = exp(mu + sigma^2 / 2) for a log-normal X.
    return rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma)


def parse_spec(spec):
    """'IN/OUT' -> (IN, OUT); 'sharegpt' -> None. Raises ValueError."""
    if spec == "sharegpt":
        return None
    parts = spec.split("/")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"--lengths: expected IN/OUT (e.g. 128/128) or sharegpt, found {spec!r}")
    n_in, n_out = int(parts[0]), int(parts[1])
    if not (1 <= n_in <= 1 << 24 and 1 <= n_out <= 1 << 24):
        raise ValueError(f"--lengths: lengths must be in 1..16777216, found {spec!r}")
    return n_in, n_out


def sample_length(spec, index, seed, max_len, range_ratio=1.0):
    """The (input, output) lengths of request index under spec. Seeded per
    index, so a level sending more requests extends the same sequence.
    Fixed specs with range_ratio < 1 draw each length uniformly from
    [ratio * L, L] (load.py's old --random-lengths was ratio 0.5)."""
    rng = random.Random(f"lengths/{spec}/{seed}/{index}")
    fixed = parse_spec(spec)
    if fixed:
        n_in, n_out = fixed
        if range_ratio < 1:
            n_in = rng.randint(max(1, int(n_in * range_ratio)), n_in)
            n_out = rng.randint(max(1, int(n_out * range_ratio)), n_out)
        return n_in, n_out
    if max_len < 2 * MIN_SHAREGPT_LEN:
        raise ValueError(f"sharegpt: max_model_len {max_len} leaves no room for "
                         f"{MIN_SHAREGPT_LEN} input and output tokens")
    n_in = int(round(_lognormal_with_mean(rng, SHAREGPT_INPUT_MEAN, SHAREGPT_INPUT_SIGMA)))
    n_out = int(round(_lognormal_with_mean(rng, SHAREGPT_OUTPUT_MEAN, SHAREGPT_OUTPUT_SIGMA)))
    n_in = min(max(n_in, MIN_SHAREGPT_LEN), max_len - MIN_SHAREGPT_LEN)
    n_out = min(max(n_out, MIN_SHAREGPT_LEN), max_len - n_in)
    return n_in, n_out


class PromptMaker:
    """Builds a prompt of a wanted token count, as token ids or as text.

    Token ids are drawn uniformly from [id_lo, id_hi) (every request its own
    stream of a seeded generator, so the prefix cache finds nothing to
    share unless --shared-prefix asks it to). Text prompts are random words;
    the word count for a wanted length comes from a line fitted to the
    server's own prompt_tokens for two probe prompts (calibrate()), and the
    length each request really had is read back from its usage.
    """

    def __init__(self, mode, seed, id_lo=3, id_hi=256, shared_prefix=0):
        self.mode = mode  # "token_ids" or "text"
        self.seed = seed
        self.id_lo, self.id_hi = id_lo, id_hi
        self.shared_prefix = shared_prefix
        self.tokens_per_word = 1.0
        self.fixed_tokens = 0.0  # BOS, chat template: tokens no word adds

    def calibrate(self, n_words_a, tokens_a, n_words_b, tokens_b):
        if n_words_b == n_words_a or tokens_b <= tokens_a:
            raise ValueError(f"cannot fit tokens per word: {n_words_a} words gave "
                             f"{tokens_a} tokens, {n_words_b} gave {tokens_b}")
        self.tokens_per_word = (tokens_b - tokens_a) / (n_words_b - n_words_a)
        self.fixed_tokens = tokens_a - self.tokens_per_word * n_words_a

    def words(self, n, rng):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def make(self, n_tokens, index):
        """The prompt of request index (a list of ids or a str)."""
        rng = random.Random(f"prompt/{self.seed}/{index}")
        shared_rng = random.Random(f"shared/{self.seed}")
        n_shared = min(self.shared_prefix, max(0, n_tokens - 1))
        if self.mode == "token_ids":
            shared = [shared_rng.randrange(self.id_lo, self.id_hi) for _ in range(n_shared)]
            own = [rng.randrange(self.id_lo, self.id_hi) for _ in range(n_tokens - n_shared)]
            return shared + own
        def n_words(tokens):
            return max(1, int(round(tokens / self.tokens_per_word)))
        want = max(1.0, n_tokens - self.fixed_tokens)
        if n_shared:
            shared_words = n_words(n_shared)
            return (self.words(shared_words, shared_rng) + " " +
                    self.words(max(1, n_words(want) - shared_words), rng))
        return self.words(n_words(want), rng)
