// `hyc perplexity`: mean next-token NLL of blank-line separated paragraphs,
// each scored from BOS, packed several sequences per extend step.
#include "hyrt/cli/cli.h"

#include "args.h"
#include "common.h"
#include "../text/text_input.h"

#include <cmath>
#include <cstdio>
#include <deque>
#include <iostream>

namespace hyrt {

namespace {

const char kPerplexityUsage[] =
    "usage: hyc perplexity ART --text FILE [--max-paragraphs N] [--mmap]\n"
    "                       [--no-verify]\n"
    "  --text FILE          UTF-8 text; paragraphs are separated by blank "
    "lines\n"
    "  --max-paragraphs N   score only the first N paragraphs\n"
    "  --mmap               map weights.bin instead of reading it\n"
    "  --no-verify          skip the weights.bin checksums (faster start)\n";

/// -log softmax(row)[target]; the terms exp(x - max) <= 1 are summed in
/// double.
double nll(const float *row, int64_t n, int32_t target) {
  float mx = row[0];
  for (int64_t i = 1; i < n; ++i)
    mx = std::max(mx, row[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += double(std::exp(row[i] - mx));
  return double(mx) + std::log(sum) - double(row[target]);
}

/// Scores every sequence (token t+1 given tokens 0..t), packing chunks of
/// up to max_seqs sequences and max_batch_tokens tokens into each step.
Status score(Engine &engine, const std::vector<std::vector<int32_t>> &seqs,
             double *total_nll, int64_t *count) {
  struct Active {
    size_t index;
    int64_t seq;
    size_t fed = 0; // tokens already fed; the last token is never fed
  };
  std::deque<size_t> queue;
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i].size() >= 2)
      queue.push_back(i);
  std::vector<Active> active;
  std::vector<SeqChunk> chunks;
  std::vector<float> logits;
  const int64_t V = engine.vocab_size();
  while (!queue.empty() || !active.empty()) {
    while (int64_t(active.size()) < engine.limits().max_seqs &&
           !queue.empty()) {
      active.push_back({queue.front(), engine.add_sequence()});
      queue.pop_front();
    }
    chunks.clear();
    int64_t budget = engine.limits().max_batch_tokens;
    for (const Active &a : active) {
      if (budget == 0)
        break;
      const std::vector<int32_t> &toks = seqs[a.index];
      const size_t take =
          std::min(toks.size() - 1 - a.fed, size_t(budget));
      chunks.push_back({a.seq, std::vector<int32_t>(
                                   toks.begin() + a.fed,
                                   toks.begin() + a.fed + take)});
      budget -= int64_t(take);
    }
    if (Status s = engine.extend_batch(chunks, &logits); !s.ok())
      return s;
    const float *row = logits.data();
    for (size_t c = 0; c < chunks.size(); ++c) {
      Active &a = active[c];
      const std::vector<int32_t> &toks = seqs[a.index];
      for (size_t t = 0; t < chunks[c].tokens.size(); ++t, row += V)
        *total_nll += nll(row, V, toks[a.fed + t + 1]);
      a.fed += chunks[c].tokens.size();
      *count += int64_t(chunks[c].tokens.size());
    }
    for (size_t i = 0; i < active.size();) {
      if (active[i].fed + 1 == seqs[active[i].index].size()) {
        if (Status s = engine.release(active[i].seq); !s.ok())
          return s;
        active.erase(active.begin() + i);
      } else {
        ++i;
      }
    }
  }
  return Status::Ok();
}

} // namespace

int cli_perplexity(const std::vector<std::string> &args, std::ostream &out,
                   std::ostream &err) {
  const std::string command = "hyc perplexity";
  std::string text_path;
  bool text_given = false, mmap = false, no_verify = false;
  int64_t max_paragraphs = INT64_MAX, page_size = 16;
  cli::ArgParser parser;
  parser.add_string("--text", &text_path, &text_given);
  parser.add_int("--max-paragraphs", &max_paragraphs, 1);
  parser.add_int("--page-size", &page_size, 1, 1 << 20);
  parser.add_switch("--mmap", &mmap);
  parser.add_switch("--no-verify", &no_verify);
  std::vector<std::string> positional;
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      out << kPerplexityUsage;
      return 0;
    }
  if (Status s = parser.parse(args, &positional); !s.ok())
    return cli::usage_error(err, command, s.message(), kPerplexityUsage);
  if (positional.size() != 1)
    return cli::usage_error(err, command,
                            positional.empty()
                                ? "missing the artifact directory ART"
                                : "unexpected argument '" + positional[1] + "'",
                            kPerplexityUsage);
  if (!text_given)
    return cli::usage_error(err, command, "missing --text FILE",
                            kPerplexityUsage);

  // Refused before the artifact loads: a FIFO or a device is no text.
  if (Status s = cli::check_regular_file(text_path); !s.ok())
    return cli::runtime_error(err, command, s.message());

  ArtifactOptions ao;
  ao.mmap_weights = mmap;
  ao.verify_weights = !no_verify;
  EngineOptions eo;
  eo.page_size = page_size;
  cli::Session session;
  if (Status s = cli::open_session(positional[0], ao, eo, /*sequences=*/0, &session); !s.ok())
    return cli::runtime_error(err, command, s.message());
  const Tokenizer *tok = session.artifact->tokenizer();
  if (!tok)
    return cli::runtime_error(err, command,
                              "the artifact has no tokenizer to encode text");
  const int64_t max_len = session.engine->limits().max_seq_len;
  // The file streams in pieces up to the last paragraph scored; a
  // paragraph is kept (and tokenized) only as far as a sequence reaches.
  std::vector<std::string> paragraphs;
  if (Status s = cli::read_paragraphs(text_path, max_paragraphs,
                                      cli::paragraph_byte_budget(max_len),
                                      &paragraphs);
      !s.ok())
    return cli::runtime_error(err, command, s.message());
  if (paragraphs.empty())
    return cli::runtime_error(err, command, text_path + ": no paragraphs");
  std::vector<std::vector<int32_t>> seqs;
  int64_t truncated = 0;
  for (const std::string &p : paragraphs) {
    bool cut = false;
    Status encoded;
    seqs.push_back(cli::encode_prefix(*tok, p, /*add_bos=*/tok->bos_id() >= 0,
                                      max_len, &cut, &encoded));
    if (!encoded.ok())
      return cli::runtime_error(err, command, encoded.message());
    truncated += cut;
  }
  if (truncated)
    err << command << ": note: " << truncated
        << " paragraphs longer than max_seq_len " << max_len
        << " tokens were truncated to it\n";

  double total = 0;
  int64_t count = 0;
  if (Status s = score(*session.engine, seqs, &total, &count); !s.ok())
    return cli::runtime_error(err, command, s.message());
  if (count == 0)
    return cli::runtime_error(err, command,
                              "no paragraph has two tokens to score");
  const double mean = total / double(count);
  char line[160];
  std::snprintf(line, sizeof(line),
                "paragraphs: %zu, tokens scored: %lld\nmean NLL: %.6f "
                "nats/token\nperplexity: %.4f\n",
                paragraphs.size(), static_cast<long long>(count), mean,
                std::exp(mean));
  out << line;
  out.flush();
  return cli::kExitOk;
}

} // namespace hyrt

extern "C" int hyrt_cli_perplexity(int argc, char **argv) {
  return hyrt::cli_perplexity(hyrt::cli::args_after_command(argc, argv),
                              std::cout, std::cerr);
}
