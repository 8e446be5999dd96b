// Prometheus text rendering of `hyc serve` metrics (see serve_metrics.h).
#include "metrics.h"

#include <sstream>

namespace hyrt::serve {

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i])
    ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

std::string Histogram::render(const std::string &name,
                              const std::string &help) const {
  std::ostringstream o;
  o << "# HELP " << name << " " << help << "\n# TYPE " << name
    << " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    o << name << "_bucket{le=\"" << kBounds[i] << "\"} " << cumulative << "\n";
  }
  o << name << "_bucket{le=\"+Inf\"} " << count_ << "\n"
    << name << "_sum " << sum_ << "\n"
    << name << "_count " << count_ << "\n";
  return o.str();
}

void Metrics::count_response(const std::string &endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++responses_[{endpoint, status}];
}

void Metrics::count_finished(const std::string &reason, int64_t prompt_tokens,
                             int64_t completion_tokens, double ttft,
                             double tpot) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[reason];
  prompt_tokens_ += uint64_t(prompt_tokens);
  completion_tokens_ += uint64_t(completion_tokens);
  if (ttft >= 0)
    ttft_.observe(ttft);
  if (tpot >= 0)
    tpot_.observe(tpot);
}

std::string Metrics::render(const SchedulerStats &s) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  o << "# HELP hyc_requests_total HTTP requests answered, by endpoint and "
       "status.\n# TYPE hyc_requests_total counter\n";
  for (const auto &[key, n] : responses_)
    o << "hyc_requests_total{endpoint=\"" << key.first << "\",code=\""
      << key.second << "\"} " << n << "\n";
  o << "# HELP hyc_generations_total Generations ended, by finish reason.\n"
       "# TYPE hyc_generations_total counter\n";
  for (const auto &[reason, n] : finished_)
    o << "hyc_generations_total{reason=\"" << reason << "\"} " << n << "\n";
  o << "# HELP hyc_prompt_tokens_total Prompt tokens of ended generations.\n"
       "# TYPE hyc_prompt_tokens_total counter\nhyc_prompt_tokens_total "
    << prompt_tokens_
    << "\n# HELP hyc_generation_tokens_total Tokens generated.\n"
       "# TYPE hyc_generation_tokens_total counter\n"
       "hyc_generation_tokens_total "
    << completion_tokens_ << "\n";
  o << ttft_.render("hyc_time_to_first_token_seconds",
                    "Time from request arrival to its first token.");
  o << tpot_.render("hyc_time_per_output_token_seconds",
                    "Mean time per generated token after the first.");
  auto gauge = [&](const char *name, const char *help, int64_t v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name
      << " gauge\n"
      << name << " " << v << "\n";
  };
  gauge("hyc_kv_pages_used", "KV cache pages held by sequences.",
        s.kv_pages_used);
  gauge("hyc_kv_pages_total", "KV cache pages in the pool.", s.kv_pages_total);
  gauge("hyc_queue_depth", "Requests waiting for admission.", s.queued);
  gauge("hyc_requests_running", "Requests admitted and generating.",
        s.running);
  gauge("hyc_prefix_cache_pages",
        "KV cache pages kept by the prefix cache (evictable when unused).",
        s.prefix_cached_pages);
  o << "# HELP hyc_engine_steps_total Engine steps run.\n"
       "# TYPE hyc_engine_steps_total counter\nhyc_engine_steps_total "
    << s.steps << "\n";
  o << "# HELP hyc_prefix_cache_hit_tokens_total Prompt tokens whose KV came "
       "from the prefix cache.\n"
       "# TYPE hyc_prefix_cache_hit_tokens_total counter\n"
       "hyc_prefix_cache_hit_tokens_total "
    << s.prefix_hit_tokens << "\n";
  return o.str();
}

} // namespace hyrt::serve
