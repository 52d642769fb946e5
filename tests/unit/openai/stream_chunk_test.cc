// Differential tests of the streaming chunk decoder against a boost::json DOM decoder (the
// implementation it replaced): on realistic chunks and on hundreds of thousands of seeded
// mutations of them, both must agree on whether a payload is valid and on every field read.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "openai/backend.h"

namespace ix::openai {
namespace {

struct Decoded {
  StreamChunk::Kind kind = StreamChunk::Kind::kData;
  bool has_choices = false;
  std::string text;
  bool finished = false;
  int64_t completion_tokens = -1;
  int64_t prompt_tokens = -1;
  std::string error;
  bool operator==(const Decoded&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Decoded& d) {
  return os << "{kind " << static_cast<int>(d.kind) << ", choices " << d.has_choices << ", text '" << d.text
            << "', finished " << d.finished << ", completion " << d.completion_tokens << ", prompt " << d.prompt_tokens
            << ", error '" << d.error << "'}";
}

// The DOM decoder: parse with boost::json's defaults, then read the fields.
std::optional<Decoded> oracle(std::string_view data) {
  Decoded d;
  if (data == "[DONE]") {
    d.kind = StreamChunk::Kind::kDone;
    return d;
  }
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(data, ec);
  if (ec) return std::nullopt;
  const boost::json::object* obj = root.if_object();
  if (!obj) return std::nullopt;
  if (const auto* err = obj->if_contains("error"); err && !err->is_null()) {
    d.kind = StreamChunk::Kind::kError;
    if (err->is_object()) {
      const auto* msg = err->as_object().if_contains("message");
      d.error = msg && msg->is_string() ? std::string(msg->as_string()) : boost::json::serialize(*err);
    } else {
      d.error = err->is_string() ? std::string(err->as_string()) : boost::json::serialize(*err);
    }
    return d;
  }
  if (const auto* choices = obj->if_contains("choices");
      choices && choices->is_array() && !choices->as_array().empty()) {
    d.has_choices = true;
    if (const auto* c0 = choices->as_array()[0].if_object()) {
      if (const auto* t = c0->if_contains("text"); t && t->is_string()) d.text.append(t->as_string());
      if (const auto* delta = c0->if_contains("delta"); delta && delta->is_object()) {
        for (const char* key : {"reasoning_content", "reasoning", "content"}) {
          if (const auto* t = delta->as_object().if_contains(key); t && t->is_string()) d.text.append(t->as_string());
        }
      }
      if (const auto* f = c0->if_contains("finish_reason"); f && !f->is_null()) d.finished = true;
    }
  }
  if (const auto* usage = obj->if_contains("usage"); usage && usage->is_object()) {
    const auto& u = usage->as_object();
    // A negative count is no count (the decoder reports it in usage_problem()).
    auto count = [](const boost::json::value* v) { return v && v->is_int64() && v->as_int64() >= 0; };
    if (const auto* v = u.if_contains("completion_tokens"); count(v)) d.completion_tokens = v->as_int64();
    if (const auto* v = u.if_contains("prompt_tokens"); count(v)) d.prompt_tokens = v->as_int64();
  }
  return d;
}

std::optional<Decoded> decode(StreamChunkDecoder& decoder, std::string_view data) {
  auto r = decoder.decode(data);
  if (!r) return std::nullopt;
  Decoded d;
  d.kind = r->kind;
  d.has_choices = r->has_choices;
  d.text = std::string(r->text);
  d.finished = r->finished;
  d.completion_tokens = r->completion_tokens;
  d.prompt_tokens = r->prompt_tokens;
  d.error = r->error;
  if (d.kind != StreamChunk::Kind::kData) {  // only the kind (and message) are meaningful
    d.has_choices = false;
    d.text.clear();
    d.finished = false;
    d.completion_tokens = d.prompt_tokens = -1;
  }
  return d;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> chunks = {
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":1024,"total_tokens":1025,"completion_tokens":1}})",
      R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"logprobs":null,"finish_reason":null}]})",
      R"({"choices":[{"index":0,"delta":{"reasoning_content":"think","content":null},"finish_reason":null}],"usage":null})",
      // --logprobs N: vLLM's completions and chat logprobs objects beside the text.
      R"({"id":"cmpl-2","object":"text_completion","choices":[{"index":0,"text":" the","logprobs":{"text_offset":[0],"token_logprobs":[-0.125],"tokens":[" the"],"top_logprobs":[{" the":-0.125," a":-2.5e0}]},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})",
      R"({"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.01,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.01,"bytes":[72,105]}]}]},"finish_reason":null}]})",
      R"({"choices":[{"delta":{"content":"a","reasoning":"b","reasoning_content":"c"},"text":"t","finish_reason":"stop"}]})",
      R"({"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":0}}})",
      R"({"choices":[{"text":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t","finish_reason":"length"}]})",
      "{\"choices\":[{\"text\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 raw utf-8\"}]}",
      R"({"error":{"message":"server overloaded","type":"ServiceUnavailable","code":503}})",
      R"({"error":"plain string error"})",
      R"({"error":{"code":500,"detail":[1,2.5,-3e2,true,false,null]}})",
      R"({"error":null,"choices":[{"text":"x"}]})",
      R"( { "choices" : [ { "text" : "spaced" , "finish_reason" : null } ] , "usage" : { "completion_tokens" : 7 } } )",
      R"({"choices":[{"text":"n"}],"usage":{"completion_tokens":-0,"prompt_tokens":9223372036854775807}})",
      R"({"choices":[{"text":"n"}],"usage":{"completion_tokens":9223372036854775808,"prompt_tokens":-9223372036854775808}})",
      R"({"choices":[{"text":"n"}],"usage":{"completion_tokens":1.0,"prompt_tokens":1e2}})",
      R"({"x":[1e2147483647,1e400,-0.0,0E-1],"choices":[{"text":"big exponents"}]})",
      R"({"choices":[{"text":5,"delta":"not an object","finish_reason":0}]})",
      R"({"choices":[7,{"text":"second"}]})",
      R"({"choices":{"text":"not an array"}})",
      R"({"choices":[{"delta":{"content":"x"}}],"nested":{"a":[{"b":[[[{}]]]}],"c":"\u0000"}})",
      R"({})",
      R"([DONE])",
      R"([1,2])",
      R"("just a string")",
      R"(42)",
  };
  return chunks;
}

TEST(StreamChunkScanner, AgreesWithTheDomDecoderOnRealisticChunks) {
  StreamChunkDecoder decoder;
  for (const auto& chunk : corpus()) {
    const auto expected = oracle(chunk);
    const auto got = decode(decoder, chunk);
    ASSERT_EQ(got.has_value(), expected.has_value()) << chunk;
    if (expected) {
      EXPECT_EQ(*got, *expected) << chunk;
    }
  }
}

TEST(StreamChunkScanner, UsageThatIsNoCountIsReported) {
  StreamChunkDecoder decoder;
  auto negative = decoder.decode(R"({"choices":[{"text":"n"}],"usage":{"completion_tokens":-5}})");
  ASSERT_TRUE(negative);
  EXPECT_EQ(negative->completion_tokens, -1);
  EXPECT_EQ(negative->usage_problem(), "usage.completion_tokens is -5");
  auto fraction = decoder.decode(R"({"choices":[{"text":"n"}],"usage":{"prompt_tokens":1.5}})");
  ASSERT_TRUE(fraction);
  EXPECT_EQ(fraction->usage_problem(), "usage.prompt_tokens is not a whole number");
  auto fine = decoder.decode(R"({"choices":[{"text":"n"}],"usage":{"prompt_tokens":3,"completion_tokens":0}})");
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->usage_problem(), "");
  EXPECT_EQ(fine->completion_tokens, 0);
}

TEST(StreamChunkScanner, ReportsWhereAPayloadStopsBeingJson) {
  StreamChunkDecoder decoder;
  auto r = decoder.decode(R"({"choices":[{"text":"abc"}]}x)");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("extra data"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("byte 28"), std::string::npos) << r.error().message();
  r = decoder.decode(R"({"choices":[{"text":"a)"
                     "\x01"
                     R"("}]})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("control character"), std::string::npos) << r.error().message();
  r = decoder.decode("{\"choices\":[{\"text\":\"\xff\"}]}");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("UTF-8"), std::string::npos) << r.error().message();
  r = decoder.decode(R"({"choices":[{"text":"\ud800"}]})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("surrogate"), std::string::npos) << r.error().message();
}

TEST(StreamChunkScanner, NestingLimitMatchesTheDomDecoder) {
  StreamChunkDecoder decoder;
  for (int depth = 28; depth <= 36; ++depth) {
    std::string chunk = R"({"x":)";
    for (int i = 0; i < depth; ++i) chunk += '[';
    for (int i = 0; i < depth; ++i) chunk += ']';
    chunk += '}';
    EXPECT_EQ(decode(decoder, chunk).has_value(), oracle(chunk).has_value()) << "depth " << depth;
  }
}

// Seeded mutations: byte flips to JSON-significant characters, insertions, deletions and
// truncations of the corpus. Both decoders must accept and reject the same payloads and read the
// same fields from the accepted ones.
TEST(StreamChunkScanner, AgreesWithTheDomDecoderOnMutations) {
  StreamChunkDecoder decoder;
  std::mt19937_64 rng(20261130);
  const std::string alphabet = "{}[]:,\"\\ u0123456789abcdefnulltrue-+.eE\x01\x7f\xc3\xa9\xed\xa0\x80\xf0\x9f";
  int64_t accepted = 0, rejected = 0;
  for (int round = 0; round < 600000; ++round) {
    std::string chunk = corpus()[rng() % corpus().size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !chunk.empty(); ++e) {
      const size_t at = rng() % chunk.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 4) {
        case 0: chunk[at] = c; break;
        case 1: chunk.insert(chunk.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        case 2: chunk.erase(at, 1); break;
        default: chunk.resize(at); break;
      }
    }
    const auto expected = oracle(chunk);
    const auto got = decode(decoder, chunk);
    ASSERT_EQ(got.has_value(), expected.has_value()) << "round " << round << ": '" << chunk << "'";
    if (expected) {
      ASSERT_EQ(*got, *expected) << "round " << round << ": '" << chunk << "'";
      ++accepted;
    } else {
      ++rejected;
    }
  }
  // The mutations exercise both sides.
  EXPECT_GT(accepted, 10000);
  EXPECT_GT(rejected, 10000);
}

TEST(StreamChunkScanner, FinishReasonAndTheReasoningPrefixAreReported) {
  StreamChunkDecoder decoder;
  auto chunk = decoder.decode(
      R"({"choices":[{"delta":{"reasoning_content":"think ","content":"#### 18"},"finish_reason":"stop"}]})");
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->text, "think #### 18");
  EXPECT_EQ(chunk->reasoning_bytes, 6U);
  EXPECT_TRUE(chunk->finished);
  EXPECT_EQ(chunk->finish_reason, "stop");
  auto escaped = decoder.decode(R"({"choices":[{"text":"x","finish_reason":"len\u0067th"}]})");
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->finish_reason, "length");
  EXPECT_EQ(escaped->reasoning_bytes, 0U);
  auto open = decoder.decode(R"({"choices":[{"text":"x","finish_reason":null}]})");
  ASSERT_TRUE(open);
  EXPECT_FALSE(open->finished);
  EXPECT_TRUE(open->finish_reason.empty());
}

}  // namespace
}  // namespace ix::openai
