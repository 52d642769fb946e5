#include "bench/replay_request.h"

#include <boost/json.hpp>

namespace ix::bench {
namespace {

std::string_view role_name(workload::HistoryMessage::Role role) {
  switch (role) {
    case workload::HistoryMessage::Role::kSystem: return "system";
    case workload::HistoryMessage::Role::kUser: return "user";
    case workload::HistoryMessage::Role::kAssistant: return "assistant";
  }
  return "user";
}

std::string message_text(const workload::HistoryMessage& message, const tok::PromptSynth& synth,
                         const ReplayBody& body) {
  using Role = workload::HistoryMessage::Role;
  if (body.replies && message.role == Role::kAssistant && message.turn > 0 &&
      static_cast<size_t>(message.turn - 1) < body.replies->size()) {
    return (*body.replies)[static_cast<size_t>(message.turn - 1)];
  }
  std::string text;
  for (const auto& piece : message.pieces) text += synth.block(piece.key, static_cast<size_t>(piece.tokens));
  return text;
}

}  // namespace

std::string render_replay_body(const std::vector<workload::HistoryMessage>& messages, const tok::PromptSynth& synth,
                               const ReplayBody& body) {
  boost::json::array list;
  list.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string text = message_text(messages[i], synth, body);
    if (i == 0 && !body.cache_bust.empty()) text.insert(0, body.cache_bust);
    list.push_back(boost::json::object{{"role", role_name(messages[i].role)}, {"content", std::move(text)}});
  }
  boost::json::object out;
  out["messages"] = std::move(list);
  out["model"] = body.model;
  out["stream"] = true;
  out["max_completion_tokens"] = body.max_tokens;
  out["ignore_eos"] = true;
  out["stream_options"] = boost::json::object{{"include_usage", true}};
  if (body.extra)
    for (const auto& [key, value] : *body.extra) out[key] = value;
  return boost::json::serialize(out);
}

}  // namespace ix::bench
