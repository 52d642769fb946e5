// Chat templates: the model's own Jinja template against goldens rendered from the real
// templates with Jinja2 (tests/oracle/render_chat_templates.py, which also documents the
// hand-derived harmony and DeepSeek-V4 goldens), where templates come from, and template overhead
// against the tokenizer.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
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

constexpr std::string_view kTinyTokenizer = R"({
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
  "pre_tokenizer": null, "normalizer": null, "post_processor": null, "decoder": null, "added_tokens": []
})";

// A temporary directory removed at the end of the test.
struct TempDir {
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("ixbench-chat-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  void write(const std::string& name, std::string_view text) const {
    std::ofstream out(path / name, std::ios::binary);
    out << text;
  }
  std::filesystem::path path;
  static inline int counter = 0;
};

TEST(ChatTemplate, MatchesJinjaGoldens) {
  std::ifstream in(ix::testing::source_path("tests/unit/tokenizer/chat_goldens.json"));
  ASSERT_TRUE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto root = boost::json::parse(buffer.str()).as_object();
  const auto& conversations = root.at("conversations").as_object();
  std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;
  size_t checked = 0;
  for (const auto& golden : root.at("goldens").as_array()) {
    const auto& g = golden.as_object();
    const std::string name(g.at("template").as_string());
    std::optional<ChatTemplate> chat;
    if (name == "harmony") {
      chat = ChatTemplate::harmony();
    } else if (name == "deepseek_v4") {
      chat = ChatTemplate::deepseek_v4();
    } else {
      auto& tokenizer = tokenizers[name];
      if (!tokenizer) {
        const std::string path = testing::tokenizer_json(name);
        if (path.empty()) GTEST_SKIP() << "tokenizer package for " << name << " missing; run scripts/bootstrap.sh";
        auto loaded = Tokenizer::load(path);
        ASSERT_TRUE(loaded) << loaded.error().to_string();
        tokenizer = std::move(*loaded);
      }
      auto own = ChatTemplate::for_tokenizer(*tokenizer);
      ASSERT_TRUE(own) << own.error().to_string();
      ASSERT_TRUE(own->is_jinja()) << name;
      chat = std::move(*own);
    }
    std::vector<ChatMessage> messages;
    for (const auto& m : conversations.at(g.at("conversation").as_string()).as_array()) {
      messages.push_back({std::string(m.at("role").as_string()), std::string(m.at("content").as_string())});
    }
    ChatOptions options;
    options.add_generation_prompt = g.at("add_generation_prompt").as_bool();
    options.thinking = parse_thinking(g.at("thinking").as_string());
    options.current_date = "2025-06-28";
    auto rendered = chat->render(messages, options);
    ASSERT_TRUE(rendered) << rendered.error().to_string();
    EXPECT_EQ(*rendered, std::string(g.at("expected").as_string()))
        << name << " / " << g.at("conversation").as_string() << " gen=" << options.add_generation_prompt
        << " thinking=" << g.at("thinking").as_string();
    ++checked;
  }
  EXPECT_GE(checked, 100u);
}

TEST(ChatTemplate, DeepSeekV4NativeEncoding) {
  const ChatTemplate chat = ChatTemplate::deepseek_v4();
  EXPECT_EQ(chat.name(), "deepseek_v4");
  EXPECT_FALSE(chat.is_jinja());
  ChatOptions thinking;
  thinking.thinking = Thinking::kOn;
  for (const std::string content : {"Hello, who are you?", "", "多行\n内容 <think> 👍"}) {
    const ChatMessage user{"user", content};
    EXPECT_EQ(*chat.render(std::span(&user, 1), thinking),
              "<｜begin▁of▁sentence｜><｜User｜>" + content + "<｜Assistant｜><think>");
    EXPECT_EQ(*chat.render(std::span(&user, 1)),
              "<｜begin▁of▁sentence｜><｜User｜>" + content + "<｜Assistant｜></think>");
  }
}

TEST(ChatTemplate, ForTokenizerUsesTheModelsOwnTemplate) {
  size_t found = 0;
  for (const char* family : testing::kFamilies) {
    const std::string path = testing::tokenizer_json(family);
    if (path.empty()) continue;
    auto tokenizer = Tokenizer::load(path);
    ASSERT_TRUE(tokenizer) << tokenizer.error().to_string();
    auto chat = ChatTemplate::for_tokenizer(**tokenizer);
    ASSERT_TRUE(chat) << family << ": " << chat.error().to_string();
    if (std::string_view(family) == "gptoss") {
      // The package ships no template; its harmony vocabulary selects the native encoding.
      EXPECT_EQ(chat->name(), "harmony");
    } else {
      EXPECT_TRUE(chat->is_jinja()) << family;
      EXPECT_TRUE(chat->name().ends_with("tokenizer_config.json chat_template")) << chat->name();
    }
    ++found;
  }
  if (found == 0) GTEST_SKIP() << "no tokenizer packages installed; run scripts/bootstrap.sh";
}

TEST(ChatTemplate, ForTokenizerReadsNamedTemplatesAndJinjaFiles) {
  // A list of named templates: "default" is the one rendered.
  auto named = Tokenizer::from_json(kTinyTokenizer, R"({"bos_token": {"content": "<s>"}, "chat_template": [
      {"name": "tool_use", "template": "T"}, {"name": "default", "template": "{{ bos_token }}D:{{ messages[0].content }}"}]})",
                                    "tiny.json");
  ASSERT_TRUE(named) << named.error().to_string();
  auto chat = ChatTemplate::for_tokenizer(**named);
  ASSERT_TRUE(chat) << chat.error().to_string();
  const ChatMessage hi{"user", "hi"};
  EXPECT_EQ(*chat->render(std::span(&hi, 1)), "<s>D:hi");

  // No "default": not found, naming what is there.
  auto nameless = Tokenizer::from_json(kTinyTokenizer, R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  ASSERT_TRUE(nameless);
  auto missing = ChatTemplate::for_tokenizer(**nameless);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("rag"), std::string::npos) << missing.error().message();

  // chat_template.jinja beside tokenizer.json wins over tokenizer_config.json.
  TempDir dir;
  dir.write("tokenizer.json", kTinyTokenizer);
  dir.write("tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": "from config"})");
  dir.write("chat_template.jinja", "{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}\n");
  auto from_dir = Tokenizer::load(dir.path);
  ASSERT_TRUE(from_dir) << from_dir.error().to_string();
  chat = ChatTemplate::for_tokenizer(**from_dir);
  ASSERT_TRUE(chat) << chat.error().to_string();
  EXPECT_EQ(chat->name(), (dir.path / "chat_template.jinja").string());
  EXPECT_EQ(*chat->render(std::span(&hi, 1)), "[user]hi</s>");

  // Neither: kNotFound naming both files.
  std::filesystem::remove(dir.path / "chat_template.jinja");
  dir.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  auto bare = Tokenizer::load(dir.path);
  ASSERT_TRUE(bare);
  missing = ChatTemplate::for_tokenizer(**bare);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find((dir.path / "tokenizer_config.json").string()), std::string::npos);
  EXPECT_NE(missing.error().message().find((dir.path / "chat_template.jinja").string()), std::string::npos);

  // A template that does not parse is a parse error with its position.
  auto broken = Tokenizer::from_json(kTinyTokenizer, R"({"chat_template": "{% for m in messages %}\n{{ m.content"})");
  ASSERT_TRUE(broken);
  auto bad = ChatTemplate::for_tokenizer(**broken);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kParse);
  EXPECT_NE(bad.error().message().find("tokenizer_config.json chat_template:2:"), std::string::npos)
      << bad.error().message();
}

TEST(ChatTemplate, FromSpecAcceptsAutoNativeNamesAndFiles) {
  auto tiny = Tokenizer::from_json(kTinyTokenizer, R"({"chat_template": "own:{{ messages[0].content }}"})");
  ASSERT_TRUE(tiny);
  const ChatMessage hi{"user", "hi"};
  EXPECT_EQ(*ChatTemplate::from_spec("auto", **tiny)->render(std::span(&hi, 1)), "own:hi");
  EXPECT_EQ(ChatTemplate::from_spec("deepseek_v4", **tiny)->name(), "deepseek_v4");
  EXPECT_EQ(ChatTemplate::from_spec("harmony", **tiny)->name(), "harmony");
  TempDir dir;
  dir.write("t.jinja", "file:{{ messages|length }}");
  EXPECT_EQ(*ChatTemplate::from_spec((dir.path / "t.jinja").string(), **tiny)->render(std::span(&hi, 1)), "file:1");
  auto unknown = ChatTemplate::from_spec("chatml", **tiny);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
}

TEST(ChatTemplate, PassesToolsThinkingAndExtraVariables) {
  auto chat = ChatTemplate::from_jinja(
      "{{ tools is none }}|{{ tools|tojson if tools else '' }}|{{ enable_thinking is defined }}|{{ thinking }}|"
      "{{ reasoning_effort }}|{{ custom }}|{{ strftime_now('%d %b %Y') }}|{{ messages[1].tool_calls[0].function.name "
      "}}",
      "vars");
  ASSERT_TRUE(chat) << chat.error().to_string();
  auto messages = jinja::Value::from_json(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}])");
  ASSERT_TRUE(messages);
  ChatOptions options;
  options.current_date = "2025-06-28";
  EXPECT_EQ(*chat->render(*messages, options), "True||False||||28 Jun 2025|f");
  options.thinking = Thinking::kOff;
  options.reasoning_effort = "high";
  options.tools = *jinja::Value::from_json(R"([{"type": "function"}])");
  options.extra = {{"custom", jinja::Value("x")}};
  EXPECT_EQ(*chat->render(*messages, options), "False|[{\"type\": \"function\"}]|True|False|high|x|28 Jun 2025|f");
  options.current_date = "June";
  EXPECT_FALSE(chat->render(*messages, options));
}

TEST(ChatTemplate, RejectsUnknownRolesAndEmptyConversations) {
  const std::vector<ChatMessage> tool{{"user", "hi"}, {"tool", "42"}};
  for (const ChatTemplate& chat : {ChatTemplate::deepseek_v4(), ChatTemplate::harmony()}) {
    auto r = chat.render(tool);
    ASSERT_FALSE(r) << chat.name();
    EXPECT_NE(r.error().message().find("tool"), std::string::npos);
    EXPECT_FALSE(chat.render(std::span<const ChatMessage>()));
  }
  auto jinja_chat = ChatTemplate::from_jinja(
      "{{ raise_exception('no ' + messages[0].role) if messages[0].role == "
      "'tool' }}ok",
      "raising");
  ASSERT_TRUE(jinja_chat);
  EXPECT_FALSE(jinja_chat->render(std::span<const ChatMessage>()));
  const ChatMessage only_tool{"tool", "x"};
  auto raised = jinja_chat->render(std::span(&only_tool, 1));
  ASSERT_FALSE(raised);
  EXPECT_NE(raised.error().message().find("raising:1:4: the template raised an error: no tool"), std::string::npos)
      << raised.error().message();
}

TEST(ChatTemplate, OverheadIsTheEmptyMessageTokenCount) {
  const std::string path = testing::tokenizer_json("qwen3");
  if (path.empty()) GTEST_SKIP() << "qwen3 tokenizer missing; run scripts/bootstrap.sh";
  auto tokenizer = Tokenizer::load(path);
  ASSERT_TRUE(tokenizer);
  auto chat = ChatTemplate::for_tokenizer(**tokenizer);
  ASSERT_TRUE(chat);
  auto overhead = chat->overhead_tokens(**tokenizer);
  ASSERT_TRUE(overhead);
  // <|im_start|> user \n <|im_end|> \n <|im_start|> assistant \n
  const ChatMessage empty{"user", ""};
  EXPECT_EQ(*overhead, (*tokenizer)->encode(*chat->render(std::span(&empty, 1)), false).size());
  EXPECT_GT(*overhead, 5u);
}

}  // namespace
}  // namespace ix::tok
