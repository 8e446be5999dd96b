// `hyc run`: one prompt through an artifact, streamed to stdout, with
// optional per-position logits dump (see hyrt/cli/cli.h).
#include "hyrt/cli/cli.h"

#include "args.h"
#include "common.h"
#include "hyrt/cli/npy.h"
#include "hyrt/parallel/rank_group.h"
#include "hyrt/parallel/tensor_parallel.h"
#include "hyrt/support/decode_streams.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace hyrt {

namespace {

const char kRunUsage[] =
    "usage: hyc run ART [--prompt TEXT] [-n N] [--temperature T] [--top-k K]\n"
    "               [--top-p P] [--seed S] [--prompt-ids 1,417,93]\n"
    "               [--logits-out FILE.npy] [--mmap] [--no-verify] [--ignore-eos]\n"
    "               [--page-size N] [--no-stats] [--verbose] [--tp N]\n"
    "               [--print-ids]\n"
    "  --prompt TEXT        text to continue (default \"\": BOS only)\n"
    "  -n N, --max-tokens N tokens to generate (default 256, fewer when the\n"
    "                       prompt leaves less room; more than max_seq_len -\n"
    "                       prompt + 1 is an error: the last is never fed)\n"
    "  --temperature T      0 = greedy (default 0)\n"
    "  --top-k K, --top-p P sampling filters (default off)\n"
    "  --seed S             sampling seed (default 0)\n"
    "  --prompt-ids LIST    prompt as token ids, instead of --prompt\n"
    "  --logits-out FILE    float32 .npy [positions][vocab] of every position "
    "fed\n"
    "  --mmap               map weights.bin instead of reading it\n"
    "  --no-verify          skip the weights.bin checksums (faster start)\n"
    "  --ignore-eos         do not stop at EOS / BOS\n"
    "  --page-size N        KV cache page size (default 16)\n"
    "  --no-stats           no timing line on stderr\n"
    "  --verbose            say which ISA variant runs and why, and what its\n"
    "                       kernel self-test found (stderr);\n"
    "                       HYC_ISA=avx2|avx512|avx512-bf16|amx forces one,\n"
    "                       HYC_SELFTEST=0 skips the self-test\n"
    "  --tp N               tensor-parallel ranks: the artifact's (hyc compile\n"
    "                       --tp N); one process per rank on this machine,\n"
    "                       each on its share of the CPUs (default: the\n"
    "                       artifact's count)\n"
    "  --print-ids          print the generated token ids on one line (space-\n"
    "                       separated) instead of the text\n";

struct RunFlags {
  std::string prompt;
  bool prompt_given = false;
  std::vector<int32_t> prompt_ids;
  bool ids_given = false;
  int64_t n = -1; ///< -1: not given (256, or what max_seq_len leaves)
  double temperature = 0, top_p = 1;
  int64_t top_k = 0, seed = 0, page_size = 16;
  std::string logits_out;
  bool mmap = false, no_verify = false, ignore_eos = false, no_stats = false, verbose = false;
  int64_t tp = 0; ///< 0: the artifact's
  bool print_ids = false;
};

/// Text of token `id` after `prev` (-1 at the start): the tokenizer's piece,
/// or the id itself when the artifact has no tokenizer.
std::string piece(const Tokenizer *tok, int32_t prev, int32_t id) {
  if (tok)
    return tok->decode(prev, id);
  return (prev < 0 ? "" : " ") + std::to_string(id);
}

std::string rate(int64_t tokens, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f",
                seconds > 0 ? double(tokens) / seconds : 0.0);
  return buf;
}

/// Declares every flag of `hyc run` on `parser`, writing into `f`.
void add_run_flags(cli::ArgParser &parser, RunFlags &f) {
  parser.add_string("--prompt", &f.prompt, &f.prompt_given);
  parser.add_int_list("--prompt-ids", &f.prompt_ids, &f.ids_given);
  parser.add_int("-n", &f.n, 0);
  parser.add_int("--max-tokens", &f.n, 0); // the OpenAI API's name for it
  parser.add_real("--temperature", &f.temperature, 0, HUGE_VAL);
  parser.add_int("--top-k", &f.top_k, 0);
  parser.add_real("--top-p", &f.top_p, 0, 1);
  parser.add_int("--seed", &f.seed, 0);
  parser.add_int("--page-size", &f.page_size, 1, 1 << 20);
  parser.add_string("--logits-out", &f.logits_out);
  parser.add_switch("--mmap", &f.mmap);
  parser.add_switch("--no-verify", &f.no_verify);
  parser.add_switch("--ignore-eos", &f.ignore_eos);
  parser.add_switch("--no-stats", &f.no_stats);
  parser.add_switch("--verbose", &f.verbose);
  parser.add_int("--tp", &f.tp, 1);
  parser.add_switch("--print-ids", &f.print_ids);
}

int run_rank(const std::string &command, const std::string *implied_dir,
             const std::vector<std::string> &positional, RunFlags &f, TensorParallel &tp,
             std::ostream &out, std::ostream &err);

int run_command(const std::string &command, const std::string *implied_dir,
                const std::vector<std::string> &args, std::ostream &out,
                std::ostream &err) {
  RunFlags f;
  cli::ArgParser parser;
  add_run_flags(parser, f);
  std::vector<std::string> positional;
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      out << kRunUsage;
      return 0;
    }
  if (Status s = parser.parse(args, &positional); !s.ok())
    return cli::usage_error(err, command, s.message(), kRunUsage);
  const size_t want = implied_dir ? 0 : 1;
  if (positional.size() != want)
    return cli::usage_error(
        err, command,
        positional.size() < want
            ? "missing the artifact directory ART"
            : "unexpected argument '" + positional[want] + "'",
        kRunUsage);
  if (f.top_p <= 0)
    return cli::usage_error(err, command,
                            "--top-p expects a number in (0, 1], found 0",
                            kRunUsage);
  if (f.prompt_given && f.ids_given)
    return cli::usage_error(err, command,
                            "--prompt and --prompt-ids are exclusive",
                            kRunUsage);

  // Tensor parallel: ranks 1..N-1 are forked here and run the same steps
  // in lockstep; only rank 0 writes output (the others' errors go to
  // stderr, prefixed with their rank).
  TensorParallel tp;
  if (Status s = start_ranks(implied_dir ? *implied_dir : positional[0], f.tp, &tp); !s.ok())
    return cli::runtime_error(err, command, s.message());
  std::ostringstream discard, rank_err;
  std::ostream &rout = tp.rank == 0 ? out : discard;
  std::ostream &rerr = tp.rank == 0 ? err : rank_err;
  const int rc = run_rank(command, implied_dir, positional, f, tp, rout, rerr);
  std::string why = rank_err.str();
  while (!why.empty() && why.back() == '\n')
    why.pop_back();
  // Once every rank has its artifact open, the ranks run the same steps
  // and meet the same errors (a prompt too long, no tokenizer): rank 0's
  // message says it. A rank's own failure before that is its to report.
  if (tp.rank > 0 && rc != 0 && !tp.ready)
    err << "rank " << tp.rank << ": " << why << "\n";
  if (Status s = finish_ranks(&tp, rc == cli::kExitOk, rc,
                              tp.rank > 0 ? "rank " + std::to_string(tp.rank) + ": " + why
                                          : "rank 0 stopped with an error");
      !s.ok() && rc == cli::kExitOk)
    return cli::runtime_error(err, command, s.message());
  return rc;
}

int run_rank(const std::string &command, const std::string *implied_dir,
             const std::vector<std::string> &positional, RunFlags &f, TensorParallel &tp,
             std::ostream &out, std::ostream &err) {
  if (Status s = join_ranks(nullptr, &tp); !s.ok())
    return cli::runtime_error(err, command, s.message());
  ArtifactOptions ao;
  ao.mmap_weights = f.mmap;
  ao.verify_weights = !f.no_verify;
  if (implied_dir)
    ao.library_override = "self";
  EngineOptions eo;
  eo.page_size = f.page_size;
  cli::Session session;
  if (Status s = cli::open_session(tp.size > 1 ? tp.dir
                                   : implied_dir ? *implied_dir
                                                 : positional[0],
                                   ao, eo, /*sequences=*/1, &session);
      !s.ok())
    return cli::runtime_error(err, command, s.message());
  if (Status s = join_ranks(session.artifact.get(), &tp); !s.ok())
    return cli::runtime_error(err, command, s.message());
  Engine &engine = *session.engine;
  const Manifest &m = session.artifact->manifest();
  if (f.verbose)
    err << command << ": variant " << session.artifact->variant_reason() << "\n"
        << command << ": kernel self-test " << session.artifact->self_test_summary() << "\n"
        << command << ": decode GEMVs "
        << hyrt::decodeGemvLine(session.artifact->variant().cpu_features) << "\n";
  if (f.verbose && tp.group)
    err << command << ": tensor parallel, rank " << tp.rank << " of " << tp.size << " over "
        << tp.group->transport() << (tp.placement.empty() ? "" : "; " + tp.placement) << "\n";
  const Tokenizer *tok = session.artifact->tokenizer();

  std::vector<int32_t> prompt = f.prompt_ids;
  const int32_t bos = tok ? tok->bos_id() : m.model.bos_token_id;
  if (!f.ids_given) {
    if (tok) {
      if (Status s = tok->encode(f.prompt, /*add_bos=*/bos >= 0, &prompt);
          !s.ok())
        return cli::runtime_error(err, command, s.message());
    } else if (!f.prompt.empty())
      return cli::runtime_error(
          err, command,
          "the artifact has no tokenizer; give the prompt with --prompt-ids");
    if (prompt.empty() && bos >= 0)
      prompt.push_back(bos);
    if (prompt.empty())
      return cli::runtime_error(err, command,
                                "empty prompt and the model has no BOS token");
  }
  // A request beyond the compiled bound fails before anything runs (the
  // README's promise); without -n the default shrinks to what fits. The
  // last token generated is never fed, so max_seq_len positions hold the
  // prompt and max_seq_len - prompt + 1 new tokens (llama2.c's `-n 256`
  // from BOS is 256 new tokens in 256 positions).
  const int64_t room = m.limits.max_seq_len - int64_t(prompt.size()) + 1;
  if (f.n < 0)
    f.n = std::max<int64_t>(0, std::min<int64_t>(256, room));
  if (room <= 0 || f.n > room)
    return cli::runtime_error(
        err, command,
        "prompt of " + std::to_string(prompt.size()) + " tokens + " +
            std::to_string(f.n) + " new exceeds max_seq_len " +
            std::to_string(m.limits.max_seq_len) + " of this artifact" +
            (room > 0 ? " (at most " + std::to_string(room) +
                            " new tokens fit after this prompt)"
                      : ""));

  GenerateOptions go;
  go.max_new_tokens = f.n;
  go.sampler.temperature = float(f.temperature);
  go.sampler.top_k = f.top_k;
  go.sampler.top_p = float(f.top_p);
  go.sampler.seed = uint64_t(f.seed);
  go.record_logits = !f.logits_out.empty();
  if (!f.ignore_eos) {
    const int32_t eos = tok ? tok->eos_id() : m.model.eos_token_id;
    for (int32_t id : {eos, bos}) // llama2.c also stops when BOS comes back
      if (id >= 0)
        go.stop_tokens.push_back(id);
  }

  int32_t prev = -1;
  if (!f.print_ids) {
    for (int32_t id : prompt) {
      out << piece(tok, prev, id);
      prev = id;
    }
    out.flush();
  }
  GenerateResult result;
  Status s = engine.generate(
      prompt, go,
      [&](int32_t id) {
        if (f.print_ids)
          out << (prev < 0 ? "" : " ") << id;
        else
          out << piece(tok, prev, id);
        out.flush();
        prev = id;
        return true;
      },
      &result);
  out << "\n";
  out.flush();
  if (!s.ok())
    return cli::runtime_error(err, command,
                              s.message() + (tp.error.empty() ? "" : ": " + tp.error));
  if (!f.logits_out.empty() && tp.rank == 0)
    if (Status w = write_npy_f32(f.logits_out, result.logits.data(),
                                 result.logits_rows, engine.vocab_size());
        !w.ok())
      return cli::runtime_error(err, command, w.message());
  if (!f.no_stats)
    err << result.tokens.size() << " tokens, "
        << rate(result.prompt_tokens, result.prefill_seconds)
        << " tok/s prefill, "
        << rate(result.decode_steps, result.decode_seconds)
        << " tok/s decode\n";
  err.flush();
  return cli::kExitOk;
}

} // namespace

int cli_run(const std::vector<std::string> &args, std::ostream &out,
            std::ostream &err) {
  return run_command("hyc run", nullptr, args, out, err);
}

int cli_run_artifact_index(const std::vector<std::string> &args) {
  RunFlags f;
  cli::ArgParser parser;
  add_run_flags(parser, f);
  std::vector<std::string> positional;
  std::vector<size_t> at;
  if (!parser.parse(args, &positional, &at).ok() || at.empty())
    return -1;
  return int(at[0]);
}

int cli_run_standalone(const std::string &artifact_dir,
                       const std::vector<std::string> &args, std::ostream &out,
                       std::ostream &err) {
  return run_command("run", &artifact_dir, args, out, err);
}

} // namespace hyrt

extern "C" int hyrt_cli_run(int argc, char **argv) {
  return hyrt::cli_run(hyrt::cli::args_after_command(argc, argv), std::cout, std::cerr);
}
