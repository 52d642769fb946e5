// Loader errors, UTF-8 repair, regex rewriting, thread-safety and load time (resolution of model
// names: resolve_test.cc). Token ids are never hard-coded here: exactness is oracle_test.cc's job.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "common/utf8.h"
#include "oracle_support.h"
#include "tokenizer/regex.h"

namespace ix::tok {
namespace {

constexpr std::string_view kMinimal = R"({
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
  "pre_tokenizer": null, "normalizer": null, "post_processor": null, "decoder": null,
  "added_tokens": [{"id": 3, "content": "<s>", "special": true, "lstrip": false, "rstrip": false,
                    "normalized": false, "single_word": false}]
})";

std::string with(std::string_view key, std::string_view json) {
  std::string text(kMinimal);
  const std::string needle = "\"" + std::string(key) + "\": null";
  text.replace(text.find(needle), needle.size(), "\"" + std::string(key) + "\": " + std::string(json));
  return text;
}

TEST(Tokenizer, MinimalBpeLoadsAndRoundTrips) {
  auto t = Tokenizer::from_json(kMinimal);
  ASSERT_TRUE(t) << t.error().to_string();
  const auto ids = (*t)->encode("abab<s>a", false);
  EXPECT_EQ(ids.size(), 4u);  // "ab" "ab" "<s>" "a": the one merge applies
  EXPECT_EQ((*t)->token_to_id("ab"), ids[0]);
  EXPECT_EQ((*t)->token_to_id("<s>"), ids[2]);
  EXPECT_TRUE((*t)->is_special(ids[2]));
  EXPECT_EQ((*t)->vocab_size(), 4);
  EXPECT_EQ((*t)->id_to_token(ids[0]), "ab");
  EXPECT_FALSE((*t)->id_to_token(99));
  EXPECT_FALSE((*t)->token_to_id("zz"));
  EXPECT_EQ((*t)->count_tokens("abab<s>a"), 4u);
  EXPECT_EQ((*t)->added_tokens().size(), 1u);
}

TEST(Tokenizer, UnsupportedComponentsAreNamedErrors) {
  const std::pair<const char*, std::string> cases[] = {
      {"Metaspace", with("pre_tokenizer", R"({"type": "Metaspace", "replacement": "_"})")},
      {"Lowercase", with("normalizer", R"({"type": "Lowercase"})")},
      {"WordPiece", with("decoder", R"({"type": "WordPiece"})")},
      {"RobertaProcessing", with("post_processor", R"({"type": "RobertaProcessing"})")},
      {"Unigram", R"({"model": {"type": "Unigram", "vocab": []}})"},
      {"byte_fallback", R"({"model": {"type": "BPE", "byte_fallback": true, "vocab": {}, "merges": []}})"},
      {"dropout", R"({"model": {"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}})"},
      {"truncation", R"({"truncation": {"max_length": 8}, "model": {"type": "BPE", "vocab": {}, "merges": []}})"},
      {"single_word", R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "added_tokens": [{"id": 0,
        "content": "x", "single_word": true}]})"},
  };
  for (const auto& [name, json] : cases) {
    auto t = Tokenizer::from_json(json);
    ASSERT_FALSE(t) << name;
    EXPECT_EQ(t.error().code(), ErrorCode::kUnsupported) << name << ": " << t.error().to_string();
    EXPECT_NE(t.error().message().find(name), std::string::npos) << t.error().message();
  }
}

TEST(Tokenizer, MalformedFilesAreClearErrors) {
  auto t = Tokenizer::from_json("{\"model\": {\n \"vocab\": [}", "", "bad.json");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code(), ErrorCode::kParse);
  EXPECT_NE(t.error().message().find("bad.json:2:"), std::string::npos) << t.error().message();

  const char* invalid[] = {
      R"([1, 2])",
      R"({"no_model": 1})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})",  // b not in vocab
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}})",    // not a pair
      R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})",     // id not integer
      R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "added_tokens": [{"content": 5}]})",
      R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Split"}})",
      R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Split",
         "pattern": {"Regex": "(unclosed"}}})",
  };
  for (const char* json : invalid) {
    auto r = Tokenizer::from_json(json);
    EXPECT_FALSE(r) << json;
    if (!r) {
      EXPECT_FALSE(r.error().message().empty());
    }
  }
  auto missing = Tokenizer::load("/nonexistent/dir");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(Tokenizer, IdsBeyondTheVocabularyAreRefusedWithTheFieldNamed) {
  // An id of 4e8 sized the id tables at 15 GB; 2e9 ended in std::bad_alloc.
  for (const char* id : {"400000000", "2000000000", "5000000000", "3", "-1"}) {
    const std::string json =
        std::string(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": )") + id + R"(}, "merges": ["a b"]}})";
    auto t = Tokenizer::from_json(json, "", "corrupt/tokenizer.json");
    ASSERT_FALSE(t) << id;
    EXPECT_EQ(t.error().code(), ErrorCode::kInvalidArgument) << t.error().to_string();
    EXPECT_NE(t.error().message().find(std::string("model.vocab['ab'] = ") + id), std::string::npos)
        << t.error().message();
    EXPECT_NE(t.error().message().find("corrupt/tokenizer.json"), std::string::npos) << t.error().message();
  }
  const std::string bad_special = with("post_processor", R"({"type": "TemplateProcessing", "single": [
      {"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
      "special_tokens": {"<s>": {"ids": [300000000]}}})");
  auto t = Tokenizer::from_json(bad_special);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message().find("special token id 300000000"), std::string::npos) << t.error().message();
}

TEST(Utf8, LossyRepairFollowsMaximalSubparts) {
  EXPECT_TRUE(utf8::is_valid("plain ascii"));
  EXPECT_TRUE(utf8::is_valid("東京 👍🏽"));
  EXPECT_FALSE(utf8::is_valid("\xE6\x9D"));
  EXPECT_EQ(utf8::to_valid("a\xE6\x9D"
                           "b"),
            "a\xEF\xBF\xBD"
            "b");                                                                     // truncated 3-byte: one U+FFFD
  EXPECT_EQ(utf8::to_valid("\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // each stray continuation
  EXPECT_EQ(utf8::to_valid("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(utf8::to_valid("\xF0\x9F\x91"), "\xEF\xBF\xBD");                          // truncated 4-byte
  EXPECT_EQ(utf8::to_valid("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
}

TEST(Utf8, EncodeRepairsInvalidInputInsteadOfFailing) {
  auto t = Tokenizer::from_json(kMinimal);
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->encode("ab\xFF"
                         "ab",
                         false),
            (*t)->encode("ab\xEF\xBF\xBD"
                         "ab",
                         false));
}

TEST(Regex, WhitespaceClassesAreRewrittenToUnicodeWhiteSpace) {
  const std::string rewritten = rewrite_whitespace_classes(R"(\s+(?!\S)|[^\s\p{L}]|[\]\s]|\\s)");
  EXPECT_EQ(rewritten.find("\\s"), rewritten.find("\\\\s") + 1);  // only the escaped backslash remains
  auto re = Regex::compile(R"(\s+)");
  ASSERT_TRUE(re);
  size_t s = 0;
  size_t e = 0;
  // U+180E is not White_Space (Oniguruma), although PCRE2's UCP \s would match it.
  EXPECT_FALSE(re->find("\xE1\xA0\x8E", 0, s, e));
  EXPECT_TRUE(re->find("x\xC2\x85y", 0, s, e));  // U+0085 is
  EXPECT_EQ(s, 1u);
  EXPECT_EQ(e, 3u);
  EXPECT_FALSE(Regex::compile("(unclosed"));
}

TEST(Regex, CategoryClassesFollowOnigurumasNewerUnicode) {
  // U+1F6DC (So) and U+31350 (Lo) were assigned in Unicode 15.0, after PCRE2 10.42's tables.
  size_t s = 0;
  size_t e = 0;
  auto symbol = Regex::compile(R"(^ ?[\p{P}\p{S}]+$)");
  ASSERT_TRUE(symbol);
  EXPECT_TRUE(symbol->find(" \xF0\x9F\x9B\x9C", 0, s, e));
  auto letter = Regex::compile(R"(^\p{L}+$)");
  ASSERT_TRUE(letter);
  EXPECT_TRUE(letter->find("a\xF0\xB1\x8D\x90", 0, s, e));
  auto not_letter = Regex::compile(R"(^\P{L}$)");
  ASSERT_TRUE(not_letter);
  EXPECT_FALSE(not_letter->find("\xF0\xB1\x8D\x90", 0, s, e));
}

TEST(Tokenizer, ConcurrentEncodesAgree) {
  const std::string path = testing::tokenizer_json("deepseek_v3");
  if (path.empty()) GTEST_SKIP() << "run scripts/bootstrap.sh";
  auto t = Tokenizer::load(path);
  ASSERT_TRUE(t);
  const auto texts = testing::corpus_texts();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& text : texts) expected.push_back((*t)->encode(text, true));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if ((*t)->encode(texts[i], true) != expected[i]) ++failures[static_cast<size_t>(k)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST(Tokenizer, DeepSeekLoadsWellUnderASecond) {
  const std::string path = testing::tokenizer_json("deepseek_v3");
  if (path.empty()) GTEST_SKIP() << "run scripts/bootstrap.sh";
  const auto start = std::chrono::steady_clock::now();
  auto t = Tokenizer::load(path);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(t);
  EXPECT_LT(seconds, 1.0);
  EXPECT_TRUE((*t)->config().add_bos_token);
  EXPECT_EQ((*t)->config().bos_token, "<｜begin▁of▁sentence｜>");
  EXPECT_TRUE((*t)->config().chat_template.has_value());
}

}  // namespace
}  // namespace ix::tok
