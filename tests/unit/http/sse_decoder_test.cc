#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "http/sse.h"

namespace ix::http {
namespace {

struct Decoded {
  std::string event;
  std::string data;
  std::string id;
  bool operator==(const Decoded&) const = default;
};

std::vector<Decoded> decode_in_pieces(const std::string& stream, const std::vector<size_t>& cuts) {
  SseDecoder decoder;
  std::vector<Decoded> out;
  size_t from = 0;
  auto sink = [&](const SseEvent& e) {
    out.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
    return true;
  };
  for (size_t cut : cuts) {
    EXPECT_TRUE(decoder.feed(std::string_view(stream).substr(from, cut - from), sink).has_value());
    from = cut;
  }
  EXPECT_TRUE(decoder.feed(std::string_view(stream).substr(from), sink).has_value());
  return out;
}

const std::string kStream =
    ": keep-alive comment\r\n"
    "data: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n"
    "event: update\n"
    "id: 7\n"
    "data: line1\n"
    "data:line2\n"
    "\n"
    "retry: 100\n"
    "data: x\r"
    "\r"
    "data: [DONE]\n\n";

const std::vector<Decoded> kExpected = {
    {"", "{\"choices\":[{\"text\":\"a\"}]}", ""},
    {"update", "line1\nline2", "7"},
    {"", "x", ""},
    {"", "[DONE]", ""},
};

TEST(SseDecoder, DecodesWholeStream) {
  EXPECT_EQ(decode_in_pieces(kStream, {}), kExpected);
}

TEST(SseDecoder, SplitAtEveryPositionGivesTheSameEvents) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    EXPECT_EQ(decode_in_pieces(kStream, {cut}), kExpected) << "cut at " << cut;
  }
}

TEST(SseDecoder, SplitAtEveryPairOfPositions) {
  for (size_t a = 0; a <= kStream.size(); a += 3) {
    for (size_t b = a; b <= kStream.size(); ++b) {
      ASSERT_EQ(decode_in_pieces(kStream, {a, b}), kExpected) << a << "," << b;
    }
  }
}

// Events are stamped with the time of the read that completed them: every event must come out of
// the feed() that delivered its last byte, never a later one, however the reads are cut — for LF,
// CR (a CR at the end of a read used to wait for a possible LF: stamped one read late) and CRLF
// framing (there the blank line's CR completes the event).
TEST(SseDecoder, EveryEventComesOutOfTheReadThatCompletesIt) {
  for (const std::string eol : {"\n", "\r", "\r\n"}) {
    std::string stream;
    std::vector<size_t> ends;  // offset one past the byte that completes each event
    for (int i = 0; i < 6; ++i) {
      stream +=
          "data: {\"choices\":[{\"text\":\"t" + std::string(static_cast<size_t>(i * 7), 'x') + "\"}]}" + eol + eol;
      ends.push_back(stream.size() - (eol == "\r\n" ? 1 : 0));
    }
    for (size_t a = 0; a <= stream.size(); ++a) {
      for (size_t b = a; b <= stream.size(); b += 5) {
        SseDecoder decoder;
        std::vector<size_t> fed_until;  // per event: end of the feed that emitted it
        size_t from = 0;
        for (size_t cut : {a, b, stream.size()}) {
          ASSERT_TRUE(decoder
                          .feed(std::string_view(stream).substr(from, cut - from),
                                [&](const SseEvent&) {
                                  fed_until.push_back(cut);
                                  return true;
                                })
                          .has_value());
          from = cut;
        }
        ASSERT_EQ(fed_until.size(), ends.size()) << a << "," << b;
        for (size_t e = 0; e < ends.size(); ++e) {
          const size_t expected = ends[e] <= a ? a : ends[e] <= b ? b : stream.size();
          EXPECT_EQ(fed_until[e], expected) << "event " << e << ", cuts " << a << "," << b << ", eol " << eol.size();
        }
      }
    }
  }
}

TEST(SseDecoder, AByteOrderMarkAtTheStartIsStripped) {
  // The SSE spec strips a leading BOM; it made the first field "\xEF\xBB\xBFdata" and the first
  // event was lost.
  const std::string stream =
      "\xEF\xBB\xBF"
      "data: a\n\ndata: b\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    const std::vector<Decoded> expected = {{"", "a", ""}, {"", "b", ""}};
    EXPECT_EQ(decode_in_pieces(stream, {cut}), expected) << "cut at " << cut;
  }
  EXPECT_EQ(decode_in_pieces(stream, {1, 2}), (std::vector<Decoded>{{"", "a", ""}, {"", "b", ""}}));
  // A BOM later in the stream is data, as the spec has it.
  EXPECT_EQ(decode_in_pieces("data: a\n\n\xEF\xBB\xBF"
                             "data: b\n\n",
                             {}),
            (std::vector<Decoded>{{"", "a", ""}}));
}

TEST(SseDecoder, ByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(decode_in_pieces(kStream, cuts), kExpected);
}

TEST(SseDecoder, EventsWithoutDataAreNotDispatched) {
  EXPECT_TRUE(decode_in_pieces("event: ping\n\n: comment\n\nid: 3\n\n", {}).empty());
}

TEST(SseDecoder, PartialEventIsReportedAtEndOfStream) {
  SseDecoder decoder;
  int events = 0;
  auto sink = [&](const SseEvent&) { return ++events, true; };
  ASSERT_TRUE(decoder.feed("data: a\n\ndata: trunc", sink).has_value());
  EXPECT_EQ(events, 1);
  EXPECT_TRUE(decoder.has_partial());
  ASSERT_TRUE(decoder.feed("ated\n\n", sink).has_value());
  EXPECT_EQ(events, 2);
  EXPECT_FALSE(decoder.has_partial());
}

TEST(SseDecoder, CallbackCanStopDecoding) {
  SseDecoder decoder;
  int events = 0;
  ASSERT_TRUE(
      decoder.feed("data: 1\n\ndata: 2\n\ndata: 3\n\n", [&](const SseEvent&) { return ++events < 2; }).has_value());
  EXPECT_EQ(events, 2);
}

TEST(SseDecoder, OversizedEventIsAParseError) {
  SseDecoder decoder(64);
  auto sink = [](const SseEvent&) { return true; };
  auto result = decoder.feed("data: " + std::string(100, 'x'), sink);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), ErrorCode::kParse);
}

TEST(SseDecoder, MalformedBytesNeverCrash) {
  // Fuzz-style: arbitrary byte soup in arbitrary pieces; the decoder must stay consistent.
  uint64_t state = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string soup;
    for (int i = 0; i < 300; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const char alphabet[] = "data: \r\n:x{}\"[]DONE\0\xff";
      soup.push_back(alphabet[(state >> 33) % (sizeof(alphabet) - 1)]);
    }
    SseDecoder decoder(128);
    size_t pos = 0;
    while (pos < soup.size()) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const size_t len = 1 + (state >> 40) % 17;
      auto r =
          decoder.feed(std::string_view(soup).substr(pos, len), [](const SseEvent& e) { return e.data.size() < 1000; });
      if (!r) break;
      pos += len;
    }
  }
  SUCCEED();
}

}  // namespace
}  // namespace ix::http
