#include "session/predict/predict.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <memory>

#include "common/error.hpp"
#include "common/utc_time.hpp"
#include "session/probe/classify_trace.hpp"
#include "store/run_store.hpp"
#include "trace/sweep_table.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace {

// The run store as the LLM predictors' answer cache.
class StoreCache : public predict::AnswerCache {
 public:
  explicit StoreCache(const DatabaseLocation& db) : store_(db) {}
  std::optional<std::string> find(const std::string& model, const std::string& prompt) override {
    return store_.find_llm_answer(model, prompt);
  }
  void put(const std::string& model, const std::string& prompt,
           const std::string& answer) override {
    store_.put_llm_answer(model, prompt, answer, utc_now_iso());
  }

 private:
  RunStore store_;
};

struct Made {
  std::unique_ptr<StoreCache> cache;
  std::unique_ptr<predict::Predictor> predictor;
};

Made make(const predict::PredictorChoice& choice, const LlmSettings& llm,
          const DatabaseLocation& db) {
  Made m;
  predict::PredictorConfig c;
  if (choice.asks_llm()) {
    if (llm.model.empty())
      throw Error(ErrorKind::InvalidArgument,
                  choice.name + " needs --model NAME (and --endpoint URL)");
    if (llm.cache) m.cache = std::make_unique<StoreCache>(db);
    c.cache = m.cache.get();
    c.chat.endpoint = llm.endpoint;
    c.chat.model = llm.model;
    c.chat.ca_file = llm.ca_file;
    c.chat.timeout_s = llm.timeout_s;
    c.chat.retries = llm.retries;
    c.api_key = predict::api_key_from_env();
  }
  m.predictor = predict::make_predictor(choice, c);
  return m;
}

// The start of the first line, enough to tell the kinds of file apart: a file whose first line
// never ends (a huge file without line breaks) is not read past it.
std::string first_line(const std::string& path) {
  constexpr std::streamsize kEnough = 4096;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot read " + path);
  std::string line(kEnough, '\0');
  in.read(line.data(), kEnough);
  line.resize(static_cast<size_t>(in.gcount()));
  if (const auto nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  return line;
}

}  // namespace

std::vector<predict::MeasuredCase> cases_from_file(const std::string& path,
                                                   const std::string& gpu) {
  const std::string head = first_line(path);
  if (head.rfind("workload,", 0) == 0)
    return predict::cases_from_table(read_sweep_table(path), path);
  if (head.rfind("t_s,", 0) == 0) {
    if (gpu.empty())
      throw Error(ErrorKind::InvalidArgument,
                  path + " is a trace, which does not name its GPU: add --gpu MODEL");
    ClassifyRequest req;
    req.trace = path;
    req.gpu_model = gpu;
    const ClassifyReport rep = classify_trace(req);
    std::string workload = std::filesystem::path(path).filename().string();
    for (const char* ext : {".trace.csv", ".csv"})
      if (workload.size() > std::string(ext).size() &&
          workload.compare(workload.size() - std::string(ext).size(), std::string::npos, ext) ==
              0) {
        workload.erase(workload.size() - std::string(ext).size());
        break;
      }
    return {
        {gpu, workload, rep.report.measurement.avg_power_W, to_string(rep.report.regime), path}};
  }
  throw Error(ErrorKind::Parse, fmt::format("{}:1: neither a sweep table (workload,gpu,cap_W,...) "
                                            "nor a trace (t_s,gpu,power_W,...)",
                                            path));
}

std::vector<predict::MeasuredCase> cases_from_db(const DatabaseLocation& db) {
  const std::string path = db.path().string();  // as named, for messages and each case's source
  if (!db.is_server() && !std::filesystem::exists(path))
    throw Error(ErrorKind::NotFound, "no run database " + path);
  RunStore store(db);
  std::vector<predict::MeasuredCase> out;
  auto runs = store.list();
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {  // oldest first
    const RunRecord& r = *it;
    if (r.status != "done" || !r.measurement.is_object() ||
        !r.measurement.contains("avg_power_W") || !r.measurement["avg_power_W"].is_number())
      continue;
    // Only probes at the default limit: what the predictors predict.
    double default_W = 0;
    try {
      default_W = twin::load_gpu_spec(r.gpu_name).default_limit_W;
    } catch (const Error&) {
      continue;
    }
    const auto& lim = r.measurement.value("mean_limit_W", nlohmann::json());
    if (!lim.is_number() || std::abs(lim.get<double>() - default_W) > 1) continue;
    out.push_back({r.gpu_name, r.workload, r.measurement["avg_power_W"].get<double>(), r.regime,
                   fmt::format("{} run:{}", path, r.id)});
  }
  auto sweeps = store.list_sweeps();
  for (auto it = sweeps.rbegin(); it != sweeps.rend(); ++it) {
    auto cases = predict::cases_from_table(
        parse_sweep_table(it->table_csv, fmt::format("{} sweep:{}", path, it->id)),
        fmt::format("{} sweep:{}", path, it->id));
    out.insert(out.end(), cases.begin(), cases.end());
  }
  return out;
}

PredictReport run_predict(const PredictRequest& r) {
  Made m = make(r.predictor, r.llm, r.db);
  PredictReport rep;
  rep.gpu = r.gpu;
  rep.workload = r.workload.text;
  predict::PredictQuery q{r.gpu, r.workload, std::nullopt};
  if (m.predictor->needs_example()) {
    if (!r.example_workload)
      throw Error(ErrorKind::InvalidArgument,
                  r.predictor.name +
                      " needs a measured example: --example-workload DESC with "
                      "--example-power W or --example-from FILE");
    predict::Example e{*r.example_workload, 0, std::nullopt, std::nullopt};
    if (r.example_power_W) {
      e.avg_power_W = *r.example_power_W;
    } else if (!r.example_from.empty()) {
      const bool is_db = first_line(r.example_from).rfind("SQLite format 3", 0) == 0;
      auto cases = is_db ? cases_from_db(DatabaseLocation::file(r.example_from))
                         : cases_from_file(r.example_from, r.gpu);
      auto same_gpu = [&](const std::string& g) {
        try {
          return twin::load_gpu_spec(g).model == twin::load_gpu_spec(r.gpu).model;
        } catch (const Error&) {
          return g == r.gpu;
        }
      };
      auto it = std::find_if(cases.begin(), cases.end(), [&](const predict::MeasuredCase& c) {
        return c.workload == r.example_workload->text && same_gpu(c.gpu);
      });
      if (it == cases.end())
        throw Error(ErrorKind::NotFound,
                    fmt::format("{} has no measurement of '{}' on {}", r.example_from,
                                r.example_workload->text, r.gpu));
      e.avg_power_W = it->avg_power_W;
      e.regime = it->regime;
    } else {
      throw Error(ErrorKind::InvalidArgument,
                  "--example-workload needs --example-power W or --example-from FILE");
    }
    q.example = e;
    rep.example = e;
  }
  if (r.show_prompt) {
    const auto* llm = dynamic_cast<const predict::LlmPredictor*>(m.predictor.get());
    if (llm == nullptr)
      throw Error(ErrorKind::InvalidArgument, "--show-prompt is for llm:* predictors");
    rep.prompt_only = true;
    rep.prompt = llm->prompt(q);
    return rep;
  }
  rep.prediction = m.predictor->predict(q);
  rep.requests_sent = m.predictor->requests_sent();
  return rep;
}

EvalReport run_predict_eval(const EvalRequest& r) {
  if (r.measured.empty() && !r.db)
    throw Error(ErrorKind::InvalidArgument, "give --measured FILE or --db FILE");
  if (r.predictors.empty()) throw Error(ErrorKind::InvalidArgument, "give --predictors LIST");
  EvalReport rep;
  for (const auto& f : r.measured) {
    auto c = cases_from_file(f, r.gpu);
    rep.cases.insert(rep.cases.end(), c.begin(), c.end());
  }
  if (r.db) {
    auto c = cases_from_db(*r.db);
    rep.cases.insert(rep.cases.end(), c.begin(), c.end());
  }
  if (rep.cases.empty()) throw Error(ErrorKind::NotFound, "no measured case to score");
  predict::EvalOptions o;
  o.by_family = r.by_family;
  o.examples = r.examples;
  o.on_skip = [&](const std::string& line) { rep.skipped.push_back(line); };
  for (const auto& choice : r.predictors) {
    Made m = make(choice, r.llm, r.cache_db.value_or(r.db.value_or(DatabaseLocation())));
    auto rows = predict::evaluate(*m.predictor, rep.cases, o);
    rep.rows.insert(rep.rows.end(), rows.begin(), rows.end());
    rep.requests_sent += m.predictor->requests_sent();
    rep.cache_hits += m.predictor->cache_hits();
  }
  if (r.by_family) rep.families = predict::summarize_families(rep.rows);
  return rep;
}

std::optional<double> predicted_draw_W(const predict::PredictorChoice& predictor,
                                       const std::string& gpu, const std::string& workload,
                                       const LlmSettings& llm, const DatabaseLocation& db) {
  Made m = make(predictor, llm, db);
  if (m.predictor->needs_example())
    throw Error(ErrorKind::InvalidArgument,
                "--prior " + predictor.name +
                    ": a one-shot predictor needs an example; use one that "
                    "predicts from the description alone");
  return m.predictor->predict({gpu, predict::parse_workload(workload), std::nullopt}).avg_power_W;
}

}  // namespace regime::session
