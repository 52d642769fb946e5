// Pipeline components the four real tokenizers do not use (other Split behaviours, String
// patterns, Digits, ByteLevel's own regex and prefix space, NFD/NFKC, lstrip/rstrip and
// normalized added tokens, TemplateProcessing with a suffix): variants of the real Qwen3
// tokenizer.json with those components swapped in, each checked against the oracle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "oracle_support.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

namespace bj = boost::json;

bj::value parse(std::string_view text) {
  return bj::parse(text);
}

struct Variant {
  const char* name;
  const char* normalizer;     // JSON or nullptr to keep
  const char* pre_tokenizer;  // JSON or nullptr to keep
  const char* post_processor;
  bool extra_added_tokens;
};

const Variant kVariants[] = {
    {"split_string_removed", nullptr,
     R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"String":" "},"behavior":"Removed","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})",
     nullptr, false},
    {"merged_with_previous", nullptr,
     R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\p{P}"},"behavior":"MergedWithPrevious","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})",
     nullptr, false},
    {"merged_with_next_digits", nullptr,
     R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"MergedWithNext","invert":false},{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})",
     nullptr, false},
    {"contiguous_inverted", nullptr,
     R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"[a-z]+"},"behavior":"Contiguous","invert":true},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})",
     nullptr, false},
    {"bytelevel_regex_prefix_nfkc", R"({"type":"NFKC"})",
     R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true})", nullptr, false},
    {"nfd_digits_contiguous", R"({"type":"Sequence","normalizers":[{"type":"NFD"}]})",
     R"({"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":true}]})",
     nullptr, false},
    {"added_flags_template", R"({"type":"NFKC"})", nullptr,
     R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|im_start|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|im_end|>","type_id":0}}],"pair":[],"special_tokens":{"<|im_start|>":{"id":"<|im_start|>","ids":[151644],"tokens":["<|im_start|>"]},"<|im_end|>":{"id":"<|im_end|>","ids":[151645],"tokens":["<|im_end|>"]}}})",
     true},
};

TEST(TokenizerVariants, MatchOracle) {
  if (auto reason = testing::oracle_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  const std::string base_path = testing::tokenizer_json("qwen3");
  if (base_path.empty()) GTEST_SKIP() << "qwen3 tokenizer missing; run scripts/bootstrap.sh";
  std::ifstream in(base_path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const bj::value base = bj::parse(buffer.str());

  std::vector<testing::EncodeRequest> requests;
  for (const auto& text : testing::corpus_texts()) requests.push_back({text, true});
  for (const char* text : {"<mask>", "a <mask> b", "x   <mask>   y", "[SEP]  next", "ﬁHello ﬁ", "Hello!",
                           "  \t<mask>\n[SEP]\t\tz", "café cafe\u0301 ＨＥＬＬＯ ①②", "1234567 89 x1y22z333"}) {
    requests.push_back({text, false});
    requests.push_back({text, true});
  }
  const auto dir = std::filesystem::temp_directory_path() / ("ixbench_tok_variants_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const Variant& v : kVariants) {
    bj::object root = base.as_object();
    if (v.normalizer) root["normalizer"] = parse(v.normalizer);
    if (v.pre_tokenizer) root["pre_tokenizer"] = parse(v.pre_tokenizer);
    if (v.post_processor) root["post_processor"] = parse(v.post_processor);
    if (v.extra_added_tokens) {
      auto& added = root["added_tokens"].as_array();
      added.push_back(parse(
          R"({"id":151700,"content":"<mask>","single_word":false,"lstrip":true,"rstrip":false,"normalized":false,"special":true})"));
      added.push_back(parse(
          R"({"id":151701,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":true,"normalized":false,"special":true})"));
      added.push_back(parse(
          R"({"id":151702,"content":"ﬁHello","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false})"));
    }
    const auto path = dir / (std::string(v.name) + ".json");
    std::ofstream(path) << bj::serialize(root);
    auto tokenizer = Tokenizer::load(path);
    ASSERT_TRUE(tokenizer) << v.name << ": " << tokenizer.error().to_string();

    std::vector<testing::DecodeRequest> decodes;
    for (const auto& r : requests) decodes.push_back({(*tokenizer)->encode(r.text, r.add_special_tokens), true});
    std::string error;
    const auto oracle = testing::run_oracle(path.string(), requests, decodes, &error);
    ASSERT_TRUE(oracle) << v.name << ": " << error;
    size_t mismatches = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto ours = (*tokenizer)->encode(requests[i].text, requests[i].add_special_tokens);
      if (ours != oracle->encoded[i] && ++mismatches <= 3) {
        ADD_FAILURE() << v.name << " mismatch on \"" << requests[i].text.substr(0, 80) << "\" (" << ours.size()
                      << " vs " << oracle->encoded[i].size() << " ids)";
      }
      EXPECT_EQ((*tokenizer)->decode(decodes[i].ids, true), oracle->decoded[i]) << v.name;
    }
    EXPECT_EQ(mismatches, 0u) << v.name;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ix::tok
