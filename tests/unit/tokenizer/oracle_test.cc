// Exactness against the HF tokenizers oracle (tests/oracle/oracle.js) on the four real
// tokenizers: every expected id and decoded string comes from the oracle at test time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/rng.h"
#include "common/utf8.h"
#include "oracle_support.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

using testing::DecodeRequest;
using testing::EncodeRequest;

// Characters random texts are drawn from: every class the pre-tokenizer regexes distinguish,
// whitespace HF and PCRE2 could disagree on, composing/decomposing sequences for NFC, and
// astral-plane characters.
const std::vector<std::string>& char_pool() {
  static const std::vector<std::string> pool = [] {
    std::vector<std::string> p;
    for (char c = 32; c < 127; ++c) p.emplace_back(1, c);
    for (const char* s : {"\n", "\r", "\t", "\v", "\f", "\r\n", "  ", "    ", "\n\n", "'s", "'T", "'ll", "'Re"}) {
      p.emplace_back(s);
    }
    for (char32_t cp :
         {0x85u, 0xA0u, 0x1680u, 0x2000u, 0x2009u, 0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0x180Eu,
          0x200Bu, 0xFEFFu, 0x301u, 0x308u, 0x30Au, 0x327u, 0x1100u, 0x1161u, 0x11A8u, 0xAC00u, 0xE9u, 0xC5u, 0xDFu,
          0x17Fu, 0x212Au, 0x2126u, 0xFB01u, 0x4E00u, 0x4E2Du, 0x6587u, 0x9FA5u, 0x9FA6u, 0x3042u, 0x30A2u, 0x30FCu,
          0xFF21u, 0xFF41u, 0xFF11u, 0x661u, 0x966u, 0x2460u, 0xBDu, 0x216Bu, 0x1D7D9u, 0x3B1u, 0x3A9u, 0x430u, 0x416u,
          0x5D0u, 0x627u, 0x915u, 0x94Du, 0xE01u, 0xE31u, 0x1F600u, 0x1F44Du, 0x1F3FDu, 0x200Du, 0x2764u, 0xFE0Fu,
          0x1F1FAu, 0x1F1F8u, 0x20ACu, 0xA9u, 0x2211u, 0x2192u, 0x300Cu, 0x3002u, 0xFF0Cu, 0x2014u, 0x2026u, 0x201Cu,
          0xE000u, 0x20000u, 0x1D11Eu, 0x10FFFDu, 0x1u, 0x7Fu, 0x9Fu, 0x2160u, 0x24B6u, 0x1E9Eu, 0x130u, 0x131u,
          // Assigned after Unicode 14 (PCRE2 10.42's tables), as HF's Oniguruma knows them.
          0x1F6DCu, 0x2FFCu, 0x1CC00u, 0x2427u, 0x31350u, 0x2EBF0u, 0x11F04u, 0x1E030u, 0xCF3u, 0x10EFDu, 0x1FAE8u,
          0x1D2C0u, 0x11F50u,
          // Combining marks newer than HF's normalizer tables (Unicode 9.0): opaque there.
          0x7FDu, 0x11D42u, 0x1E2AEu, 0x897u, 0x10EABu}) {
      std::string s;
      utf8::append_code_point(cp, s);
      p.push_back(s);
    }
    for (const char* w : {"the",       "The",      "THE",      "hello",  "World",  "tokenizer", "123",
                          "4567",      "3.14",     "don't",    "I'M",    "naïve",  "über",      "東京",
                          "北京大学",  "カタカナ", "ひらがな", "한국어", "привет", "مرحبا",     "👨‍👩‍👧",
                          "🇯🇵",        "```",      "->",       "::",     "!=",     "...",       "—",
                          "http://x.y"}) {
      p.emplace_back(w);
    }
    return p;
  }();
  return pool;
}

std::string random_text(Rng& rng, size_t max_parts) {
  const auto& pool = char_pool();
  const auto parts = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(max_parts)));
  std::string text;
  for (size_t i = 0; i < parts; ++i) {
    text += pool[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1))];
  }
  return text;
}

class OracleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (auto reason = testing::oracle_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
    path_ = testing::tokenizer_json(GetParam());
    if (path_.empty()) GTEST_SKIP() << "tokenizer package for " << GetParam() << " missing; run scripts/bootstrap.sh";
    auto loaded = Tokenizer::load(path_);
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    tokenizer_ = std::move(*loaded);
  }

  std::string path_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

std::string show(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 40; ++i) out += fmt::format("{} ", ids[i]);
  return out + (ids.size() > 40 ? "..." : "");
}

TEST_P(OracleTest, EncodeAndDecodeMatchHfTokenizers) {
  Rng rng = Rng::stream(20260401, GetParam());
  std::vector<EncodeRequest> encode;
  for (const auto& text : testing::corpus_texts()) {
    encode.push_back({text, false});
    encode.push_back({text, true});
  }
  // Every added token (special or not), alone, inside text, adjacent to another, and partial.
  const auto& added = tokenizer_->added_tokens();
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string& t = added[i].content;
    const std::string& u = added[(i * 7 + 3) % added.size()].content;
    encode.push_back({t, false});
    encode.push_back({"Hello " + t + " world" + u + u + "\n\n" + t.substr(0, t.size() / 2) + " end", i % 2 == 0});
    encode.push_back({"  " + t + "  \n" + t + "x" + t.substr(1), false});
  }
  // IXBENCH_ORACLE_RANDOM_CASES scales the random part up for soak runs (default 600).
  int random_cases = 600;
  if (const char* env = std::getenv("IXBENCH_ORACLE_RANDOM_CASES")) random_cases = std::max(1, std::atoi(env));
  for (int i = 0; i < random_cases; ++i) {
    encode.push_back({random_text(rng, i % 6 == 5 ? 400 : 40), i % 5 == 0});
  }
  // IXBENCH_ORACLE_UNICODE_SWEEP=1: every code point, between separators of each regex class.
  if (std::getenv("IXBENCH_ORACLE_UNICODE_SWEEP") != nullptr) {
    const char* separators[] = {"", " ", "a", "\u0301", "1", "!", "\n", "A", "\u0316"};
    std::string text;
    size_t k = 0;
    for (char32_t cp = 1; cp <= 0x10FFFF; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      utf8::append_code_point(cp, text);
      text += separators[k++ % std::size(separators)];
      if (text.size() > 2000) {
        encode.push_back({text, false});
        text.clear();
      }
    }
    encode.push_back({text, false});
  }
  // vLLM-style random prompts: random vocabulary ids decoded to text (with U+FFFD where a
  // character was cut), then re-encoded.
  for (int i = 0; i < 200; ++i) {
    std::vector<int32_t> ids;
    for (int k = 0; k < 30; ++k) ids.push_back(static_cast<int32_t>(rng.uniform_int(0, tokenizer_->vocab_size() - 1)));
    encode.push_back({tokenizer_->decode(ids, i % 2 == 0), false});
  }
  // Long runs: whitespace, digits, letters, mixed.
  encode.push_back({std::string(20000, ' ') + "x" + std::string(5000, '\n') + std::string(3000, '\t'), false});
  encode.push_back({std::string(10000, '7'), false});
  encode.push_back({std::string(10000, 'a') + std::string(10000, 'Z'), false});

  // Decode: round trips, random ids (holes and out-of-range ids included, hence partial UTF-8),
  // special tokens kept and skipped.
  std::vector<DecodeRequest> decode;
  const int32_t vocab = tokenizer_->vocab_size();
  for (size_t i = 0; i < encode.size(); i += 3)
    decode.push_back({tokenizer_->encode(encode[i].text, true), i % 2 == 0});
  for (int i = 0; i < 400; ++i) {
    DecodeRequest request;
    const auto n = rng.uniform_int(0, 12);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t pick = rng.uniform_int(0, 9);
      if (pick == 0 && !added.empty()) {
        request.ids.push_back(
            added[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(added.size()) - 1))].id);
      } else if (pick == 1) {
        request.ids.push_back(static_cast<int32_t>(rng.uniform_int(vocab - 300, vocab + 50)));
      } else {
        request.ids.push_back(static_cast<int32_t>(rng.uniform_int(0, vocab - 1)));
      }
    }
    request.skip_special_tokens = (i % 2) == 1;
    decode.push_back(std::move(request));
  }
  // Multi-byte characters cut between tokens: decode every prefix of a CJK/emoji encoding.
  const auto pieces = tokenizer_->encode("東京👨‍👩‍👧 ök 𝟙", false);
  for (size_t k = 0; k <= pieces.size(); ++k) {
    decode.push_back({std::vector<int32_t>(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(k)), false});
    decode.push_back({std::vector<int32_t>(pieces.begin() + static_cast<std::ptrdiff_t>(k), pieces.end()), false});
  }

  std::string error;
  const auto oracle = testing::run_oracle(path_, encode, decode, &error);
  ASSERT_TRUE(oracle.has_value()) << error;
  ASSERT_EQ(oracle->encoded.size(), encode.size());
  ASSERT_EQ(oracle->decoded.size(), decode.size());

  size_t encode_mismatches = 0;
  for (size_t i = 0; i < encode.size(); ++i) {
    const auto ours = tokenizer_->encode(encode[i].text, encode[i].add_special_tokens);
    if (ours != oracle->encoded[i]) {
      if (++encode_mismatches <= 5) {
        ADD_FAILURE() << GetParam() << " encode mismatch #" << i << " text=\"" << encode[i].text.substr(0, 200)
                      << "\"\n  ours:   " << show(ours) << "\n  oracle: " << show(oracle->encoded[i]);
      }
    }
    if (!encode[i].add_special_tokens) {
      EXPECT_EQ(tokenizer_->count_tokens(encode[i].text), oracle->encoded[i].size());
    }
  }
  size_t decode_mismatches = 0;
  for (size_t i = 0; i < decode.size(); ++i) {
    const auto ours = tokenizer_->decode(decode[i].ids, decode[i].skip_special_tokens);
    if (ours != oracle->decoded[i]) {
      if (++decode_mismatches <= 5) {
        ADD_FAILURE() << GetParam() << " decode mismatch #" << i << " ids=" << show(decode[i].ids) << "\n  ours:   \""
                      << ours << "\"\n  oracle: \"" << oracle->decoded[i] << "\"";
      }
    }
  }
  RecordProperty("encode_cases", static_cast<int>(encode.size()));
  RecordProperty("decode_cases", static_cast<int>(decode.size()));
  std::printf("[ oracle   ] %s: %zu encode cases, %zu mismatches; %zu decode cases, %zu mismatches\n",
              GetParam().c_str(), encode.size(), encode_mismatches, decode.size(), decode_mismatches);
  EXPECT_EQ(encode_mismatches, 0u);
  EXPECT_EQ(decode_mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, OracleTest,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(testing::kFamilies),
                                                                      std::end(testing::kFamilies))),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ix::tok
