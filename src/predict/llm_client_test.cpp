// The LLM predictors against a scripted chat-completions server on loopback (HTTP and HTTPS with
// a self-signed certificate made here): prompts, answers, the cache, retries, time-outs, refused
// connections and TLS, and the API key kept out of every message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.hpp"
#include "predict/chat_client.hpp"
#include "predict/llm.hpp"
#include "support/chat_server.hpp"
#include "support/cli_run.hpp"
#include "support/error_of.hpp"

namespace regime::predict {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kKey = "sk-test-9f8e7d6c5b4a-SECRET";

class MapCache : public AnswerCache {
 public:
  std::optional<std::string> find(const std::string& model, const std::string& prompt) override {
    auto it = kept.find(model + "\n" + prompt);
    if (it == kept.end()) return std::nullopt;
    return it->second;
  }
  void put(const std::string& model, const std::string& prompt,
           const std::string& answer) override {
    kept[model + "\n" + prompt] = answer;
  }
  std::map<std::string, std::string> kept;
};

struct LlmPredictorTest : ::testing::Test {
  test::ChatServer server;
  std::vector<double> waits;
  std::vector<std::string> logged;
  ChatOptions options(const std::string& url) {
    ChatOptions o;
    o.endpoint = url;
    o.model = "test-model";
    o.timeout_s = 5;
    o.sleep = [this](double s) { waits.push_back(s); };
    o.log = [this](const std::string& l) { logged.push_back(l); };
    return o;
  }
  PredictQuery query() const { return {"t4", parse_workload("resnet50 bs64 fp16"), std::nullopt}; }
};

using test::error_of;

TEST(ChatEndpoint, TakesABaseUrlOrTheFullPath) {
  EXPECT_EQ(parse_endpoint("http://127.0.0.1:8080/v1").path, "/v1/chat/completions");
  EXPECT_EQ(parse_endpoint("https://api.example.com/v1/").origin, "https://api.example.com");
  EXPECT_EQ(parse_endpoint("http://h:1/v1/chat/completions").path, "/v1/chat/completions");
  EXPECT_THAT(error_of([] { parse_endpoint("ftp://h/v1"); }), HasSubstr("not an http://"));
}

TEST(ChatRetry, HonoursRetryAfterElseBacksOffAndCaps) {
  ChatOptions o;
  o.backoff_s = 0.5;
  o.max_wait_s = 10;
  EXPECT_DOUBLE_EQ(retry_wait_s(1, "", o), 0.5);
  EXPECT_DOUBLE_EQ(retry_wait_s(3, "", o), 2.0);
  EXPECT_DOUBLE_EQ(retry_wait_s(1, "3", o), 3.0);
  EXPECT_DOUBLE_EQ(retry_wait_s(1, "120", o), 10.0);
  EXPECT_DOUBLE_EQ(retry_wait_s(1, "Wed, 21 Oct 2015 07:28:00 GMT", o), 0.0);  // in the past
}

TEST_F(LlmPredictorTest, AsksWithTheSpecPromptAndReadsTheJsonAnswerSendingTheKey) {
  server.push(test::answer(R"({"avg_power_W": 68.5, "regime": "cap-bound"})"));
  LlmPredictor p(PromptKind::Spec, options(server.url()), kKey, nullptr);
  auto pred = p.predict(query());
  EXPECT_DOUBLE_EQ(pred.avg_power_W.value_or(0), 68.5);
  EXPECT_EQ(pred.regime, "cap-bound");
  EXPECT_EQ(pred.predictor, "llm:spec");
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kKey);
  EXPECT_EQ(seen[0].body["model"], "test-model");
  EXPECT_EQ(seen[0].body["temperature"], 0);
  EXPECT_THAT(server.prompt(0), HasSubstr("320 GB/s"));
  EXPECT_THAT(server.prompt(0), HasSubstr("default power limit 70 W"));
  EXPECT_THAT(pred.note, Not(HasSubstr(kKey)));
}

TEST_F(LlmPredictorTest, ZeroShotCarriesNoSpecAndOneShotCarriesTheExample) {
  server.push(test::answer("about 60 W"));
  server.push(test::answer("65 watts"));
  LlmPredictor zero(PromptKind::ZeroShot, options(server.url()), "", nullptr);
  EXPECT_DOUBLE_EQ(zero.predict(query()).avg_power_W.value_or(0), 60);
  EXPECT_THAT(server.prompt(0), HasSubstr("Tesla T4"));
  EXPECT_THAT(server.prompt(0), Not(HasSubstr("GB/s")));
  EXPECT_EQ(server.seen()[0].authorization, "");  // no key, no header
  LlmPredictor one(PromptKind::OneShot, options(server.url()), "", nullptr);
  PredictQuery q = query();
  q.example = Example{parse_workload("vgg16 bs32 fp16"), 69.4, std::nullopt, "cap-bound"};
  EXPECT_DOUBLE_EQ(one.predict(q).avg_power_W.value_or(0), 65);
  EXPECT_THAT(server.prompt(1), HasSubstr("vgg16 bs32 fp16"));
  EXPECT_THAT(server.prompt(1), HasSubstr("drew 69.4 W"));
}

TEST_F(LlmPredictorTest, RefusesAnAnswerThatIsNoPowerAndDoesNotCacheIt) {
  server.push(test::answer("I cannot know that without measuring."));
  MapCache cache;
  LlmPredictor p(PromptKind::Spec, options(server.url()), kKey, &cache);
  ErrorKind kind{};
  EXPECT_THAT(error_of([&] { p.predict(query()); }, &kind),
              HasSubstr("'I cannot know that without measuring.'"));
  EXPECT_EQ(kind, ErrorKind::Parse);
  EXPECT_TRUE(cache.kept.empty());
  EXPECT_EQ(p.stats().refused, 1);
}

TEST_F(LlmPredictorTest, TheCacheAnswersARerunWithoutARequest) {
  server.push(test::answer(R"({"avg_power_W": 70})"));
  MapCache cache;
  {
    LlmPredictor p(PromptKind::Spec, options(server.url()), kKey, &cache);
    EXPECT_DOUBLE_EQ(p.predict(query()).avg_power_W.value_or(0), 70);
  }
  ASSERT_EQ(server.requests(), 1u);
  ASSERT_EQ(cache.kept.size(), 1u);
  // The key is the model and the whole prompt; never the API key.
  EXPECT_THAT(cache.kept.begin()->first, HasSubstr("320 GB/s"));
  EXPECT_THAT(cache.kept.begin()->first, Not(HasSubstr(kKey)));
  LlmPredictor again(PromptKind::Spec, options(server.url()), kKey, &cache);
  auto pred = again.predict(query());
  EXPECT_DOUBLE_EQ(pred.avg_power_W.value_or(0), 70);
  EXPECT_THAT(pred.note, HasSubstr("cached"));
  EXPECT_EQ(server.requests(), 1u);
  // Offline too: no endpoint at all.
  ChatOptions offline = options("");
  LlmPredictor no_endpoint(PromptKind::Spec, offline, "", &cache);
  EXPECT_DOUBLE_EQ(no_endpoint.predict(query()).avg_power_W.value_or(0), 70);
  // Another model is another question.
  ChatOptions other = options(server.url());
  other.model = "other-model";
  server.push(test::answer("66 W"));
  LlmPredictor p2(PromptKind::Spec, other, kKey, &cache);
  EXPECT_DOUBLE_EQ(p2.predict(query()).avg_power_W.value_or(0), 66);
  EXPECT_EQ(server.requests(), 2u);
}

TEST_F(LlmPredictorTest, RetriesA429HonouringRetryAfterThenSucceeds) {
  test::ScriptedReply busy{429, "", R"({"error": "rate limited"})", {{"Retry-After", "2"}}, 0};
  server.push(busy);
  server.push(test::answer(R"({"avg_power_W": 64})"));
  LlmPredictor p(PromptKind::Spec, options(server.url()), kKey, nullptr);
  EXPECT_DOUBLE_EQ(p.predict(query()).avg_power_W.value_or(0), 64);
  EXPECT_EQ(server.requests(), 2u);
  EXPECT_THAT(waits, ElementsAre(2.0));
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_THAT(logged[0], HasSubstr("HTTP 429; retrying in 2.0 s"));
}

TEST_F(LlmPredictorTest, ARealRetryAfterIsWaited) {
  test::ScriptedReply busy{429, "", "{}", {{"Retry-After", "1"}}, 0};
  server.push(busy);
  server.push(test::answer("64 W"));
  ChatOptions o = options(server.url());
  o.sleep = nullptr;  // the real sleep
  LlmPredictor p(PromptKind::Spec, o, kKey, nullptr);
  EXPECT_DOUBLE_EQ(p.predict(query()).avg_power_W.value_or(0), 64);
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_GE(std::chrono::duration<double>(seen[1].at - seen[0].at).count(), 0.95);
}

TEST_F(LlmPredictorTest, Retries500WithBackoffThenFailsSayingSo) {
  for (int i = 0; i < 3; ++i) server.push({500, "", "upstream exploded", {}, 0});
  ChatOptions o = options(server.url());
  o.retries = 2;
  o.backoff_s = 0.25;
  LlmPredictor p(PromptKind::Spec, o, kKey, nullptr);
  ErrorKind kind{};
  std::string msg = error_of([&] { p.predict(query()); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Io);
  EXPECT_THAT(msg, HasSubstr("HTTP 500 after 2 retries: 'upstream exploded'"));
  EXPECT_EQ(server.requests(), 3u);
  EXPECT_THAT(waits, ElementsAre(0.25, 0.5));
}

TEST_F(LlmPredictorTest, AnErrorBodyEchoingTheKeyIsRedacted) {
  server.push({401, "", std::string("invalid key Bearer ") + kKey, {}, 0});
  LlmPredictor p(PromptKind::Spec, options(server.url()), kKey, nullptr);
  std::string msg = error_of([&] { p.predict(query()); });
  EXPECT_THAT(msg, HasSubstr("HTTP 401"));
  EXPECT_THAT(msg, HasSubstr("REGIME_LLM_API_KEY"));
  EXPECT_THAT(msg, HasSubstr("[API key]"));
  EXPECT_THAT(msg, Not(HasSubstr(kKey)));
  EXPECT_EQ(server.requests(), 1u);  // 4xx other than 429: no retry
}

TEST_F(LlmPredictorTest, ATimeOutSaysSo) {
  server.push({200, R"({"avg_power_W": 70})", "", {}, 1.5});
  ChatOptions o = options(server.url());
  o.timeout_s = 0.3;
  LlmPredictor p(PromptKind::Spec, o, kKey, nullptr);
  ErrorKind kind{};
  std::string msg = error_of([&] { p.predict(query()); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Io);
  EXPECT_THAT(msg, HasSubstr("no complete answer from http://127.0.0.1:"));
  EXPECT_THAT(msg, HasSubstr("within 0.3 s"));
}

TEST_F(LlmPredictorTest, ANonChatResponseIsRefused) {
  server.push({200, "", "<html>gateway</html>", {}, 0});
  LlmPredictor p(PromptKind::Spec, options(server.url()), kKey, nullptr);
  EXPECT_THAT(error_of([&] { p.predict(query()); }), HasSubstr("not a chat completion"));
}

TEST(ChatRedaction, CutsTheKeyItsJsonFormAndEveryBearerToken) {
  const std::string key = "sk-a\"b\\c-SECRET";
  const std::string json_form = R"(sk-a\"b\\c-SECRET)";
  std::string echoed = "Authorization: Bearer " + key + "\n{\"auth\": \"Bearer " + json_form +
                       "\"} authorization:bearer other-token-123; Bearers of news";
  std::string out = redact_secret(echoed, key);
  EXPECT_EQ(out.find("SECRET"), std::string::npos) << out;
  EXPECT_EQ(out.find("other-token-123"), std::string::npos) << out;
  EXPECT_THAT(out, HasSubstr("Bearers of news"));  // a word, not a header
  EXPECT_THAT(out, HasSubstr("authorization:bearer [redacted];"));
  EXPECT_THAT(out, HasSubstr("\"Bearer [API key]\""));
  EXPECT_EQ(redact_secret("about 230 W", key), "about 230 W");
  // No key (a local server): bearer tokens are still cut.
  EXPECT_EQ(redact_secret("Bearer abc", ""), "Bearer [redacted]");
}

TEST(ChatRedaction, QuotesReceivedTextWithoutControlCharactersOrHalfCharacters) {
  EXPECT_EQ(quote_received("a\x1b[31mred\nline", 160), "'a?[31mred?line'");
  EXPECT_EQ(quote_received("ab\xc3\xa9", 3), "'ab...'");  // not half of the é
  EXPECT_EQ(quote_received(std::string(500, 'x'), 4), "'xxxx...'");
}

// A loopback server that answers 200 with whatever is asked of it, echoing the request as some
// gateways and debugging proxies do: the request line, every header and the body.
struct EchoServer {
  explicit EchoServer(std::function<std::string(const std::string& echo)> body) {
    server.Post("/v1/chat/completions",
                [body](const httplib::Request& req, httplib::Response& res) {
                  std::string echo = req.method + " " + req.path + " HTTP/1.1\r\n";
                  for (const auto& [k, v] : req.headers) echo += k + ": " + v + "\r\n";
                  echo += "\r\n" + req.body;
                  res.set_content(body(echo), "application/json");
                });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~EchoServer() {
    server.stop();
    thread.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

TEST_F(LlmPredictorTest, AnAnswerThatIsNoChatCompletionAndEchoesTheRequestIsRedacted) {
  EchoServer echo([](const std::string& e) { return e; });
  MapCache cache;
  LlmPredictor p(PromptKind::Spec, options(echo.url()), kKey, &cache);
  ErrorKind kind{};
  const std::string msg = error_of([&] { p.predict(query()); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Parse);
  EXPECT_THAT(msg, HasSubstr("not a chat completion"));
  EXPECT_THAT(msg, HasSubstr("Authorization: Bearer [API key]"));  // the echo did arrive
  EXPECT_THAT(msg, Not(HasSubstr(kKey)));
  EXPECT_THAT(msg, Not(HasSubstr("\r")));
  EXPECT_TRUE(cache.kept.empty());
}

TEST_F(LlmPredictorTest, AChatAnswerEchoingTheKeyIsKeptAndShownRedacted) {
  EchoServer echo([](const std::string& e) {
    const std::string content = nlohmann::json{{"avg_power_W", 70}, {"echo", e}}.dump();
    return nlohmann::json{
        {"choices", {{{"message", {{"role", "assistant"}, {"content", content}}}}}}}
        .dump();
  });
  MapCache cache;
  LlmPredictor p(PromptKind::Spec, options(echo.url()), kKey, &cache);
  EXPECT_DOUBLE_EQ(p.predict(query()).avg_power_W.value_or(0), 70);
  ASSERT_EQ(cache.kept.size(), 1u);
  EXPECT_THAT(cache.kept.begin()->second, HasSubstr("Bearer [API key]"));
  EXPECT_THAT(cache.kept.begin()->second, Not(HasSubstr(kKey)));
  // An answer that is no power quotes the redacted echo.
  EchoServer prose([](const std::string& e) {
    return nlohmann::json{{"choices", {{{"message", {{"content", "no idea " + e}}}}}}}.dump();
  });
  LlmPredictor q(PromptKind::Spec, options(prose.url()), kKey, nullptr);
  const std::string msg = error_of([&] { q.predict(query()); });
  EXPECT_THAT(msg, HasSubstr("no idea POST"));
  EXPECT_THAT(msg, Not(HasSubstr(kKey)));
}

TEST(ChatRetry, AHugeRetryAfterIsTheLongestWait) {
  ChatOptions o;
  o.max_wait_s = 7;
  EXPECT_DOUBLE_EQ(retry_wait_s(1, std::string(400, '9'), o), 7.0);
}

TEST(ChatConnection, ARefusedConnectionSaysWhere) {
  // A port that was free a moment ago and has no listener now.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(fd);
  ChatOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  o.model = "m";
  o.timeout_s = 2;
  ChatClient c(o, kKey);
  ErrorKind kind{};
  std::string msg = error_of([&] { c.complete({{"user", "hi"}}); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Io);
  EXPECT_THAT(msg, HasSubstr("cannot connect to http://127.0.0.1:" + std::to_string(port)));
  EXPECT_THAT(msg, Not(HasSubstr(kKey)));
}

TEST(ChatTls, ASelfSignedServerIsRefusedUnlessItsCaIsGiven) {
  test::TempDir dir;
  ASSERT_TRUE(test::make_self_signed_cert(dir.path.string())) << "openssl req failed";
  const std::string cert = (dir.path / "cert.pem").string();
  test::ChatServer server(cert, (dir.path / "key.pem").string());
  server.push(test::answer(R"({"avg_power_W": 250})"));
  ChatOptions o;
  o.endpoint = server.url(true);
  o.model = "m";
  o.timeout_s = 5;
  {
    ChatClient c(o, kKey);
    std::string msg = error_of([&] { c.complete({{"user", "hi"}}); });
    EXPECT_THAT(msg, HasSubstr("not trusted"));
    EXPECT_THAT(msg, HasSubstr("--ca-file"));
  }
  EXPECT_EQ(server.requests(), 0u);  // nothing was sent over the untrusted connection
  o.ca_file = cert;
  ChatClient c(o, kKey);
  EXPECT_THAT(c.complete({{"user", "hi"}}), HasSubstr("250"));
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kKey);
}

TEST(PredictorRegistry, MakesEveryNamedPredictorAndRefusesOthers) {
  PredictorConfig c;
  c.chat.model = "m";
  for (const auto& name : predictor_names()) EXPECT_EQ(make_predictor(name, c)->name(), name);
  EXPECT_THAT(error_of([&] { make_predictor("oracle", c); }), HasSubstr("llm:one-shot"));
}

}  // namespace
}  // namespace regime::predict
