//===- BenchCommand.cpp - `hyc bench`: speed and efficiency of an artifact ===//
//
// Runs an artifact on synthetic prompts and reports TTFT, TPOT (mean, p50,
// p99), prefill and decode tokens/s, and two efficiencies against limits
// measured in the same invocation: decode bytes of weights read per token x
// tokens/s over the streaming read bandwidth (probed between the decode
// steps it judges, since bandwidth swings within seconds on shared hosts:
// BenchYardstick.h), and prefill
// FLOPs per token x tokens/s over the peak of the GEMM kernels' instruction.
//
//===----------------------------------------------------------------------===//

#include "compiler/BenchCommand.h"
#include "compiler/BenchCost.h"
#include "compiler/BenchProfile.h"
#include "compiler/BenchYardstick.h"

#include "codegen/host_peaks.h"
#include "compiler/Args.h"
#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/engine.h"
#include "hyrt/parallel/shm_group.h"
#include "hyrt/parallel/tensor_parallel.h"
#include "hyrt/support/decode_streams.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace hyc::compiler {

namespace {

const char *kBenchUsage = R"(usage: hyc bench ARTIFACT [--input N] [--output M] [--batch B]
                 [--rounds R] [--profile] [--json]

Feeds B sequences of N synthetic prompt tokens, then decodes M tokens for
all of them together, R times, and reports:
  TTFT (prefill of one sequence), TPOT (one decode step) mean / p50 / p99,
  prefill and decode tokens/s, decode bytes of weights read per token and
  their share of the streaming read bandwidth (short reads of windows of
  the artifact's weights, or of a huge-page buffer for small artifacts,
  each the best of a plain read, one prefetching ahead into L1, one into
  L2 as the decode kernels do, and one reading two interleaved streams per
  thread as the W8A8 decode kernel does, before a round's decode and after
  every second step; the median of the segments' paired ratios, and apart
  for the host's fast and slow read phases when its probes span more than
  1.3x; above 100% is flagged as a measurement error), prefill FLOPs per
  token and their share of the measured peak of the instruction the
  artifact's GEMM kernels use.

  --input N     prompt tokens per sequence (default 128)
  --output M    generated tokens per sequence (default 64)
  --batch B     sequences decoded together (default 1)
  --rounds R    repetitions; rates are medians over rounds (default 3)
  --profile     also time per op kind per step (the artifact marks every
                kernel call; two clock reads per call while on)
  --short-context N
                also decode one sequence from an N-token prompt, one step
                after each step of the main decode, and report the TPOT
                ratio of the long context to the short one from the same
                minute (the cost of context length, free of the host's drift)
  --no-huge-pages
                weights and KV cache on 4 KiB pages (MADV_NOHUGEPAGE), to
                measure what transparent huge pages buy; the bandwidth
                yardstick is still measured on huge pages
  --no-verify   skip the weights.bin checksums at load
  --page-size N KV cache positions per page (default: the engine's, as
                `hyc run` and `hyc serve` use)
  --tp N        tensor-parallel ranks (the artifact's, `hyc compile --tp`;
                default: its count): one process per rank on its share of
                the CPUs; adds the share of step time spent in the
                all-reduce (waits for the slower rank included). The
                machine's peaks and bandwidth are measured before the ranks
                start, with every CPU, and bytes and FLOPs are summed over
                the ranks
  --json        one JSON object on stdout instead of the table
)";

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

/// The greedy next token of row `row` of a [rows][vocab] logits block.
int32_t greedy(const std::vector<float> &logits, size_t row, size_t vocab) {
  auto first = logits.begin() + std::ptrdiff_t(row * vocab);
  return int32_t(std::max_element(first, first + std::ptrdiff_t(vocab)) - first);
}

struct Round {
  std::vector<double> ttft, tpot, tpotShort;
  double prefillSeconds = 0, decodeSeconds = 0;
};

} // namespace

int benchRank(const cli::Args &args, int64_t input, int64_t output, int64_t batch,
              int64_t rounds, int64_t shortContext, int64_t pageSize, int threads,
              codegen::HostPeaks peaks, double measuredBandwidth, hyrt::TensorParallel &tp);

namespace {

/// `hyc bench`'s flags.
cli::Args benchArgs() {
  return cli::Args({"input", "output", "batch", "rounds", "short-context", "tp", "page-size"},
                   {"help", "json", "profile", "no-huge-pages", "no-verify"});
}

} // namespace

int benchArtifactIndex(int argc, char **argv) {
  cli::Args args = benchArgs();
  std::string error;
  if (!args.parse(argc, argv, 1, error) || args.positionalIndices().empty())
    return -1;
  return args.positionalIndices()[0];
}

int runBenchCommand(int argc, char **argv) {
  cli::Args args = benchArgs();
  std::string error;
  if (!args.parse(argc, argv, 1, error)) {
    std::fprintf(stderr, "hyc bench: %s\n%s", error.c_str(), kBenchUsage);
    return 2;
  }
  if (args.has("help")) {
    std::fputs(kBenchUsage, stdout);
    return 0;
  }
  if (args.positionals().size() != 1) {
    std::fprintf(stderr, "hyc bench: expected one ARTIFACT, got %zu\n%s",
                 args.positionals().size(), kBenchUsage);
    return 2;
  }
  int64_t input = 0, output = 0, batch = 0, rounds = 0, shortContext = 0, pageSize = 0;
  if (!args.getInt("short-context", 0, shortContext, error) ||
      !args.getInt("page-size", hyrt::EngineOptions{}.page_size, pageSize, error) ||
      !args.getInt("input", 128, input, error) ||
      !args.getInt("output", 64, output, error) ||
      !args.getInt("batch", 1, batch, error) ||
      !args.getInt("rounds", 3, rounds, error)) {
    std::fprintf(stderr, "hyc bench: %s\n", error.c_str());
    return 2;
  }
  for (auto [name, v] : {std::pair<const char *, int64_t>{"--input", input},
                         {"--output", output},
                         {"--batch", batch},
                         {"--rounds", rounds},
                         {"--page-size", pageSize}})
    if (v < 1) {
      std::fprintf(stderr, "hyc bench: %s must be at least 1, got %lld\n", name,
                   static_cast<long long>(v));
      return 2;
    }
  if (args.has("short-context") && (shortContext < 1 || shortContext >= input)) {
    std::fprintf(stderr,
                 "hyc bench: --short-context must be in [1, --input) = [1, %lld), got %lld\n",
                 static_cast<long long>(input), static_cast<long long>(shortContext));
    return 2;
  }
  int64_t tpArg = 0;
  if (!args.getInt("tp", 0, tpArg, error) || (args.has("tp") && tpArg < 1)) {
    std::fprintf(stderr, "hyc bench: --tp expects a rank count of at least 1\n");
    return 2;
  }
  // The machine's limits, with every CPU, before any rank starts (the
  // ranks run in lockstep: one measuring alone would stall the others).
  const char *env = std::getenv("HYRT_NUM_THREADS");
  if (!env || std::atoi(env) <= 0)
    env = std::getenv("OMP_NUM_THREADS");
  const int threads = env && std::atoi(env) > 0
                          ? std::atoi(env)
                          : int(std::max(1u, std::thread::hardware_concurrency()));
  if (!args.has("json"))
    std::fprintf(stderr, "measuring the host's peaks...\n");
  // The first peak measurement often runs before the cores have ramped up:
  // the best of three (keep_best_peaks). Bandwidth: the median of three.
  codegen::HostPeaks peaks = codegen::measure_compute_peaks(threads);
  std::vector<double> reads = {codegen::measure_read_gbps(threads)};
  for (int i = 0; i < 2; ++i) {
    codegen::keep_best_peaks(peaks, codegen::measure_compute_peaks(threads));
    reads.push_back(codegen::measure_read_gbps(threads, size_t(1) << 30, 2));
  }
  std::sort(reads.begin(), reads.end());
  const double bandwidth = reads[1];

  hyrt::TensorParallel tp;
  if (hyrt::Status st = hyrt::start_ranks(args.positionals()[0], tpArg, &tp); !st.ok()) {
    std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
    return 1;
  }
  const int rc = benchRank(args, input, output, batch, rounds, shortContext, pageSize, threads,
                           peaks, bandwidth, tp);
  if (hyrt::Status st = hyrt::finish_ranks(&tp, rc == 0, rc, "a rank's bench failed");
      !st.ok() && rc == 0) {
    std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
    return 1;
  }
  return rc;
}

int benchRank(const cli::Args &args, int64_t input, int64_t output, int64_t batch,
              int64_t rounds, int64_t shortContext, int64_t pageSize, int threads,
              codegen::HostPeaks peaks, double measuredBandwidth, hyrt::TensorParallel &tp) {
  const bool quiet = tp.rank > 0; // only rank 0 reports
  const bool json = args.has("json") || quiet;
  const bool profiling = args.has("profile");
  const bool hugePages = !args.has("no-huge-pages");
  if (hyrt::Status st = hyrt::join_ranks(nullptr, &tp); !st.ok()) {
    std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
    return 1;
  }

  std::unique_ptr<hyrt::Artifact> artifact;
  hyrt::ArtifactOptions artifactOptions;
  artifactOptions.huge_pages = hugePages;
  artifactOptions.verify_weights = !args.has("no-verify");
  if (hyrt::Status st = hyrt::Artifact::open(tp.dir, artifactOptions, &artifact); !st.ok()) {
    std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
    return 1;
  }
  if (hyrt::Status st = hyrt::join_ranks(artifact.get(), &tp); !st.ok()) {
    std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
    return 1;
  }
  const hyrt::Manifest &m = artifact->manifest();
  if (input + output > m.limits.max_seq_len || batch > m.limits.max_seqs) {
    std::fprintf(stderr,
                 "hyc bench: %lld + %lld tokens in %lld sequences exceed the "
                 "artifact's max_seq_len %lld / max_seqs %lld\n",
                 static_cast<long long>(input), static_cast<long long>(output),
                 static_cast<long long>(batch),
                 static_cast<long long>(m.limits.max_seq_len),
                 static_cast<long long>(m.limits.max_seqs));
    return 2;
  }
  hyrt::EngineOptions options;
  options.huge_pages = hugePages;
  options.page_size = pageSize;
  options.num_pages = batch * ((input + output + options.page_size - 1) /
                                   options.page_size +
                               1) +
                      (shortContext + output + options.page_size - 1) / options.page_size + 1;
  std::unique_ptr<hyrt::Engine> engine;
  if (hyrt::Status st = hyrt::Engine::create(artifact.get(), options, &engine);
      !st.ok()) {
    std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
    return 1;
  }

  hyrt_profile_v0 *marks = artifact->profile();
  if (profiling && !marks) {
    std::fprintf(stderr, "hyc bench: --profile: %s keeps no op-kind profile (no "
                         "hyc_profile_v0; compiled by an older hyc): recompile it\n",
                 args.positionals()[0].c_str());
    return 1;
  }
  PhaseProfile prefillProfile, decodeProfile;

  const bool terminal = isatty(fileno(stderr));
  // On a terminal one line redrawn in place, with a bar for the share of
  // all rounds' steps (warm-up included) done; otherwise plain lines.
  auto progress = [&](const std::string &what, double done = -1) {
    if (json)
      return;
    if (!terminal) {
      std::fprintf(stderr, "%s\n", what.c_str());
      return;
    }
    std::string bar;
    if (done >= 0) {
      const int width = 24, filled = int(std::min(1.0, done) * width + 0.5);
      bar = "[" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') +
            "] ";
    }
    std::fprintf(stderr, "\r%s%-50s", bar.c_str(), what.c_str());
  };
  // Steps of one round: the prefills, then the decode steps.
  const double stepsPerRound = double(batch + output);
  auto doneAt = [&](int64_t round, int64_t stepInRound) {
    return (double(round + 1) * stepsPerRound + double(stepInRound)) /
           (double(rounds + 1) * stepsPerRound);
  };

  // Single process: bandwidth probes between the decode steps. Ranks in
  // lockstep cannot stop for them: tensor parallel keeps the figure
  // measured before the ranks started.
  std::unique_ptr<BandwidthYardstick> yardstick;
  if (tp.size == 1)
    yardstick = std::make_unique<BandwidthYardstick>(threads, artifact->weights_region(),
                                                     artifact->weights_region_bytes());
  double collectivePrefill = 0, collectiveDecode = 0; // seconds, all rounds

  // Synthetic prompts: ids spread over the vocabulary, seeded by sequence.
  const int64_t vocab = m.model.vocab_size;
  auto prompt = [&](int64_t seq, int64_t length) {
    std::vector<int32_t> ids(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i)
      ids[size_t(i)] = int32_t((3 + seq * 7919 + i * 104729) % vocab);
    return ids;
  };
  // A failed step ends the benchmark with the engine's message.
  auto failed = [](const hyrt::Status &st) {
    if (!st.ok())
      std::fprintf(stderr, "\nhyc bench: %s\n", st.message().c_str());
    return !st.ok();
  };
  std::vector<Round> results;
  for (int64_t r = -1; r < rounds; ++r) { // round -1 warms up
    const std::string label =
        r < 0 ? "warm-up" : "round " + std::to_string(r + 1) + "/" + std::to_string(rounds);
    Round round;
    std::vector<int64_t> seqs;
    std::vector<int32_t> next;
    std::vector<float> logits;
    const bool marking = profiling && r >= 0;
    if (marking)
      PhaseProfile::start(marks);
    for (int64_t s = 0; s < batch; ++s) {
      progress(label + ": prefill " + std::to_string(s + 1) + "/" +
                   std::to_string(batch),
               doneAt(r, s));
      seqs.push_back(engine->add_sequence());
      const double c0 = tp.collective_seconds;
      const double t0 = seconds();
      hyrt::Status st = engine->extend(seqs.back(), prompt(s, input), &logits,
                                       /*all_rows=*/false);
      const double dt = seconds() - t0;
      if (failed(st))
        return 1;
      round.ttft.push_back(dt);
      round.prefillSeconds += dt;
      if (r >= 0)
        collectivePrefill += tp.collective_seconds - c0;
      next.push_back(greedy(logits, 0, size_t(vocab)));
    }
    if (marking)
      prefillProfile.stop(marks, batch);
    // The short-context sequence (neither timed nor profiled).
    int64_t shortSeq = -1;
    std::vector<int32_t> shortNext;
    if (shortContext > 0) {
      shortSeq = engine->add_sequence();
      if (failed(engine->extend(shortSeq, prompt(batch, shortContext), &logits, false)))
        return 1;
      shortNext.push_back(greedy(logits, 0, size_t(vocab)));
    }
    if (marking)
      PhaseProfile::start(marks);
    if (yardstick)
      yardstick->beginRound(output);
    for (int64_t step = 0; step < output; ++step) {
      if (step % 16 == 0)
        progress(label + ": decode " + std::to_string(step) + "/" +
                     std::to_string(output),
                 doneAt(r, batch + step));
      const double c0 = tp.collective_seconds;
      const double t0 = seconds();
      hyrt::Status st = engine->decode(seqs, next, &logits);
      const double dt = seconds() - t0;
      if (failed(st))
        return 1;
      if (r >= 0)
        collectiveDecode += tp.collective_seconds - c0;
      round.tpot.push_back(dt);
      round.decodeSeconds += dt;
      for (size_t s = 0; s < seqs.size(); ++s)
        next[s] = greedy(logits, s, size_t(vocab));
      if (shortSeq >= 0) { // interleaved, outside the profile's marks
        if (marking)
          marks->enabled = 0;
        const double s0 = seconds();
        hyrt::Status ss = engine->decode({shortSeq}, shortNext, &logits);
        round.tpotShort.push_back(seconds() - s0);
        if (marking)
          marks->enabled = 1;
        if (failed(ss))
          return 1;
        shortNext[0] = greedy(logits, 0, size_t(vocab));
      }
      if (yardstick) { // outside the step's time and the profile's marks
        if (marking)
          marks->enabled = 0;
        yardstick->afterStep(step, dt);
        if (marking)
          marks->enabled = 1;
      }
    }
    if (yardstick && r < 0)
      yardstick->discard();
    if (shortSeq >= 0)
      (void)engine->release(shortSeq);
    if (marking)
      decodeProfile.stop(marks, output);
    for (int64_t s : seqs)
      (void)engine->release(s);
    if (r >= 0)
      results.push_back(round);
    if (tp.size == 1) // ranks in lockstep cannot stop for it (see above)
      codegen::keep_best_peaks(peaks, codegen::measure_compute_peaks(threads));
  }
  if (terminal && !json)
    std::fprintf(stderr, "\r%-80s\r", "");

  std::vector<double> ttft, tpot, tpotShort, prefillRates, decodeRates;
  for (const Round &r : results) {
    ttft.insert(ttft.end(), r.ttft.begin(), r.ttft.end());
    tpot.insert(tpot.end(), r.tpot.begin(), r.tpot.end());
    tpotShort.insert(tpotShort.end(), r.tpotShort.begin(), r.tpotShort.end());
    prefillRates.push_back(double(input * batch) / r.prefillSeconds);
    decodeRates.push_back(double(output * batch) / r.decodeSeconds);
  }
  const double prefillTokS = median(prefillRates), decodeTokS = median(decodeRates);
  ModelCost cost = modelCost(m, artifact->variant(), batch, input);
  if (tp.size > 1) { // every rank reads its own weights: the machine's total
    float sums[2] = {float(cost.decodeBytesPerStep), float(cost.flopsPerToken)};
    if (hyrt::Status st = tp.group->all_reduce_sum(sums, 2); !st.ok()) {
      std::fprintf(stderr, "hyc bench: %s\n", st.message().c_str());
      return 1;
    }
    cost.decodeBytesPerStep = sums[0];
    cost.flopsPerToken = sums[1];
  }
  if (quiet)
    return 0;
  double prefillTotal = 0, decodeTotal = 0;
  for (const Round &r : results) {
    prefillTotal += r.prefillSeconds;
    decodeTotal += r.decodeSeconds;
  }
  const double bytesPerToken = cost.decodeBytesPerStep / double(batch);
  std::string peakName;
  const double peak = kernelPeak(artifact->variant(), peaks, cost.integerCodes, peakName);
  YardstickJudgement yard;
  if (yardstick)
    yard = yardstick->judge(cost.decodeBytesPerStep);
  const bool bracketed = yard.segments > 0;
  const double streamGbs = bracketed ? yard.probeGbs : measuredBandwidth;
  const double bwEff = bracketed        ? yard.efficiency
                       : streamGbs > 0 ? bytesPerToken * decodeTokS / (streamGbs * 1e9)
                                       : 0;
  const bool bwError = bracketed ? yard.overOne : bwEff > 1.0;
  char yardJson[640];
  std::snprintf(yardJson, sizeof(yardJson),
                ", \"bw_yardstick\": \"%s\", \"bw_segments\": %d, "
                "\"bw_segments_skipped\": %d, \"decode_bw_efficiency_min\": %.4f, "
                "\"decode_bw_efficiency_max\": %.4f, \"bw_segments_over_one\": %.4f, "
                "\"decode_bw_measurement_error\": %s, \"bw_phase_split_gbs\": %.2f, "
                "\"decode_bw_efficiency_fast\": %.4f, \"bw_segments_fast\": %d, "
                "\"decode_bw_efficiency_slow\": %.4f, \"bw_segments_slow\": %d",
                bracketed ? "probes between decode steps" : "before the ranks started",
                yard.segments, yard.skipped, bracketed ? yard.lowest : bwEff,
                bracketed ? yard.highest : bwEff, yard.shareOverOne,
                bwError ? "true" : "false", yard.phaseSplitGbs, yard.fastEfficiency,
                yard.fastSegments, yard.slowEfficiency, yard.slowSegments);
  const double computeEff =
      peak > 0 ? cost.flopsPerToken * prefillTokS / (peak * 1e9) : 0;
  const double tpotMean =
      tpot.empty() ? 0 : std::accumulate(tpot.begin(), tpot.end(), 0.0) / tpot.size();
  // Medians: a step the host stalled (p99 is often 1.5x p50 here) should not
  // decide the ratio.
  const double tpotShortP50 = percentile(tpotShort, 0.5), tpotP50 = percentile(tpot, 0.5);
  char shortJson[256] = "";
  if (shortContext > 0)
    std::snprintf(shortJson, sizeof(shortJson),
                  ", \"short_context\": %lld, \"tpot_short_p50_ms\": %.4f, "
                  "\"long_short_tpot_ratio\": %.4f",
                  static_cast<long long>(shortContext), tpotShortP50 * 1e3,
                  tpotShortP50 > 0 ? tpotP50 / tpotShortP50 : 0);

  if (json) {
    std::printf(
        "{\"artifact\": \"%s\", \"isa\": \"%s\", \"threads\": %d, \"input\": %lld, "
        "\"output\": %lld, \"batch\": %lld, \"rounds\": %lld, \"ttft_ms\": %.4f, "
        "\"tpot_ms\": %.4f, \"tpot_p50_ms\": %.4f, \"tpot_p99_ms\": %.4f, "
        "\"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, "
        "\"decode_bytes_per_token\": %.0f, \"stream_read_gbs\": %.3f, "
        "\"decode_bw_efficiency\": %.4f, \"prefill_flops_per_token\": %.0f, "
        "\"peak_gflops\": %.3f, \"peak_instruction\": \"%s\", "
        "\"prefill_compute_efficiency\": %.4f, \"kv_cache_dtype\": \"%s\", "
        "\"huge_pages\": %s, \"variant_reason\": \"%s\", \"tp\": %d, "
        "\"collective_prefill_share\": %.4f, \"collective_decode_share\": %.4f%s%s%s%s}\n",
        args.positionals()[0].c_str(), artifact->variant().name.c_str(), threads,
        static_cast<long long>(input), static_cast<long long>(output),
        static_cast<long long>(batch), static_cast<long long>(rounds),
        median(ttft) * 1e3, tpotMean * 1e3, percentile(tpot, 0.5) * 1e3,
        percentile(tpot, 0.99) * 1e3, prefillTokS, decodeTokS, bytesPerToken,
        streamGbs, bwEff, cost.flopsPerToken, peak, peakName.c_str(), computeEff,
        m.kv_cache.dtype.c_str(), hugePages ? "true" : "false",
        artifact->variant_reason().c_str(), tp.size,
        prefillTotal > 0 ? collectivePrefill / prefillTotal : 0,
        decodeTotal > 0 ? collectiveDecode / decodeTotal : 0, yardJson, shortJson,
        profiling ? ", " : "",
        profiling ? profileJson(prefillProfile, decodeProfile).c_str() : "");
    return 0;
  }
  const std::string workers = tp.size > 1 ? std::to_string(tp.size) + " ranks on " +
                                                 std::to_string(threads) + " CPUs"
                                           : std::to_string(threads) + " threads";
  std::printf("%s (%s, %s, KV cache %s, %s): %lld prompt + %lld generated "
              "tokens, batch %lld, %lld rounds\n",
              args.positionals()[0].c_str(), artifact->variant().name.c_str(), workers.c_str(),
              m.kv_cache.dtype.c_str(), hugePages ? "huge pages" : "4 KiB pages",
              static_cast<long long>(input), static_cast<long long>(output),
              static_cast<long long>(batch), static_cast<long long>(rounds));
  std::printf("  variant %s\n", artifact->variant_reason().c_str());
  std::printf("  kernel self-test %s\n", artifact->self_test_summary().c_str());
  std::printf("  decode GEMVs %s\n",
              hyrt::decodeGemvLine(artifact->variant().cpu_features).c_str());
  std::printf("  TTFT %.2f ms   TPOT %.3f ms (p50 %.3f, p99 %.3f)\n",
              median(ttft) * 1e3, tpotMean * 1e3, percentile(tpot, 0.5) * 1e3,
              percentile(tpot, 0.99) * 1e3);
  std::printf("  prefill %.1f tok/s   decode %.1f tok/s\n", prefillTokS, decodeTokS);
  if (bracketed) {
    std::printf("  decode: %.1f MB of weights per token, %.1f GB/s; streaming read "
                "probed between its steps (%s): %.1f GB/s (%.1f-%.1f)\n",
                bytesPerToken * 1e-6, bytesPerToken * decodeTokS * 1e-9,
                yardstick->readsRegion() ? "windows of the weights" : "a buffer of its own",
                streamGbs, yard.probeMinGbs, yard.probeMaxGbs);
    std::printf("  decode / streaming read = %.0f%% (median of %d segments' paired ratios, "
                "%.0f-%.0f%%; %d skipped across a bandwidth change)\n",
                bwEff * 100, yard.segments, yard.lowest * 100, yard.highest * 100,
                yard.skipped);
    if (yard.phases)
      std::printf("    by the host's read phase: fast (probe over %.1f GB/s) %.0f%% of %d "
                  "segments, slow %.0f%% of %d\n",
                  yard.phaseSplitGbs, yard.fastEfficiency * 100, yard.fastSegments,
                  yard.slowEfficiency * 100, yard.slowSegments);
  } else {
    std::printf("  decode: %.1f MB of weights per token, %.1f GB/s of %.1f GB/s "
                "streaming read (measured before the ranks started) = %.0f%%\n",
                bytesPerToken * 1e-6, bytesPerToken * decodeTokS * 1e-9, streamGbs,
                bwEff * 100);
  }
  if (bwError)
    std::printf("  MEASUREMENT ERROR: decode read faster than the streaming read; no "
                "engine can, so the yardstick missed the decode's moments (a neighbour "
                "on the host?): rerun, do not quote this efficiency\n");
  std::printf("  prefill: %.2f GFLOP per token, %.1f GFLOP/s of %.0f (%s peak) = "
              "%.0f%%\n",
              cost.flopsPerToken * 1e-9, cost.flopsPerToken * prefillTokS * 1e-9,
              peak, peakName.c_str(), computeEff * 100);
  if (tp.size > 1)
    std::printf("  tensor parallel: %d ranks; collectives %.1f%% of prefill time, %.1f%% of "
                "decode time (waits for the slower rank included)\n",
                tp.size, prefillTotal > 0 ? 100 * collectivePrefill / prefillTotal : 0,
                decodeTotal > 0 ? 100 * collectiveDecode / decodeTotal : 0);
  if (shortContext > 0)
    std::printf("  decode at position ~%lld: TPOT p50 %.3f ms; at ~%lld, interleaved: %.3f ms "
                "-> %.3fx\n",
                static_cast<long long>(input), tpotP50 * 1e3,
                static_cast<long long>(shortContext), tpotShortP50 * 1e3,
                tpotShortP50 > 0 ? tpotP50 / tpotShortP50 : 0);
  if (profiling)
    printProfile(prefillProfile, decodeProfile);
  return 0;
}

} // namespace hyc::compiler
