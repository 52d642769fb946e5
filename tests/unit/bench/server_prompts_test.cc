// ServerPromptMaker against scripted servers: a toy vLLM-shaped tokenizer server (one token per
// " word" of its vocabulary, a BOS, a chat template that trims the content's first word), and
// servers that lack an endpoint, fail, or answer in other shapes. Exactness against the real
// tokenizers and `ixbench sim serve`: tests/integration/server_prompts_test.cc.
#include "bench/server_prompts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <set>
#include <string>

#include "support/scripted_server.h"

namespace ix::bench {
namespace {

namespace bj = boost::json;
using ix::testing::ScriptedServer;
using ix::testing::write_all;

std::string http_response(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string path_of(const std::string& request) {
  const size_t start = request.find(' ') + 1;
  return request.substr(start, request.find(' ', start) - start);
}

bj::object body_of(const std::string& request) {
  return bj::parse(request.substr(request.find("\r\n\r\n") + 4)).as_object();
}

// The toy tokenizer: id 0 is "\n"; ids 1.. are " " + three letters, except every 7th id, which
// is an upper-case piece (not a pool candidate); ids >= kVocab are refused with 400, as vLLM
// refuses ids past the vocabulary. Text is split into "\n", vocabulary " word"s and single
// bytes (one token each). add_special_tokens prepends a BOS. The chat template renders
// "<u>" + trim(content) + "</u>" (+ "<a>" as generation prompt): 2 (+1) tokens around the
// content, and the trimmed first word costs 1 token when it starts with a-m, else 3 (its bytes).
constexpr int64_t kVocab = 5000;

std::string piece(int64_t id) {
  if (id == 0) return "\n";
  std::string letters = {static_cast<char>('a' + id % 26), static_cast<char>('a' + (id / 26) % 26),
                         static_cast<char>('a' + (id / 676) % 26)};
  if (id % 7 == 0) return " X" + letters;
  return " " + letters;
}

int64_t count_text(const std::string& text) {
  int64_t count = 0;
  for (size_t at = 0; at < text.size();) {
    if (text[at] == ' ' && at + 4 <= text.size() &&
        std::all_of(text.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                    text.begin() + static_cast<std::ptrdiff_t>(at) + 4, [](char c) { return c >= 'a' && c <= 'z'; }) &&
        (at + 4 == text.size() || text[at + 4] == ' ' || text[at + 4] == '\n')) {
      ++count;  // a vocabulary word
      at += 4;
    } else {
      ++count;  // "\n" or one byte
      ++at;
    }
  }
  return count;
}

class ToyServer {
 public:
  ToyServer()
      : server_(ScriptedServer::per_request([this](int fd, const std::string& request) { respond(fd, request); })) {}
  std::string base_url() const { return server_.base_url(); }
  int requests() const { return requests_.load(); }

 private:
  void respond(int fd, const std::string& request) {
    ++requests_;
    const std::string path = path_of(request);
    const bj::object body = body_of(request);
    if (path == "/detokenize") {
      std::string text;
      for (const auto& id : body.at("tokens").as_array()) {
        if (id.as_int64() >= kVocab) {
          write_all(fd, http_response(400, R"({"error":{"message":"Token id out of vocabulary","code":400}})"));
          return;
        }
        text += piece(id.as_int64());
      }
      write_all(fd, http_response(200, bj::serialize(bj::object{{"prompt", text}})));
      return;
    }
    int64_t count = 0;
    if (body.contains("messages")) {
      std::string content(body.at("messages").as_array()[0].as_object().at("content").as_string());
      const bool generation_prompt =
          !body.contains("add_generation_prompt") || body.at("add_generation_prompt").as_bool();
      // trim(): the first word loses its space; a-m words stay one token, the rest are bytes.
      if (!content.empty() && content[0] == ' ') {
        content.erase(0, 1);
        const size_t end = std::min(content.find(' '), content.size());
        count += content[0] <= 'm' ? 1 : static_cast<int64_t>(end);
        content.erase(0, end);
      }
      count += count_text(content) + 2 + (generation_prompt ? 1 : 0);
    } else {
      count = count_text(std::string(body.at("prompt").as_string()));
      if (!body.contains("add_special_tokens") || body.at("add_special_tokens").as_bool()) ++count;
    }
    bj::array tokens;
    for (int64_t index = 0; index < count; ++index) tokens.push_back(index == 0 && count == 1 ? 0 : 1);
    write_all(fd, http_response(
                      200, bj::serialize(bj::object{{"count", count}, {"max_model_len", 4096}, {"tokens", tokens}})));
  }

  std::atomic<int> requests_{0};
  ScriptedServer server_;
};

ServerPromptOptions options_for(const std::string& base_url, workload::PromptFormat format, uint64_t seed = 7) {
  ServerPromptOptions options;
  options.base_url = *http::Url::parse(base_url);
  options.model = "toy";
  options.format = format;
  options.seed = seed;
  options.request_timeout_ns = 10'000'000'000;
  return options;
}

std::vector<std::pair<size_t, int64_t>> lengths(size_t n, int64_t shortest, int64_t longest) {
  std::vector<std::pair<size_t, int64_t>> order;
  for (size_t index = 0; index < n; ++index) {
    order.emplace_back(index, shortest + static_cast<int64_t>(index * 37) % (longest - shortest + 1));
  }
  return order;
}

TEST(ServerPromptMaker, PlainPromptsHaveExactlyTheCountAndAreDeterministic) {
  ToyServer server;
  auto maker = ServerPromptMaker::create(options_for(server.base_url(), workload::PromptFormat::kPlain));
  ASSERT_TRUE(maker) << maker.error().to_string();
  EXPECT_EQ(maker->special_tokens(), 1);  // the toy's BOS
  EXPECT_EQ(maker->min_prompt_tokens(), 1);
  // The pool: the " word" pieces (not the upper-case ones) of ids 1..4095 (the scan batch of ids
  // 4096..6143 reaches past the vocabulary: its 400 ends the scan), in whole groups of 32.
  EXPECT_EQ(maker->pool().size(), (4095 - 4095 / 7) / 32 * 32);
  EXPECT_EQ(std::set<std::string>(maker->pool().begin(), maker->pool().end()).size(), maker->pool().size());
  for (const auto& word : maker->pool()) ASSERT_EQ(word.find('X'), std::string::npos) << word;

  const auto order = lengths(500, 1, 300);
  auto prompts = maker->make(order);
  ASSERT_TRUE(prompts) << prompts.error().to_string();
  ASSERT_EQ(prompts->size(), order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    // The server's count (BOS included) is the drawn length; a 1-token draw is BOS + one word.
    EXPECT_EQ(count_text((*prompts)[k]) + 1, std::max<int64_t>(order[k].second, 2)) << k;
  }
  // Same seed: the same prompts, also from a new maker and in another order.
  auto again = make_prompts_via_server(options_for(server.base_url(), workload::PromptFormat::kPlain), order);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *prompts);
  const std::vector<std::pair<size_t, int64_t>> reversed(order.rbegin(), order.rend());
  auto reordered = maker->make(reversed);
  ASSERT_TRUE(reordered);
  EXPECT_EQ(reordered->front(), prompts->back());
  // Another seed: other prompts.
  auto other = make_prompts_via_server(options_for(server.base_url(), workload::PromptFormat::kPlain, 8), order);
  ASSERT_TRUE(other);
  EXPECT_NE((*other)[10], (*prompts)[10]);
}

TEST(ServerPromptMaker, ChatContentCountsTheRenderedConversationEvenWhenTheTemplateTrims) {
  ToyServer server;
  auto maker = ServerPromptMaker::create(options_for(server.base_url(), workload::PromptFormat::kChatContent));
  ASSERT_TRUE(maker) << maker.error().to_string();
  const int64_t overhead = maker->chat_overhead_tokens();
  EXPECT_GE(overhead, 3);  // "<u>" "</u>" "<a>", plus the first word's cost when trimmed
  const int64_t before = server.requests();
  const auto order = lengths(400, maker->min_prompt_tokens(), 200);
  auto prompts = maker->make(order);
  ASSERT_TRUE(prompts) << prompts.error().to_string();
  EXPECT_GT(server.requests() - before, static_cast<int>(order.size()));  // some needed a second count
  for (size_t k = 0; k < order.size(); ++k) {
    std::string content = (*prompts)[k];
    ASSERT_EQ(content[0], ' ');
    content.erase(0, 1);
    const size_t end = std::min(content.find(' '), content.size());
    const int64_t first = content[0] <= 'm' ? 1 : static_cast<int64_t>(end);
    EXPECT_EQ(first + count_text(content.substr(end)) + 3, order[k].second) << k;
  }
  const std::pair<size_t, int64_t> too_short[] = {{0, maker->min_prompt_tokens() - 1}};
  auto refused = maker->make(too_short);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("chat template"), std::string::npos) << refused.error().message();
}

TEST(ServerPromptMaker, ExtraBodyFieldsReachEveryTokenize) {
  ToyServer server;
  auto options = options_for(server.base_url(), workload::PromptFormat::kPlain);
  options.tokenize_extra_body["add_special_tokens"] = false;  // the measured requests send it
  auto maker = ServerPromptMaker::create(options);
  ASSERT_TRUE(maker) << maker.error().to_string();
  EXPECT_EQ(maker->special_tokens(), 0);
  const std::pair<size_t, int64_t> one[] = {{3, 50}};
  auto prompts = maker->make(one);
  ASSERT_TRUE(prompts);
  EXPECT_EQ(count_text((*prompts)[0]), 50);
}

TEST(ServerPromptMaker, ErrorsNameTheEndpointAndTheAnswer) {
  // A server without the tokenizer endpoints (an OpenAI-only gateway).
  ScriptedServer none(ScriptedServer::per_request(
      [](int fd, const std::string&) { write_all(fd, http_response(404, R"({"detail":"Not Found"})")); }));
  auto missing = ServerPromptMaker::create(options_for(none.base_url(), workload::PromptFormat::kPlain));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(missing.error().message().find("POST " + none.base_url() + "/tokenize answered HTTP 404"),
            std::string::npos)
      << missing.error().message();
  EXPECT_NE(missing.error().message().find("Not Found"), std::string::npos) << missing.error().message();

  // /tokenize but no /detokenize.
  ScriptedServer half(ScriptedServer::per_request([](int fd, const std::string& request) {
    if (path_of(request) == "/detokenize") {
      write_all(fd, http_response(404, R"({"detail":"Not Found"})"));
    } else {
      write_all(fd, http_response(200, R"({"count":1,"max_model_len":8,"tokens":[5]})"));
    }
  }));
  auto no_detokenize = ServerPromptMaker::create(options_for(half.base_url(), workload::PromptFormat::kPlain));
  ASSERT_FALSE(no_detokenize);
  EXPECT_NE(no_detokenize.error().message().find("/detokenize answered HTTP 404"), std::string::npos)
      << no_detokenize.error().message();

  // A failing server, and one answering in another shape.
  ScriptedServer failing(ScriptedServer::per_request(
      [](int fd, const std::string&) { write_all(fd, http_response(500, R"({"error":{"message":"boom"}})")); }));
  auto failed = ServerPromptMaker::create(options_for(failing.base_url(), workload::PromptFormat::kPlain));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(failed.error().message().find("HTTP 500: {\"error\":{\"message\":\"boom\"}}"), std::string::npos)
      << failed.error().message();
  ScriptedServer odd(ScriptedServer::per_request(
      [](int fd, const std::string&) { write_all(fd, http_response(200, R"({"ids":[1]})")); }));
  auto shape = ServerPromptMaker::create(options_for(odd.base_url(), workload::PromptFormat::kPlain));
  ASSERT_FALSE(shape);
  EXPECT_EQ(shape.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(shape.error().message().find("\"tokens\""), std::string::npos) << shape.error().message();

  // Nobody listening.
  auto options = options_for("http://127.0.0.1:1", workload::PromptFormat::kPlain);
  auto unreachable = ServerPromptMaker::create(options);
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(unreachable.error().message().find("POST http://127.0.0.1:1/tokenize failed"), std::string::npos)
      << unreachable.error().message();

  // A client-side chat template needs a local tokenizer.
  auto rendered = ServerPromptMaker::create(options_for("http://127.0.0.1:1", workload::PromptFormat::kChatRendered));
  ASSERT_FALSE(rendered);
  EXPECT_EQ(rendered.error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace ix::bench
