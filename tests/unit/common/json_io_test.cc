#include "common/json_io.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ix::json {
namespace {

TEST(JsonIo, ParseReportsLineAndColumn) {
  auto bad = parse("{\n  \"a\": 1,\n  \"b\": ]\n}", "x.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kParse);
  EXPECT_NE(bad.error().message().find("x.json:3:"), std::string::npos) << bad.error().message();
}

TEST(JsonIo, DoublesAreTheCorrectlyRoundedValueOfTheirText) {
  // Each text's nearest double, as strtod (and Python's json) reads it; Boost.JSON 1.81's own
  // conversion is one unit in the last place off on the first.
  for (const char* text : {"371.0916279850696", "1.8454349284255003", "24.067473406139885", "0.1", "1e-300",
                           "-2.2250738585072014e-308", "123456789012345678901234567890.5"}) {
    auto value = json::parse(std::string("[") + text + "]");
    ASSERT_TRUE(value) << text;
    EXPECT_EQ(value->as_array()[0].as_double(), std::strtod(text, nullptr)) << text;
  }
  auto mixed = json::parse(R"({"a": [1, -2, 18446744073709551615, 2.5e3], "b": {"c": "x"}, "d": null, "e": true})");
  ASSERT_TRUE(mixed);
  EXPECT_EQ(json::to_string(*mixed),
            R"({"a": [1, -2, 18446744073709551615, 2500.0], "b": {"c": "x"}, "d": null, "e": true})");
  EXPECT_FALSE(json::parse("[1] 2").has_value());  // extra data
  EXPECT_TRUE(json::parse("[1]  \n").has_value());
}

TEST(JsonIo, TruncatedInputIsAnErrorNotACrash) {
  std::string text = R"({"model": "m", "values": [1, 2, 3], "nested": {"k": "v"}})";
  for (size_t length = 0; length < text.size(); ++length) {
    auto result = parse(text.substr(0, length));
    EXPECT_FALSE(result.has_value()) << length;
  }
  EXPECT_TRUE(parse(text).has_value());
}

TEST(JsonIo, CompactFormMatchesPythonJsonDumps) {
  boost::json::object object;
  object["image"] = "x:y";
  object["tp"] = 8;
  object["dp-attn"] = false;
  object["ratio"] = 0.1;
  object["whole"] = 2.0;
  object["big"] = 1e20;
  object["tiny"] = 1e-5;
  object["list"] = boost::json::array{1, 2};
  object["none"] = nullptr;
  object["nan"] = std::nan("");
  EXPECT_EQ(to_string(object),
            R"({"image": "x:y", "tp": 8, "dp-attn": false, "ratio": 0.1, "whole": 2.0, "big": 1e+20, )"
            R"("tiny": 1e-05, "list": [1, 2], "none": null, "nan": null})");
}

TEST(JsonIo, PrettyFormIsIndented) {
  boost::json::object object;
  object["a"] = boost::json::array{1, "x"};
  object["b"] = boost::json::object{};
  EXPECT_EQ(to_pretty_string(object), "{\n  \"a\": [\n    1,\n    \"x\"\n  ],\n  \"b\": {}\n}\n");
}

TEST(JsonIo, WriteThenReadRoundTrips) {
  auto dir = std::filesystem::temp_directory_path() / "ixbench_json_io_test";
  std::filesystem::create_directories(dir);
  auto path = dir / "out.json";
  boost::json::object object{{"k", 1.5}};
  ASSERT_TRUE(files::write_file(path, to_pretty_string(object)).has_value());
  EXPECT_FALSE(std::filesystem::exists(dir / "out.json.tmp"));
  auto back = read_file(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->at("k").as_double(), 1.5);
  std::filesystem::remove_all(dir);
  auto missing = read_file(dir / "nope.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(JsonIo, TypedFieldsNameTheField) {
  auto value = parse(R"({"n": 3, "s": "x", "b": true, "f": 1.5})").value();
  const auto& object = value.as_object();
  EXPECT_EQ(get_int(object, "n").value(), 3);
  EXPECT_EQ(get_string(object, "s").value(), "x");
  EXPECT_TRUE(get_bool(object, "b").value());
  EXPECT_EQ(get_number(object, "f").value(), 1.5);
  EXPECT_EQ(get_number(object, "n").value(), 3.0);
  EXPECT_EQ(get_int(object, "s").error().message(), "field 's' must be an integer");
  EXPECT_EQ(get_string(object, "missing").error().message(), "missing field 'missing'");
  EXPECT_FALSE(get_int(object, "f").has_value());
}

TEST(JsonIo, PythonFormIsJsonDumpsWithEnsureAscii) {
  boost::json::object object{{"a", 1},
                             {"b", 2.0},
                             {"c", boost::json::array{}},
                             {"d", boost::json::object{}},
                             {"e", "\u00e9\xf0\x9f\x98\x80\n"},
                             {"f", std::nan("")},
                             {"g", -HUGE_VAL}};
  EXPECT_EQ(to_python_json(object, 0),
            R"({"a": 1, "b": 2.0, "c": [], "d": {}, "e": "\u00e9\ud83d\ude00\n", "f": NaN, "g": -Infinity})");
  EXPECT_EQ(to_python_json(boost::json::object{{"k", boost::json::array{1, 2}}}),
            "{\n  \"k\": [\n    1,\n    2\n  ]\n}");
}

TEST(JsonIo, ReadWithoutDropsNamedMembersAtAnyDepth) {
  auto dir = std::filesystem::temp_directory_path() / "ixbench_json_io_without";
  std::filesystem::create_directories(dir);
  const auto path = dir / "doc.json";
  // Long enough to cross the reader's 1 MiB pieces.
  std::string big = R"({"keep": 1, "timeslices": [)";
  for (int i = 0; i < 60000; ++i) big += R"({"start_ns": 1, "avg": 0.25, "s": "text"},)";
  big += R"(null], "m": {"series": [{"stats": {"total": 2.5}, "timeslices": {"x": [1]}}], "timeslices": "s"},)"
         R"( "z": 0.1})";
  std::ofstream(path) << big;
  auto value = read_file_without(path, {"timeslices"}, "a test document");
  ASSERT_TRUE(value) << value.error().message();
  EXPECT_EQ(to_string(*value), R"({"keep": 1, "m": {"series": [{"stats": {"total": 2.5}}]}, "z": 0.1})");
  std::ofstream(path) << "{\"a\": 1,\n \"b\": oops}";
  auto bad = read_file_without(path, {}, "a test document");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find(path.string() + ":2:"), std::string::npos) << bad.error().message();
  auto missing = read_file_without(dir / "nope.json", {}, "a test document");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ix::json
