#include "config/yaml_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace ix::config {
namespace {

YamlNode parse_ok(const std::string& text) {
  auto node = parse_yaml(text, "t.yaml");
  EXPECT_TRUE(node.has_value()) << (node ? "" : node.error().message());
  return node ? *node : YamlNode{};
}

const YamlNode& value_of(const YamlNode& map, const std::string& key) {
  for (const auto& [k, v] : map.entries) {
    if (k.scalar == key) return v;
  }
  static YamlNode missing;
  ADD_FAILURE() << "no key " << key;
  return missing;
}

TEST(YamlTree, ResolvesPlainScalarsLikePyYaml) {
  YamlNode doc =
      parse_ok("a: 3_095_781\nb: yes\nc: Off\nd: 0.80\ne: 1e3\nf: \"8\"\ng: 0x1F\nh: -12\ni: 010\nj: .5\nk: 08\n");
  EXPECT_EQ(value_of(doc, "a").as_int(), 3095781);
  EXPECT_EQ(value_of(doc, "b").as_bool(), true);
  EXPECT_EQ(value_of(doc, "c").as_bool(), false);
  EXPECT_DOUBLE_EQ(*value_of(doc, "d").as_float(), 0.8);
  EXPECT_FALSE(value_of(doc, "d").as_int().has_value());
  // PyYAML 1.1: a float needs a dot, so "1e3" is a string.
  EXPECT_FALSE(value_of(doc, "e").as_float().has_value());
  EXPECT_EQ(value_of(doc, "e").as_string(), "1e3");
  // Quoted scalars are always strings.
  EXPECT_FALSE(value_of(doc, "f").as_int().has_value());
  EXPECT_EQ(value_of(doc, "f").as_string(), "8");
  EXPECT_EQ(value_of(doc, "g").as_int(), 31);
  EXPECT_EQ(value_of(doc, "h").as_int(), -12);
  EXPECT_EQ(value_of(doc, "i").as_int(), 8);  // octal
  EXPECT_DOUBLE_EQ(*value_of(doc, "j").as_float(), 0.5);
  EXPECT_EQ(value_of(doc, "k").as_string(), "08");  // not a valid octal: a string
  EXPECT_FALSE(value_of(doc, "a").as_string().has_value());
}

TEST(YamlTree, MarksAreOneBasedLineAndColumn) {
  YamlNode doc = parse_ok("top:\n  inner: [1, 22]\n");
  const YamlNode& inner = value_of(value_of(doc, "top"), "inner");
  EXPECT_EQ(inner.mark.line, 2);
  EXPECT_EQ(inner.mark.column, 10);
  ASSERT_EQ(inner.items.size(), 2u);
  EXPECT_EQ(inner.items[1].mark.line, 2);
  EXPECT_EQ(inner.items[1].mark.column, 14);
}

TEST(YamlTree, KeepsDuplicateKeysInDocumentOrder) {
  YamlNode doc = parse_ok("a: 1\nb: 2\na: 3\n");
  ASSERT_EQ(doc.entries.size(), 3u);
  EXPECT_EQ(doc.entries[0].first.scalar, "a");
  EXPECT_EQ(doc.entries[2].first.scalar, "a");
  EXPECT_EQ(doc.entries[2].second.as_int(), 3);
  EXPECT_EQ(doc.entries[2].first.mark.line, 3);
}

TEST(YamlTree, NullsAndEmptyDocuments) {
  YamlNode doc = parse_ok("a:\nb: ~\nc: null\nd: 'null'\n");
  EXPECT_TRUE(value_of(doc, "a").is_null());
  EXPECT_TRUE(value_of(doc, "b").is_null());
  EXPECT_TRUE(value_of(doc, "c").is_null());
  EXPECT_EQ(value_of(doc, "d").as_string(), "null");
  EXPECT_TRUE(parse_ok("").is_null());
  EXPECT_TRUE(parse_ok("# only a comment\n").is_null());
}

TEST(YamlTree, AliasesCopyTheAnchoredNode) {
  YamlNode doc = parse_ok("base: &w {tp: 8, ep: 1}\ncopy: *w\n");
  const YamlNode& copy = value_of(doc, "copy");
  ASSERT_TRUE(copy.is_map());
  EXPECT_EQ(value_of(copy, "tp").as_int(), 8);
  EXPECT_EQ(copy.mark.line, 2);
}

TEST(YamlTree, NestedAliasesThatExplodeAreRefused) {
  // "Billion laughs": each level aliases the previous one ten times. Every alias is a copy, so
  // nine levels meant ~10^9 nodes (bad_alloc, or the machine out of memory).
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(level - 1);
    text += "]\n";
  }
  auto node = parse_yaml(text, "laughs.yaml");
  ASSERT_FALSE(node.has_value());
  EXPECT_NE(node.error().message().find("laughs.yaml:"), std::string::npos) << node.error().message();
  EXPECT_NE(node.error().message().find("aliases expand the document past 1000000 nodes"), std::string::npos)
      << node.error().message();
}

TEST(YamlTree, AHugeListWithoutAliasesIsRefusedForItsSizeNotForAliases) {
  // An 8 MB conc-list was reported as an alias explosion though it held no alias.
  std::string text = "conc-list: [";
  for (int k = 0; k < 1'100'000; ++k) text += k ? ",1" : "1";
  text += "]\n";
  auto node = parse_yaml(text, "huge.yaml");
  ASSERT_FALSE(node.has_value());
  const std::string& message = node.error().message();
  EXPECT_NE(message.find("huge.yaml:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("the document holds more than 1000000 YAML nodes"), std::string::npos) << message;
  EXPECT_EQ(message.find("alias"), std::string::npos) << message;
}

TEST(YamlTree, ASecondDocumentIsAnError) {
  // PyYAML refuses a stream of two documents; everything after `---` used to be dropped silently.
  auto two = parse_yaml("a: 1\n---\nb: 2\n", "two.yaml");
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().message().find("two.yaml:2:1:"), std::string::npos) << two.error().message();
  EXPECT_NE(two.error().message().find("second YAML document"), std::string::npos);
  auto broken = parse_yaml("a: 1\n---\nb: [2\n", "broken.yaml");
  ASSERT_FALSE(broken.has_value());
  EXPECT_NE(broken.error().message().find("YAML syntax error"), std::string::npos) << broken.error().message();
  // One document with explicit markers is fine.
  EXPECT_EQ(value_of(parse_ok("---\na: 1\n...\n"), "a").as_int(), 1);
}

TEST(YamlTree, TextThatIsNotUtf8IsRefusedWithItsPosition) {
  // Bytes 0xFF 0xFE were read as Latin-1 ("deepseek-\u00ff\u00fe").
  auto latin = parse_yaml("a: 1\nmodel: deepseek-\xff\xfe\n", "bytes.yaml");
  ASSERT_FALSE(latin.has_value());
  EXPECT_NE(latin.error().message().find("bytes.yaml:2:17: byte 0xff is not valid UTF-8"), std::string::npos)
      << latin.error().message();
  auto nul = parse_yaml(std::string("a: b\0c: d\n", 11), "nul.yaml");
  ASSERT_FALSE(nul.has_value());
  EXPECT_NE(nul.error().message().find("nul.yaml:1:5: NUL byte"), std::string::npos) << nul.error().message();
  // Valid multi-byte text is fine.
  EXPECT_EQ(value_of(parse_ok("name: \"\u00e9t\u00e9 \u4e2d\u6587 \U0001F600\"\n"), "name").as_string()->size(), 17u);
}

TEST(YamlTree, MergeKeysWorkAsInPyYaml) {
  // `<<` was kept as a key named "<<" ("unknown field '<<'"); PyYAML merges the mapping(s),
  // the mapping's own keys winning, then earlier sources over later ones.
  YamlNode doc = parse_ok(
      "a: &a {tp: 4, ep: 1, conc-list: [1, 16]}\n"
      "b: &b {tp: 8, dp-attn: true}\n"
      "one: {<<: *a, tp: 2}\n"
      "two: {<<: [*b, *a]}\n");
  const YamlNode& one = value_of(doc, "one");
  ASSERT_EQ(one.entries.size(), 3u);
  EXPECT_EQ(value_of(one, "tp").as_int(), 2);
  EXPECT_EQ(value_of(one, "ep").as_int(), 1);
  EXPECT_EQ(value_of(one, "conc-list").items.size(), 2u);
  const YamlNode& two = value_of(doc, "two");
  EXPECT_EQ(value_of(two, "tp").as_int(), 8);
  EXPECT_EQ(value_of(two, "dp-attn").as_bool(), true);
  EXPECT_EQ(value_of(two, "ep").as_int(), 1);
  auto bad = parse_yaml("x: {<<: 3}\n", "m.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("m.yaml:1:9: a merge key (<<) takes a mapping"), std::string::npos)
      << bad.error().message();
}

TEST(YamlTree, DeepNestingIsNamed) {
  // yaml-cpp's recursion guard reported only "bad file".
  auto deep = parse_yaml("x: " + std::string(1000, '[') + std::string(1000, ']') + "\n", "deep.yaml");
  ASSERT_FALSE(deep.has_value());
  EXPECT_NE(deep.error().message().find("deep.yaml:1:"), std::string::npos) << deep.error().message();
  EXPECT_NE(deep.error().message().find("nested deeper than"), std::string::npos) << deep.error().message();
}

TEST(YamlTree, SyntaxErrorNamesFileLineColumn) {
  auto node = parse_yaml("a: [1, 2\nb: 3\n", "configs/x.yaml");
  ASSERT_FALSE(node.has_value());
  EXPECT_EQ(node.error().code(), ErrorCode::kParse);
  EXPECT_TRUE(node.error().message().starts_with("configs/x.yaml:")) << node.error().message();
  EXPECT_NE(node.error().message().find("YAML syntax error"), std::string::npos);
}

TEST(YamlTree, SyntaxErrorMessagesStayPrintable) {
  auto node = parse_yaml("a: \"bad \\\x01 escape\"\n", "x.yaml");
  ASSERT_FALSE(node.has_value());
  for (unsigned char c : node.error().message()) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
}

TEST(YamlTree, DescribeNamesTheValue) {
  YamlNode doc = parse_ok("a: eight\nb: 8\nc: true\nd: [1]\ne: {x: 1}\nf: 1.5\n");
  EXPECT_EQ(value_of(doc, "a").describe(), "the string 'eight'");
  EXPECT_EQ(value_of(doc, "b").describe(), "the integer 8");
  EXPECT_EQ(value_of(doc, "c").describe(), "the boolean true");
  EXPECT_EQ(value_of(doc, "d").describe(), "a list");
  EXPECT_EQ(value_of(doc, "e").describe(), "a mapping");
  EXPECT_EQ(value_of(doc, "f").describe(), "the number 1.5");
}

}  // namespace
}  // namespace ix::config
