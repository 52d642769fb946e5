// Chat template rendering against goldens rendered from the real Jinja templates (see
// tests/oracle/render_chat_templates.py, which also documents the hand-derived harmony and
// DeepSeek-V4 goldens), and template overhead against the tokenizer.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "oracle_support.h"
#include "support/subprocess.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

Thinking parse_thinking(std::string_view name) {
  if (name == "on") return Thinking::kOn;
  if (name == "off") return Thinking::kOff;
  return Thinking::kDefault;
}

TEST(ChatTemplate, MatchesJinjaGoldens) {
  std::ifstream in(ix::testing::source_path("tests/unit/tokenizer/chat_goldens.json"));
  ASSERT_TRUE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto root = boost::json::parse(buffer.str()).as_object();
  const auto& conversations = root.at("conversations").as_object();
  size_t checked = 0;
  for (const auto& golden : root.at("goldens").as_array()) {
    const auto& g = golden.as_object();
    auto family = parse_chat_family(g.at("family").as_string());
    ASSERT_TRUE(family) << family.error().to_string();
    std::vector<ChatMessage> messages;
    for (const auto& m : conversations.at(g.at("conversation").as_string()).as_array()) {
      messages.push_back({std::string(m.at("role").as_string()), std::string(m.at("content").as_string())});
    }
    ChatOptions options;
    options.add_generation_prompt = g.at("add_generation_prompt").as_bool();
    options.thinking = parse_thinking(g.at("thinking").as_string());
    options.current_date = "2025-06-28";
    auto rendered = ChatTemplate(*family).render(messages, options);
    ASSERT_TRUE(rendered) << rendered.error().to_string();
    EXPECT_EQ(*rendered, std::string(g.at("expected").as_string()))
        << g.at("family").as_string() << " / " << g.at("conversation").as_string()
        << " gen=" << options.add_generation_prompt << " thinking=" << g.at("thinking").as_string();
    ++checked;
  }
  EXPECT_GE(checked, 80u);
}

TEST(ChatTemplate, RejectsUnknownRolesAndEmptyConversations) {
  const std::vector<ChatMessage> tool{{"user", "hi"}, {"tool", "42"}};
  for (auto family : {ChatFamily::kDeepSeekV3, ChatFamily::kDeepSeekV4, ChatFamily::kChatMl, ChatFamily::kLlama3,
                      ChatFamily::kHarmony}) {
    auto r = ChatTemplate(family).render(tool);
    ASSERT_FALSE(r) << chat_family_name(family);
    EXPECT_NE(r.error().message().find("tool"), std::string::npos);
    EXPECT_FALSE(ChatTemplate(family).render({}));
  }
}

TEST(ChatTemplate, ForModelMapsHfNames) {
  EXPECT_EQ(ChatTemplate::for_model("deepseek-ai/DeepSeek-R1-0528")->family(), ChatFamily::kDeepSeekV3);
  EXPECT_EQ(ChatTemplate::for_model("deepseek-ai/DeepSeek-V4-Pro")->family(), ChatFamily::kDeepSeekV4);
  EXPECT_EQ(ChatTemplate::for_model("Qwen/Qwen3-235B-A22B")->family(), ChatFamily::kChatMl);
  EXPECT_EQ(ChatTemplate::for_model("meta-llama/Llama-3.1-70B-Instruct")->family(), ChatFamily::kLlama3);
  EXPECT_EQ(ChatTemplate::for_model("openai/gpt-oss-120b")->family(), ChatFamily::kHarmony);
  EXPECT_FALSE(ChatTemplate::for_model("mistralai/Mistral-7B"));
  EXPECT_FALSE(parse_chat_family("jinja"));
}

TEST(ChatTemplate, OverheadIsTheEmptyMessageTokenCount) {
  const std::string path = testing::tokenizer_json("qwen3");
  if (path.empty()) GTEST_SKIP() << "qwen3 tokenizer missing; run scripts/bootstrap.sh";
  auto tokenizer = Tokenizer::load(path);
  ASSERT_TRUE(tokenizer);
  const ChatTemplate chat(ChatFamily::kChatMl);
  auto overhead = chat.overhead_tokens(**tokenizer);
  ASSERT_TRUE(overhead);
  // <|im_start|> user \n <|im_end|> \n <|im_start|> assistant \n
  const ChatMessage empty{"user", ""};
  EXPECT_EQ(*overhead, (*tokenizer)->encode(*chat.render(std::span(&empty, 1)), false).size());
  EXPECT_GT(*overhead, 5u);
}

}  // namespace
}  // namespace ix::tok
