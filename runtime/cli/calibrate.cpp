// `hyc calibrate`: runs sample text through a calibration build (an
// artifact compiled with `hyc compile --calibration-build`, whose
// hyc.observe ops keep per-channel max |x| of every quantizable GEMM input)
// and writes those maxima as JSON for `hyc compile --calibration`.
#include "hyrt/cli/cli.h"

#include "args.h"
#include "common.h"
#include "../text/text_input.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

namespace hyrt {

namespace {

const char kCalibrateUsage[] =
    "usage: hyc calibrate ART --text FILE [--samples N] [--skip N] [-o OUT]\n"
    "  ART           an artifact compiled with `hyc compile CKPT "
    "--calibration-build`\n"
    "  --text FILE   UTF-8 text; paragraphs are separated by blank lines\n"
    "  --samples N   paragraphs to run (default 128), each from BOS\n"
    "  --skip N      start after the first N paragraphs (default 0), e.g. to\n"
    "                keep calibration text apart from evaluation text\n"
    "  -o OUT        where to write the JSON (default: beside the checkpoint\n"
    "                ART was compiled from: CKPT.calibration.json, or\n"
    "                CKPT/calibration.json for a directory)\n";

/// The default output: beside the checkpoint the manifest names.
std::string besideCheckpoint(const std::string &source) {
  struct stat st;
  if (::stat(source.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return source + "/calibration.json";
  return source + ".calibration.json";
}

/// Runs each sequence from position 0 in chunks of the artifact's bounds;
/// only the observers' side effect matters, so extend returns last rows.
Status runSamples(Engine &engine, const std::vector<std::vector<int32_t>> &seqs) {
  const size_t chunk = size_t(engine.limits().max_batch_tokens);
  std::vector<float> logits;
  for (const std::vector<int32_t> &toks : seqs) {
    const int64_t seq = engine.add_sequence();
    for (size_t at = 0; at < toks.size(); at += chunk) {
      std::vector<int32_t> part(toks.begin() + at,
                                toks.begin() + std::min(toks.size(), at + chunk));
      if (Status s = engine.extend(seq, part, &logits, /*all_rows=*/false); !s.ok())
        return s;
    }
    if (Status s = engine.release(seq); !s.ok())
      return s;
  }
  return Status::Ok();
}

/// Splits "a,b,c".
std::vector<std::string> splitFeeds(const char *feeds) {
  std::vector<std::string> out;
  std::stringstream in(feeds ? feeds : "");
  for (std::string name; std::getline(in, name, ',');)
    out.push_back(name);
  return out;
}

} // namespace

int cli_calibrate(const std::vector<std::string> &args, std::ostream &out,
                  std::ostream &err) {
  const std::string command = "hyc calibrate";
  std::string text_path, output;
  bool text_given = false, output_given = false;
  int64_t samples = 128, skip = 0;
  cli::ArgParser parser;
  parser.add_string("--text", &text_path, &text_given);
  parser.add_int("--samples", &samples, 1);
  parser.add_int("--skip", &skip, 0);
  parser.add_string("-o", &output, &output_given);
  parser.add_string("--output", &output, &output_given);
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      out << kCalibrateUsage;
      return 0;
    }
  std::vector<std::string> positional;
  if (Status s = parser.parse(args, &positional); !s.ok())
    return cli::usage_error(err, command, s.message(), kCalibrateUsage);
  if (positional.size() != 1)
    return cli::usage_error(err, command,
                            positional.empty() ? "missing the artifact directory ART"
                                               : "unexpected argument '" + positional[1] + "'",
                            kCalibrateUsage);
  if (!text_given)
    return cli::usage_error(err, command, "missing --text FILE", kCalibrateUsage);

  // The file streams in pieces up to the last sample; a FIFO or a device
  // is refused.
  std::vector<std::string> paragraphs;
  const int64_t wanted = samples > INT64_MAX - skip ? INT64_MAX : skip + samples;
  if (Status s = cli::read_paragraphs(text_path, wanted,
                                      cli::paragraph_byte_budget(1 << 16),
                                      &paragraphs);
      !s.ok())
    return cli::runtime_error(err, command, s.message());
  if (int64_t(paragraphs.size()) <= skip)
    return cli::runtime_error(err, command,
                              text_path + ": " + std::to_string(paragraphs.size()) +
                                  " paragraphs, none left after --skip " +
                                  std::to_string(skip));
  paragraphs.erase(paragraphs.begin(), paragraphs.begin() + skip);
  if (int64_t(paragraphs.size()) > samples)
    paragraphs.resize(size_t(samples));

  cli::Session session;
  if (Status s = cli::open_session(positional[0], ArtifactOptions{}, EngineOptions{},
                                   /*sequences=*/0, &session);
      !s.ok())
    return cli::runtime_error(err, command, s.message());
  hyrt_observe_v0 *observe = session.artifact->observers();
  if (!observe)
    return cli::runtime_error(
        err, command,
        positional[0] + " observes no activations (its library exports no "
                        "hyc_observe_v0): compile the checkpoint with `hyc compile CKPT "
                        "--calibration-build -o ART` and calibrate that artifact");
  const Tokenizer *tok = session.artifact->tokenizer();
  if (!tok)
    return cli::runtime_error(err, command, "the artifact has no tokenizer to encode text");
  const std::string source = session.artifact->manifest().model.source;
  if (!output_given) {
    if (source.empty())
      return cli::runtime_error(err, command,
                                "the manifest names no checkpoint to write beside; give -o OUT");
    output = besideCheckpoint(source);
  }

  // Start from zero whatever ran before in this process.
  for (int32_t i = 0; i < observe->num_observers; ++i) {
    hyrt_observer_v0 &o = observe->observers[i];
    o.rows = 0;
    std::fill(o.absmax, o.absmax + o.channels, 0.0f);
  }
  const int64_t max_len = session.engine->limits().max_seq_len;
  std::vector<std::vector<int32_t>> seqs;
  int64_t tokens = 0;
  for (const std::string &p : paragraphs) {
    Status encoded;
    seqs.push_back(cli::encode_prefix(*tok, p, /*add_bos=*/tok->bos_id() >= 0,
                                      max_len, nullptr, &encoded));
    if (!encoded.ok())
      return cli::runtime_error(err, command, encoded.message());
    tokens += int64_t(seqs.back().size());
  }
  if (Status s = runSamples(*session.engine, seqs); !s.ok())
    return cli::runtime_error(err, command, s.message());

  nlohmann::json inputs = nlohmann::json::array();
  for (int32_t i = 0; i < observe->num_observers; ++i) {
    const hyrt_observer_v0 &o = observe->observers[i];
    if (o.channels == 0)
      continue;
    inputs.push_back({{"feeds", splitFeeds(o.feeds)},
                      {"channels", o.channels},
                      {"rows", o.rows},
                      {"absmax", std::vector<float>(o.absmax, o.absmax + o.channels)}});
  }
  if (inputs.empty())
    return cli::runtime_error(err, command, "no observer of " + positional[0] + " ran");
  nlohmann::json doc = {{"format", "hyc-calibration"},
                        {"version", 1},
                        {"checkpoint", source},
                        {"text", text_path},
                        {"skip", skip},
                        {"samples", int64_t(seqs.size())},
                        {"tokens", tokens},
                        {"inputs", inputs}};
  std::ofstream file(output, std::ios::binary);
  file << doc.dump(1) << "\n";
  file.close();
  if (!file)
    return cli::runtime_error(err, command,
                              "cannot write " + output +
                                  (output_given ? "" : " (beside the checkpoint; give -o OUT)"));
  out << "hyc calibrate: " << seqs.size() << " paragraphs, " << tokens << " tokens, "
      << inputs.size() << " GEMM inputs -> " << output << "\n";
  out.flush();
  return cli::kExitOk;
}

} // namespace hyrt

extern "C" int hyrt_cli_calibrate(int argc, char **argv) {
  return hyrt::cli_calibrate(hyrt::cli::args_after_command(argc, argv), std::cout,
                             std::cerr);
}
