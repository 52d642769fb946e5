// What one replayed request holds on the wire: the chat body of a turn's history (rendered from
// block keys through tok::PromptSynth).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/prompt_synth.h"
#include "workload/replay_plan.h"

namespace ix::bench {

struct ReplayBody {
  std::string_view model;
  int64_t max_tokens = 1;       // max_completion_tokens
  std::string_view cache_bust;  // prepended to the first message ("" for none)
  // Live-assistant mode: the server's reply to turn k of the stream, by k (an assistant message
  // added by turn k + 1 is sent as replies[k] instead of its recorded blocks). Empty: recorded.
  const std::vector<std::string>* replies = nullptr;
  const boost::json::object* extra = nullptr;  // merged last
};

// {"messages":[...],"model":...,"stream":true,"max_completion_tokens":N,"ignore_eos":true,
//  "stream_options":{"include_usage":true}} + extra, as aiperf's agentic replay sends it.
std::string render_replay_body(const std::vector<workload::HistoryMessage>& messages, const tok::PromptSynth& synth,
                               const ReplayBody& body);

}  // namespace ix::bench
