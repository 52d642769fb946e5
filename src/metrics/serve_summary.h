// What a fixed-length serving benchmark's result (SPEC §4) is computed from, summarised request
// by request: the per-request values (TTFT, TPOT, E2EL, queue, scheduled-time views, lengths,
// errors) in dataset order, and what the content events give (ITL, per-token ITL, tokens per
// chunk, the busiest second). `bench serve` hands every record over with its content events
// (build_serve_result); `sim predict` feeds the events as the engine emits them and keeps no
// per-token record, so its memory follows the requests, not the tokens. Both get their JSON here.
//
// Thread-safety: a plain value; one owner.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "metrics/serve_result.h"
#include "metrics/statistics.h"

namespace ix::metrics {

// How a summary keeps the samples a run has one of per token (ITL, per-token ITL, tokens per
// chunk).
enum class TokenSamples {
  kEvery,    // every sample in order: numpy's statistics bit for bit (measured gaps rarely repeat)
  kCounted,  // distinct values with counts (CountedSamples): for gaps that are step times shared by
             // a whole batch (the simulator), memory O(distinct gaps); mean and std rounded once
};

class ServeSummary {
 public:
  // `origin_ns`: the earliest send of the measured, successful requests, where vLLM's one-second
  // buckets of the busiest second start.
  ServeSummary(TokenSamples token_samples, int64_t origin_ns);

  // Room for this many measured requests and content events (spares regrowing large arrays).
  void reserve(size_t requests, size_t events);
  // One request of the dataset, warmup or failed ones included, in dataset order (the order of
  // input_lens, output_lens and of every per-request statistic's sums). Its content events are
  // summarised with it, if it has them.
  void add_request(const RequestRecord& r);
  // One content event of a measured request that will complete, for callers that summarise the
  // events as they happen and leave the record's content_event_ns empty: `previous_ns` is the
  // request's content event before it (0 for its first), `tokens` the tokens it carried.
  // Events equal to the one before (a batch's requests stepping together) are only counted here
  // and summarised once, with their multiplicity.
  void add_content_event(int64_t previous_ns, int64_t event_ns, int32_t tokens) {
    if (repeats_ > 0 && event_ns == repeated_.event_ns && previous_ns == repeated_.previous_ns &&
        tokens == repeated_.tokens) {
      ++repeats_;
      return;
    }
    flush_repeated_events();
    repeated_ = {previous_ns, event_ns, tokens};
    repeats_ = 1;
  }

  // The result object (build_serve_result's description); the summary is used up.
  boost::json::object result(const ServeRunInfo& info) &&;

 private:
  // One sample per content event or per token, kept as TokenSamples says.
  class TokenSampleSet {
   public:
    explicit TokenSampleSet(TokenSamples how) : how_(how) {}
    void reserve(size_t n);
    void add(double value, int64_t count) {
      if (how_ == TokenSamples::kCounted) {
        counted_.add(value, count);
        return;
      }
      for (int64_t i = 0; i < count; ++i) every_.push_back(value);
    }
    Summary summarize(std::span<const double> percentiles, double scale);

   private:
    TokenSamples how_;
    std::vector<double> every_;
    CountedSamples counted_;
  };
  struct BusiestSecond {
    double output_tokens_per_s = 0.0;
    int64_t concurrent_requests = 0;
  };

  struct ContentEvent {
    int64_t previous_ns = 0;
    int64_t event_ns = 0;
    int32_t tokens = 0;
  };
  // Summarises repeats_ copies of repeated_ (in order: kEvery samples keep their sequence).
  void flush_repeated_events();
  void add_completed(const RequestRecord& r);
  void add_failed(const RequestRecord& r);
  int64_t count_good(const std::map<std::string, double>& slo_ms) const;
  BusiestSecond busiest_second() const;
  void put_measurements(boost::json::object& out, const ServeRunInfo& info, double duration);
  void put_own_measurements(boost::json::object& own, const ServeRunInfo& info);
  void put_validity(boost::json::object& own, const ServeRunInfo& info) const;

  // Per request (measured and successful), in dataset order, in seconds.
  std::vector<double> ttfts_, tpots_, all_tpots_, e2els_, queue_, sched_ttft_, sched_e2el_;
  // Per content event or token.
  TokenSampleSet itls_, token_itls_, tokens_per_chunk_;
  // vLLM's per-second view: content events per second from origin_ns_, and each successful
  // request's [send, last event] span.
  int64_t origin_ns_;
  std::vector<double> events_per_second_;
  ContentEvent repeated_;
  int64_t repeats_ = 0;
  std::vector<std::pair<int64_t, int64_t>> spans_;
  std::vector<int64_t> input_lens_, output_lens_, scheduled_ns_;  // measured requests, failed ones too
  int64_t completed_ = 0, failed_ = 0, warmups_ = 0;
  int64_t total_input_ = 0, total_output_ = 0;
  std::map<std::string, int64_t> error_counts_;
  std::map<std::string, std::string> error_examples_;
  int64_t mismatch_requests_ = 0, compared_requests_ = 0, server_tokens_ = 0, client_tokens_ = 0;
};

}  // namespace ix::metrics
