// `ixbench sim serve --gsm8k-answers` over real HTTP: reference answers for GSM8K prompts (chat
// and completions, streamed and not, in every engine mode), stop strings and max_tokens on the
// answer, runaways past the end-of-turn marker, the /metrics counters, the whole test split at
// concurrency 64 with --no-delay, and the flag and dataset errors.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "metrics/prometheus.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace bj = boost::json;

constexpr std::string_view kInstruction =
    "\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:";
constexpr std::string_view kDeepseekEos = "<\uff5cend\u2581of\u2581sentence\uff5c>";

// Two problems in test.jsonl's shape, with their reference solutions.
constexpr std::string_view kSmallSplit =
    R"({"question": "Tom has 3 apples and buys 4 more. How many apples does he have?", "answer": "He has 3+4=<<3+4=7>>7 apples.\nThat is all.\n#### 7"})"
    "\n"
    R"({"question": "A box holds 1,200 pens. How many pens are in 2 boxes?", "answer": "2*1,200=<<2*1200=2400>>2,400\n#### 2,400"})"
    "\n";
const std::string kQuestion0 = "Tom has 3 apples and buys 4 more. How many apples does he have?";
const std::string kAnswer0 = "He has 3+4=7 apples.\nThat is all.\n#### 7";
const std::string kQuestion1 = "A box holds 1,200 pens. How many pens are in 2 boxes?";
const std::string kAnswer1 = "2*1,200=2,400\n#### 2,400";

std::filesystem::path small_split_dir(const std::string& name, std::string_view text = kSmallSplit) {
  const auto dir = scratch_dir(name);
  std::ofstream(dir / "test.jsonl") << text;
  return dir;
}

std::unique_ptr<ServerProcess> start(std::vector<std::string> args) {
  auto server = ServerProcess::start(args);
  EXPECT_TRUE(server) << server.error().message();
  return server ? std::move(*server) : nullptr;
}

// InferenceX's prompt: a few-shot example, then the question.
std::string inferencex_prompt(const std::string& question) {
  return "Question: Ann has 2 pens. How many?" + std::string(kInstruction) +
         " She has 2.\n#### 2\n\nQuestion: " + question + std::string(kInstruction);
}

bj::object chat_body(const std::string& question, bj::object extra = {}) {
  bj::object body{{"model", "m"},
                  {"messages", bj::array{bj::object{{"role", "user"}, {"content", inferencex_prompt(question)}}}},
                  {"max_tokens", 400}};
  for (const auto& field : extra) body[field.key()] = field.value();
  return body;
}

struct Answer {
  int status = 0;
  std::string text;
  std::string finish_reason;
  bj::value stop_reason;
  int64_t completion_tokens = -1;
  std::string raw;
};

// The answer of one request, streamed or not (chat: message.content / delta.content; completions:
// text), with finish_reason and usage.
Answer ask(const ServerProcess& server, const std::string& path, bj::object body) {
  const bool stream = body.contains("stream") && body.at("stream").as_bool();
  if (stream) body["stream_options"] = bj::object{{"include_usage", true}};
  auto client = RawHttpClient::connect(server.port());
  EXPECT_TRUE(client);
  if (!client) return {};
  EXPECT_TRUE(client->send(make_post(path, bj::serialize(body))));
  auto response = client->read_response(60.0);
  EXPECT_TRUE(response && response->complete);
  if (!response) return {};
  Answer answer{.status = response->status, .raw = response->body};
  if (response->status != 200) return answer;
  auto take_choice = [&](const bj::object& choice) {
    if (const auto* text = choice.if_contains("text")) answer.text += text->as_string();
    for (const char* key : {"message", "delta"})
      if (const auto* part = choice.if_contains(key))
        if (const auto* content = part->as_object().if_contains("content"); content && content->is_string())
          answer.text += content->as_string();
    if (const auto& finish = choice.at("finish_reason"); finish.is_string()) {
      answer.finish_reason = finish.as_string();
      answer.stop_reason = choice.at("stop_reason");
    }
  };
  auto take = [&](const bj::object& object) {
    for (const auto& choice : object.at("choices").as_array()) take_choice(choice.as_object());
    if (const auto* usage = object.if_contains("usage"); usage && usage->is_object())
      answer.completion_tokens = usage->at("completion_tokens").as_int64();
  };
  if (!stream) {
    take(bj::parse(response->body).as_object());
    return answer;
  }
  for (const auto& line : sse_data_lines(response->body))
    if (line != "[DONE]") take(bj::parse(line).as_object());
  return answer;
}

int64_t token_count(const ServerProcess& server, const std::string& text) {
  auto client = RawHttpClient::connect(server.port());
  EXPECT_TRUE(client);
  if (!client) return -1;
  bj::object body{{"prompt", text}, {"add_special_tokens", false}};
  EXPECT_TRUE(client->send(make_post("/tokenize", bj::serialize(body))));
  auto response = client->read_response(10.0);
  EXPECT_TRUE(response && response->status == 200);
  return response ? bj::parse(response->body).at("count").as_int64() : -1;
}

std::map<std::string, double> metrics_of(const ServerProcess& server) {
  auto client = RawHttpClient::connect(server.port());
  EXPECT_TRUE(client);
  if (!client) return {};
  EXPECT_TRUE(client->send(make_get("/metrics")));
  auto response = client->read_response(10.0);
  EXPECT_TRUE(response);
  if (!response) return {};
  std::map<std::string, double> out;
  for (const auto& [name, value] : metrics::parse_prometheus_text(response->body)) out[name] = value;
  std::istringstream lines(response->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("ixbench:gsm8k_answered_total{correct=\"")) {
      const size_t space = line.rfind(' ');
      out[line.substr(0, line.find(',', 0))] = std::stod(line.substr(space + 1));
    }
  }
  return out;
}

TEST(SimGsm8k, ChatGetsTheReferenceAnswerWithExactTokenCounts) {
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--served-model-name", "m", "--gsm8k-answers",
                       small_split_dir("gsm8k_chat").string(), "--gsm8k-accuracy", "1"});
  ASSERT_TRUE(server);
  for (bool stream : {false, true}) {
    const Answer answer = ask(*server, "/v1/chat/completions", chat_body(kQuestion0, {{"stream", stream}}));
    EXPECT_EQ(answer.status, 200) << answer.raw;
    EXPECT_EQ(answer.text, kAnswer0) << "stream " << stream;
    EXPECT_EQ(answer.finish_reason, "stop");
    EXPECT_EQ(answer.completion_tokens, token_count(*server, kAnswer0));
  }
}

TEST(SimGsm8k, CompletionsWithLmEvalPromptsGetTheirAnswer) {
  auto server = start({"--no-delay", "--tokenizer", "none", "--served-model-name", "m", "--gsm8k-answers",
                       small_split_dir("gsm8k_completions").string(), "--gsm8k-accuracy", "1"});
  ASSERT_TRUE(server);
  const std::string prompt =
      "Question: Ann has 2 pens. How many?\nAnswer: 2\n#### 2\n\nQuestion: " + kQuestion1 + "\nAnswer:";
  for (bool stream : {false, true}) {
    const Answer answer =
        ask(*server, "/v1/completions", bj::object{{"prompt", prompt}, {"max_tokens", 200}, {"stream", stream}});
    EXPECT_EQ(answer.text, kAnswer1) << "stream " << stream << "\n" << answer.raw;
    EXPECT_EQ(answer.finish_reason, "stop");
    EXPECT_EQ(answer.completion_tokens, token_count(*server, kAnswer1));
  }
}

// The same scripted text, counts and finish in each engine: the cost model, no-delay, fixed
// schedule; streamed and not.
TEST(SimGsm8k, EveryEngineModeStreamsTheSameAnswer) {
  const std::string dir = small_split_dir("gsm8k_modes").string();
  const std::vector<std::vector<std::string>> modes = {
      {"--tp", "8"}, {"--no-delay"}, {"--fixed-ttft-ms", "5", "--fixed-itl-ms", "1"}};
  for (const auto& mode : modes) {
    std::vector<std::string> args = mode;
    args.insert(args.end(), {"--tokenizer", "deepseek_v3", "--served-model-name", "m", "--gsm8k-answers", dir,
                             "--gsm8k-accuracy", "1"});
    auto server = start(args);
    ASSERT_TRUE(server);
    for (bool stream : {false, true}) {
      const Answer answer = ask(*server, "/v1/chat/completions", chat_body(kQuestion1, {{"stream", stream}}));
      EXPECT_EQ(answer.text, kAnswer1) << mode.front() << " stream " << stream << "\n" << answer.raw;
      EXPECT_EQ(answer.finish_reason, "stop") << mode.front();
      EXPECT_EQ(answer.completion_tokens, token_count(*server, kAnswer1)) << mode.front();
    }
  }
}

TEST(SimGsm8k, StopStringsAndMaxTokensCutTheAnswer) {
  auto server = start({"--fixed-ttft-ms", "1", "--fixed-itl-ms", "0", "--tokenizer", "none", "--served-model-name", "m",
                       "--gsm8k-answers", small_split_dir("gsm8k_stops").string(), "--gsm8k-accuracy", "1"});
  ASSERT_TRUE(server);
  for (bool stream : {false, true}) {
    const Answer cut = ask(*server, "/v1/chat/completions",
                           chat_body(kQuestion0, {{"stream", stream}, {"stop", bj::array{"\n", "</s>"}}}));
    EXPECT_EQ(cut.text, "He has 3+4=7 apples.") << cut.raw;
    EXPECT_EQ(cut.finish_reason, "stop");
    EXPECT_EQ(cut.stop_reason, bj::value("\n"));
    const Answer kept = ask(
        *server, "/v1/chat/completions",
        chat_body(kQuestion0, {{"stream", stream}, {"stop", bj::array{"That"}}, {"include_stop_str_in_output", true}}));
    EXPECT_EQ(kept.text, "He has 3+4=7 apples.\nThat") << kept.raw;
    const Answer short_answer =
        ask(*server, "/v1/chat/completions", chat_body(kQuestion0, {{"stream", stream}, {"max_tokens", 4}}));
    EXPECT_EQ(short_answer.finish_reason, "length");
    EXPECT_EQ(short_answer.completion_tokens, 4);
    EXPECT_TRUE(kAnswer0.starts_with(short_answer.text)) << short_answer.text;
    EXPECT_EQ(token_count(*server, short_answer.text), 4);
  }
}

// Runaway: the request's stops (here the marker itself) are ignored; the text runs past the
// family's end-of-turn marker into junk to max_tokens; cut at the marker, it is the answer.
TEST(SimGsm8k, RunawayRunsPastTheMarkerToMaxTokens) {
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--served-model-name", "deepseek-ai/DeepSeek-R1",
                       "--gsm8k-answers", small_split_dir("gsm8k_runaway").string(), "--gsm8k-accuracy", "1",
                       "--gsm8k-runaway-rate", "1"});
  ASSERT_TRUE(server);
  std::string streamed;
  for (bool stream : {false, true}) {
    bj::object body = chat_body(
        kQuestion0,
        {{"stream", stream}, {"max_tokens", 300}, {"stop", bj::array{"</s>", "<|im_end|>", bj::string(kDeepseekEos)}}});
    body["model"] = "deepseek-ai/DeepSeek-R1";
    const Answer answer = ask(*server, "/v1/chat/completions", body);
    EXPECT_EQ(answer.finish_reason, "length") << answer.raw;
    EXPECT_EQ(answer.completion_tokens, 300);
    EXPECT_TRUE(answer.text.starts_with(kAnswer0 + std::string(kDeepseekEos))) << answer.text;
    EXPECT_NE(answer.text.find("\n#### 8\n", kAnswer0.size()), std::string::npos) << answer.text;
    EXPECT_NE(answer.text.find("<\uff5cUser\uff5c>Question: "), std::string::npos);
    EXPECT_EQ(token_count(*server, answer.text), 300);
    if (stream) {
      EXPECT_EQ(answer.text, streamed);
    } else {
      streamed = answer.text;
    }
  }
  const auto counters = metrics_of(*server);
  EXPECT_EQ(counters.at("ixbench:gsm8k_runaway_total"), 2.0);
}

TEST(SimGsm8k, WrongAnswersAndUnmatchedPromptsAreCounted) {
  auto server = start({"--no-delay", "--tokenizer", "none", "--served-model-name", "m", "--gsm8k-answers",
                       small_split_dir("gsm8k_counted").string(), "--gsm8k-accuracy", "0"});
  ASSERT_TRUE(server);
  const Answer wrong = ask(*server, "/v1/chat/completions", chat_body(kQuestion1));
  EXPECT_TRUE(wrong.text.starts_with("2*1,200=2,400\n#### ")) << wrong.text;
  EXPECT_NE(wrong.text, kAnswer1);
  EXPECT_EQ(wrong.finish_reason, "stop");
  const Answer other = ask(*server, "/v1/chat/completions", chat_body("What is a question nobody asked?"));
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.text.find("####"), std::string::npos) << other.text;  // the ordinary passage
  const auto counters = metrics_of(*server);
  EXPECT_EQ(counters.at("ixbench:gsm8k_answered_total{correct=\"false\""), 1.0);
  EXPECT_EQ(counters.at("ixbench:gsm8k_answered_total{correct=\"true\""), 0.0);
  EXPECT_EQ(counters.at("ixbench:gsm8k_unmatched_total"), 1.0);
  EXPECT_EQ(counters.at("ixbench:gsm8k_runaway_total"), 0.0);
}

// The whole test split at concurrency 64 with --no-delay: every answer is its problem's script
// and the run takes seconds (the performance target of the mode).
TEST(SimGsm8k, NoDelayAnswersTheWholeTestSplitAtConcurrency64) {
  const std::string file = shared_path("data/gsm8k/test.jsonl");
  if (file.empty()) GTEST_SKIP() << shared_missing_message("data/gsm8k/test.jsonl");
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--served-model-name", "m", "--gsm8k-answers",
                       std::filesystem::path(file).parent_path().string(), "--gsm8k-accuracy", "1"});
  ASSERT_TRUE(server);
  std::vector<std::string> questions;
  std::vector<std::string> finals;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const bj::object problem = bj::parse(line).as_object();
    questions.emplace_back(problem.at("question").as_string());
    const std::string answer(problem.at("answer").as_string());
    finals.push_back(answer.substr(answer.rfind("#### ")));
  }
  ASSERT_EQ(questions.size(), 1319u);
  std::atomic<size_t> next{0};
  std::atomic<int> answered{0};
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int lane = 0; lane < 64; ++lane) {
    clients.emplace_back([&] {
      auto client = RawHttpClient::connect(server->port());
      if (!client) return;
      for (size_t index = next++; index < questions.size(); index = next++) {
        const bj::object body = chat_body(questions[index], {{"max_tokens", 2048}, {"stream", true}});
        if (!client->send(make_post("/v1/chat/completions", bj::serialize(body)))) return;
        auto response = client->read_response(60.0);
        if (!response || response->status != 200) return;
        std::string text;
        for (const auto& data : sse_data_lines(response->body)) {
          if (data == "[DONE]") continue;
          const bj::value chunk = bj::parse(data);
          for (const auto& choice : chunk.at("choices").as_array())
            if (const auto* content = choice.at("delta").as_object().if_contains("content"))
              text += content->as_string();
        }
        if (text.ends_with(finals[index]) && text.find("<<") == std::string::npos) ++answered;
      }
    });
  }
  for (auto& client : clients) client.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(answered.load(), 1319);
  EXPECT_LT(seconds, 60.0);  // seconds in a release build; the bound leaves room for sanitizers
  std::cerr << "1319 GSM8K answers at concurrency 64 in " << seconds << " s\n";
  EXPECT_EQ(metrics_of(*server).at("ixbench:gsm8k_answered_total{correct=\"true\""), 1319.0);
}

TEST(SimGsm8k, BadFlagsAreUsageErrorsNamingTheFlag) {
  const std::string dir = small_split_dir("gsm8k_flags").string();
  for (const std::string flag : {"--gsm8k-accuracy", "--gsm8k-runaway-rate"}) {
    for (const std::string value : {"1.5", "-0.1", "nan"}) {
      auto result = run_ixbench({"sim", "serve", "--no-delay", "--port", "0", "--gsm8k-answers", dir, flag, value});
      EXPECT_EQ(result.exit_code, 2) << flag << " " << value << ": " << result.err;
      EXPECT_NE(result.err.find(flag), std::string::npos) << result.err;
    }
  }
  for (const std::vector<std::string> alone : {std::vector<std::string>{"--gsm8k-accuracy", "0.5"},
                                               {"--gsm8k-runaway-rate", "0.5"},
                                               {"--gsm8k-model-family", "qwen"}}) {
    std::vector<std::string> args = {"sim", "serve", "--no-delay", "--port", "0"};
    args.insert(args.end(), alone.begin(), alone.end());
    auto result = run_ixbench(args);
    EXPECT_EQ(result.exit_code, 2) << alone.front() << ": " << result.err;
    EXPECT_NE(result.err.find(alone.front() + " requires --gsm8k-answers"), std::string::npos) << result.err;
  }
  auto family = run_ixbench(
      {"sim", "serve", "--no-delay", "--port", "0", "--gsm8k-answers", dir, "--gsm8k-model-family", "gpt5"});
  EXPECT_EQ(family.exit_code, 2) << family.err;
  EXPECT_NE(family.err.find("--gsm8k-model-family"), std::string::npos) << family.err;
}

TEST(SimGsm8k, MissingOrMalformedDatasetFailsAtStartWithFileAndLine) {
  const auto missing_dir = scratch_dir("gsm8k_missing") / "absent";
  auto missing = run_ixbench({"sim", "serve", "--no-delay", "--port", "0", "--gsm8k-answers", missing_dir.string()});
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_NE(missing.err.find("absent/test.jsonl"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out.find("listening on"), std::string::npos);
  const auto dir = small_split_dir("gsm8k_malformed", std::string(kSmallSplit) + "{\"question\": \"q\"}\n");
  auto malformed = run_ixbench({"sim", "serve", "--no-delay", "--port", "0", "--gsm8k-answers", dir.string()});
  EXPECT_EQ(malformed.exit_code, 1) << malformed.err;
  EXPECT_NE(malformed.err.find((dir / "test.jsonl").string() + ":3: missing field 'answer'"), std::string::npos)
      << malformed.err;
}

}  // namespace
}  // namespace ix::testing
