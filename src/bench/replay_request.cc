#include "bench/replay_request.h"

#include <fmt/format.h>

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

std::string cache_bust_marker(uint64_t seed, uint64_t run_nonce, int64_t session_num, int64_t lane) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^ run_nonce;
  for (uint64_t v : {static_cast<uint64_t>(session_num), static_cast<uint64_t>(lane)}) {
    z = (z ^ v) * 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 31;
  }
  return fmt::format("[rid:{:012x}]\n\n", z & 0xFFFFFFFFFFFFULL);
}

int64_t PrefixSeen::hit_and_add(const std::vector<int64_t>& hash_ids) {
  int64_t hit = 0;
  while (static_cast<size_t>(hit) < hash_ids.size() && seen_.contains(hash_ids[static_cast<size_t>(hit)])) ++hit;
  for (int64_t id : hash_ids) seen_.insert(id);
  return hit;
}

}  // namespace ix::bench
