#include "predict/workload.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>
#include <vector>

#include "common/error.hpp"

namespace regime::predict {

namespace {

constexpr std::array kPrecisions = {"fp32", "fp16", "bf16", "tf32", "fp8", "int8", "amp", "mixed"};
constexpr std::array kDatasets = {"imagenet",     "cifar10",   "cifar100",     "librispeech",
                                  "movielens-1m", "movielens", "sentiment140", "squad",
                                  "mnist",        "coco",      "wikitext",     "c4"};
constexpr std::array kOptimizers = {"sgd",     "adam",    "adamw", "adadelta",
                                    "adagrad", "rmsprop", "lamb"};

template <size_t N>
bool one_of(const std::string& s, const std::array<const char*, N>& words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return s == w; });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

int parse_batch(const std::string& v, const std::string& text) {
  static const std::regex digits("[0-9]+");
  if (!std::regex_match(v, digits))
    throw Error(ErrorKind::InvalidArgument,
                "workload '" + text + "': batch size '" + v + "' is not a positive integer");
  // Compared as text past leading zeros: a number of any length is read without overflow.
  const std::string value = v.substr(std::min(v.find_first_not_of('0'), v.size()));
  if (value.empty() || value.size() > 6 || std::stoi(value) < kMinBatch ||
      std::stoi(value) > kMaxBatch)
    throw Error(
        ErrorKind::InvalidArgument,
        "workload '" + text + "': batch size " + v + " is outside " + std::to_string(kMinBatch) +
            ".." + std::to_string(kMaxBatch) +
            " (samples per step: four times the largest batch measured here, NCF's bs16384)");
  return std::stoi(value);
}

}  // namespace

WorkloadDesc parse_workload(const std::string& text) {
  if (text.size() > 1000)
    throw Error(ErrorKind::InvalidArgument,
                "workload description of " + std::to_string(text.size()) +
                    " characters: say the model, batch size, precision and input size in fewer");
  WorkloadDesc w;
  w.text = text;
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : text) {
    if (c == '/' || c == ',' || c == ';' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) tokens.push_back(lower(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) tokens.push_back(lower(cur));
  if (tokens.empty())
    throw Error(ErrorKind::InvalidArgument,
                "empty workload description (say the model, batch size, precision, input size)");

  static const std::regex size_re("[0-9]+x[0-9]+(x[0-9]+)?");
  static const std::regex bs_re("(bs|batch)([0-9]+)");
  for (auto& t : tokens)
    if (t.rfind("sim:", 0) == 0) t.erase(0, 4);  // a built-in simulated workload, sim:NAME
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    std::smatch m;
    if (auto eq = t.find('='); eq != std::string::npos) {
      std::string key = t.substr(0, eq), value = t.substr(eq + 1);
      if (key == "model")
        w.model = value;
      else if (key == "batch" || key == "bs" || key == "batch_size")
        w.batch = parse_batch(value, text);
      else if (key == "precision" || key == "dtype")
        w.precision = value;
      else if (key == "input" || key == "input_size")
        w.input = value;
      else if (key == "dataset" || key == "data")
        w.dataset = value;
      else
        throw Error(ErrorKind::InvalidArgument, "workload '" + text + "': unknown key '" + key +
                                                    "' (model, batch, precision, input, dataset)");
    } else if (std::regex_match(t, m, bs_re)) {
      w.batch = parse_batch(m[2].str(), text);
    } else if ((t == "batch" || t == "bs") && i + 1 < tokens.size()) {
      w.batch = parse_batch(tokens[++i], text);
    } else if (one_of(t, kPrecisions)) {
      w.precision = t;
    } else if (std::regex_match(t, size_re)) {
      w.input = t;
    } else if (one_of(t, kDatasets)) {
      w.dataset = t;
    } else if (one_of(t, kOptimizers)) {
      // says nothing about power that the prompt's text does not carry already
    } else if (w.model.empty()) {
      w.model = t;
    }
  }
  // "gemm_bf16": the suffix is the precision.
  if (auto us = w.model.rfind('_'); us != std::string::npos) {
    std::string suffix = w.model.substr(us + 1);
    if (one_of(suffix, kPrecisions)) {
      if (w.precision.empty()) w.precision = suffix;
      w.model.erase(us);
    }
  }
  return w;
}

std::string describe(const WorkloadDesc& w) {
  std::string out;
  auto add = [&](const std::string& label, const std::string& value) {
    if (!value.empty()) out += (out.empty() ? "" : ", ") + label + " " + value;
  };
  add("model", w.model);
  add("batch size", w.batch ? std::to_string(*w.batch) : "");
  add("precision", w.precision);
  add("input", w.input);
  add("data set", w.dataset);
  return out.empty() ? w.text : out;
}

}  // namespace regime::predict
