// regime predict, regime predict eval and regime sweep --prior, run as a user would (the real
// binary), with a scripted chat-completions server on loopback for the LLM predictors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/chat_server.hpp"
#include "support/cli_run.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kKey = "sk-e2e-0123456789abcdef-SECRET";

fs::path data(const std::string& rel) { return fs::path(REGIME_TEST_DATA_DIR) / rel; }

std::string file_bytes(const fs::path& p) { return test::read_text(p); }

TEST(PredictCli, PredictJsonHasTheContractFields) {
  test::TempDir dir;
  auto r = test::run({"predict", "--gpu", "h200", "--workload", "resnet50 bs256 bf16 224x224",
                      "--predictor", "twin", "--json"},
                     {}, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  for (const char* k : {"gpu", "workload", "predictor", "avg_power_W", "time_per_step_s",
                        "energy_per_step_J", "regime"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["predictor"], "twin");
  EXPECT_GT(j["avg_power_W"].get<double>(), 400);
  auto b = test::run(
      {"predict", "--gpu", "t4", "--workload", "bert", "--predictor", "spec-baseline", "--json"},
      {}, dir.path);
  ASSERT_EQ(b.status, 0) << b.err;
  json jb = json::parse(b.out);
  EXPECT_EQ(jb["avg_power_W"], 70.0);
  EXPECT_TRUE(jb["time_per_step_s"].is_null());
  auto shown = test::run({"predict", "--gpu", "t4", "--workload", "bert bs32", "--predictor",
                          "llm:one-shot", "--model", "m", "--example-workload", "vgg16",
                          "--example-power", "69.5", "--show-prompt", "--json"},
                         {}, dir.path);
  ASSERT_EQ(shown.status, 0) << shown.err;
  const std::string user = json::parse(shown.out)["messages"][1]["content"];
  EXPECT_THAT(user, HasSubstr("320 GB/s"));
  EXPECT_THAT(user, HasSubstr("vgg16"));
  EXPECT_THAT(user, HasSubstr("drew 69.5 W"));
  auto text =
      test::run({"predict", "--gpu", "t4", "--workload", "bert", "--predictor", "spec-baseline"},
                {}, dir.path);
  EXPECT_THAT(text.out, HasSubstr("mean power at the default limit: 70.0 W"));
  EXPECT_THAT(text.out, HasSubstr("not a measurement"));
}

TEST(PredictCli, BadInputIsAClearError) {
  test::TempDir dir;
  auto r = test::run({"predict", "--gpu", "t4", "--workload", "x", "--predictor", "oracle"}, {},
                     dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.err, HasSubstr("unknown predictor 'oracle'"));
  auto g =
      test::run({"predict", "--gpu", "z9000", "--workload", "x", "--predictor", "spec-baseline"},
                {}, dir.path);
  EXPECT_NE(g.status, 0);
  EXPECT_THAT(g.err, HasSubstr("z9000"));
  auto m = test::run({"predict", "--gpu", "t4", "--workload", "x", "--predictor", "llm:spec"}, {},
                     dir.path);
  EXPECT_NE(m.status, 0);
  EXPECT_THAT(m.err, HasSubstr("--model"));
  auto o = test::run({"predict", "--gpu", "t4", "--workload", "x", "--predictor", "twin:one-shot"},
                     {}, dir.path);
  EXPECT_NE(o.status, 0);
  EXPECT_THAT(o.err, HasSubstr("--example-workload"));
  test::write_text(dir.path / "junk.csv", "a,b\n1,2\n");
  auto e = test::run(
      {"predict", "eval", "--measured", (dir.path / "junk.csv").string(), "--predictors", "twin"},
      {}, dir.path);
  EXPECT_NE(e.status, 0);
  EXPECT_THAT(e.err, HasSubstr("junk.csv:1: neither a sweep table"));
}

TEST(PredictCli, LlmAnswerIsCachedInTheRunStoreAndTheKeyIsNowhere) {
  test::TempDir dir;
  test::ChatServer server;
  server.push(test::answer(R"({"avg_power_W": 236, "regime": "cap-bound"})"));
  const fs::path db = dir.path / "runs.sqlite";
  const std::vector<std::string> args = {
      "predict",     "--gpu",    "V100",       "--workload", "imagenet/resnet50/bs128/adadelta",
      "--predictor", "llm:spec", "--endpoint", server.url(), "--model",
      "test-model",  "--db",     db.string(),  "--json"};
  test::Env env = {{"REGIME_LLM_API_KEY", kKey}};
  auto r = test::run(args, env, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["avg_power_W"], 236.0);
  EXPECT_EQ(j["regime"], "cap-bound");
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.seen()[0].authorization, std::string("Bearer ") + kKey);
  EXPECT_THAT(server.prompt(0), HasSubstr("900 GB/s"));  // the V100's spec sheet
  // Again: answered from the store, no request (the script is empty: a request would fail).
  auto again = test::run(args, env, dir.path);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["avg_power_W"], 236.0);
  EXPECT_THAT(json::parse(again.out)["note"].get<std::string>(), HasSubstr("cached"));
  EXPECT_EQ(server.requests(), 1u);
  // The key in no output and in no file this wrote.
  for (const auto& out : {r.out, r.err, again.out, again.err})
    EXPECT_THAT(out, Not(HasSubstr(kKey)));
  for (const auto& f : fs::recursive_directory_iterator(dir.path))
    if (f.is_regular_file()) {
      EXPECT_THAT(file_bytes(f.path()), Not(HasSubstr(kKey))) << f.path();
    }
  EXPECT_THAT(file_bytes(db), HasSubstr("test-model"));  // what is kept: model, prompt, answer
}

TEST(PredictCli, FailuresNameTheCauseAndNeverTheKey) {
  test::TempDir dir;
  test::ChatServer server;
  server.push(test::answer("No idea, sorry."));
  for (int i = 0; i < 2; ++i) server.push({503, "", "overloaded", {{"Retry-After", "0"}}, 0});
  test::Env env = {{"OPENAI_API_KEY", kKey}};
  auto base = [&](const std::string& endpoint) {
    return std::vector<std::string>{"predict",
                                    "--gpu",
                                    "t4",
                                    "--workload",
                                    "resnet50",
                                    "--predictor",
                                    "llm:zero-shot",
                                    "--endpoint",
                                    endpoint,
                                    "--model",
                                    "m",
                                    "--db",
                                    (dir.path / "runs.sqlite").string(),
                                    "--retries",
                                    "1"};
  };
  auto garbage = test::run(base(server.url()), env, dir.path);
  EXPECT_NE(garbage.status, 0);
  EXPECT_THAT(garbage.err, HasSubstr("'No idea, sorry.'"));
  auto busy = test::run(base(server.url()), env, dir.path);
  EXPECT_NE(busy.status, 0);
  EXPECT_THAT(busy.err, HasSubstr("HTTP 503 after 1 retries"));
  EXPECT_THAT(busy.err, HasSubstr("retrying in 0.0 s"));
  auto refused = test::run(base("http://127.0.0.1:1/v1"), env, dir.path);
  EXPECT_NE(refused.status, 0);
  EXPECT_THAT(refused.err, HasSubstr("cannot connect to http://127.0.0.1:1"));
  for (const auto& r : {garbage, busy, refused}) {
    EXPECT_THAT(r.out, Not(HasSubstr(kKey)));
    EXPECT_THAT(r.err, Not(HasSubstr(kKey)));
  }
  EXPECT_THAT(file_bytes(dir.path / "runs.sqlite"), Not(HasSubstr(kKey)));
}

TEST(PredictCli, EvalScoresSpecBaselineAndTwinOnTheZeusTablesAndH200Traces) {
  test::TempDir dir;
  auto r = test::run(
      {"predict", "eval", "--measured", data("zeus/V100.sweep.csv").string(), "--measured",
       data("zeus/RTX6000.sweep.csv").string(), "--predictors", "spec-baseline,twin", "--json"},
      {}, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 4u);
  for (const auto& row : j["rows"]) {
    for (const char* k : {"gpu", "predictor", "n", "mape_power_pct", "regime_accuracy"})
      EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_GT(row["n"].get<int>(), 0);
  }
  EXPECT_EQ(j["rows"][0]["gpu"], "V100");
  EXPECT_EQ(j["rows"][0]["predictor"], "spec-baseline");
  EXPECT_EQ(j["rows"][0]["n"], 68);             // every V100 workload
  EXPECT_LT(j["rows"][2]["n"].get<int>(), 68);  // the twin knows ResNet-50 and BERT only
  auto h = test::run(
      {"predict", "eval", "--gpu", "h200", "--measured", data("h200/resnet50.trace.csv").string(),
       "--measured", data("h200/gemm_bf16.trace.csv").string(), "--measured",
       data("h200/resnet18_cifar.trace.csv").string(), "--predictors",
       "spec-baseline,twin,twin:one-shot", "--json"},
      {}, dir.path);
  ASSERT_EQ(h.status, 0) << h.err;
  json jh = json::parse(h.out);
  ASSERT_EQ(jh["rows"].size(), 3u);
  EXPECT_EQ(jh["rows"][1]["n"], 3);
  // The twin was calibrated on these traces: it names all three regimes right and is close.
  EXPECT_EQ(jh["rows"][1]["regime_accuracy"], 1.0);
  EXPECT_LT(jh["rows"][1]["mape_power_pct"].get<double>(), 10);
  EXPECT_GT(jh["rows"][0]["mape_power_pct"].get<double>(), 50);  // 700 W for a 150 W job
}

TEST(PredictCli, EvalOfAnLlmRunsAgainFromTheCacheWithoutTheServer) {
  test::TempDir dir;
  const fs::path db = dir.path / "cache.sqlite";
  test::write_text(dir.path / "t.sweep.csv",
                   "workload,gpu,cap_W,time_s,avg_power_W,unit\n"
                   "imagenet/resnet50/bs64/sgd,V100,250,10,220,epoch\n"
                   "squad/bert_base_uncased/bs8/adamw,V100,250,10,210,epoch\n"
                   "movielens-1m/ncf/bs16/adam,V100,250,10,40,epoch\n");
  std::vector<std::string> args = {
      "predict",      "eval",      "--measured", (dir.path / "t.sweep.csv").string(),
      "--predictors", "llm:spec",  "--model",    "m",
      "--cache-db",   db.string(), "--json"};
  {
    test::ChatServer server;
    server.push(test::answer(R"({"avg_power_W": 230, "regime": "cap-bound"})"));
    server.push(test::answer("About 200 W."));
    server.push(test::answer("It varies."));  // refused: counted unanswered
    auto with = args;
    with.insert(with.end(), {"--endpoint", server.url()});
    auto r = test::run(with, {}, dir.path);
    ASSERT_EQ(r.status, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_EQ(j["llm_requests"], 3);
    EXPECT_EQ(j["rows"][0]["n"], 2);
    EXPECT_EQ(j["rows"][0]["unanswered"], 1);
    EXPECT_NEAR(j["rows"][0]["mape_power_pct"].get<double>(), (10.0 / 220 + 10.0 / 210) / 2 * 100,
                1e-9);
  }
  // The server is gone: the two good answers come from the cache, the refused one has none.
  auto offline = test::run(args, {}, dir.path);
  EXPECT_NE(offline.status, 0);
  EXPECT_THAT(offline.err, HasSubstr("needs --endpoint URL (no cached answer"));
}

TEST(SweepPriorCli, AdaptiveSweepStartsFromThePredictedDraw) {
  test::TempDir dir;
  const std::string table = "replay:" + data("zeus/V100.sweep.csv").string();
  auto plain = test::run({"sweep", "--device", table, "--workload",
                          "imagenet/resnet50/bs128/adadelta", "--objective", "energy", "--json"},
                         {}, dir.path);
  ASSERT_EQ(plain.status, 0) << plain.err;
  auto prior =
      test::run({"sweep", "--device", table, "--workload", "imagenet/resnet50/bs128/adadelta",
                 "--objective", "energy", "--prior", "spec-baseline", "--json"},
                {}, dir.path);
  ASSERT_EQ(prior.status, 0) << prior.err;
  json jp = json::parse(prior.out), j0 = json::parse(plain.out);
  EXPECT_EQ(jp["prior"]["predictor"], "spec-baseline");
  EXPECT_EQ(jp["prior"]["draw_W"], 250.0);
  EXPECT_FALSE(j0.contains("prior"));
  // The nameplate draw (250 W) puts the second probe at the highest cap below the default.
  std::vector<double> caps;
  for (const auto& row : jp["results"]) caps.push_back(row["cap_W"].get<double>());
  EXPECT_NE(std::find(caps.begin(), caps.end(), 225.0), caps.end());
}

TEST(PredictCli, EvalReadsProbesAndSweepsFromTheRunStore) {
  test::TempDir dir;
  const std::string db = (dir.path / "runs.sqlite").string();
  test::Env env = {{"REGIME_SYSTEM_STATE_DIR", (dir.path / "state").string()}};
  auto p = test::run({"probe", "--device", "sim:h200", "--workload", "sim:resnet50", "--seconds",
                      "20", "--db", db},
                     env, dir.path);
  ASSERT_EQ(p.status, 0) << p.err;
  auto s = test::run({"sweep", "--device", "sim:t4", "--workload", "sim:vgg16", "--strategy",
                      "exhaustive", "--db", db},
                     env, dir.path);
  ASSERT_EQ(s.status, 0) << s.err;
  auto r =
      test::run({"predict", "eval", "--db", db, "--predictors", "twin", "--json"}, env, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["cases"], 2);  // the probe at the default limit, the sweep's highest cap
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["n"], 1);
    // The simulator is the twin: its steady state predicts the simulated run closely.
    EXPECT_LT(row["mape_power_pct"].get<double>(), 5) << row.dump();
  }
}

}  // namespace
}  // namespace regime
