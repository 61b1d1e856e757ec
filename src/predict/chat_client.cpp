#include "predict/chat_client.hpp"

#include <fmt/core.h>
#include <httplib.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "common/error.hpp"

namespace regime::predict {

namespace {

std::string what_failed(httplib::Error e, const ChatOptions& o, const std::string& url) {
  switch (e) {
    case httplib::Error::Connection:
      return fmt::format("cannot connect to {} (connection refused or host unreachable)", url);
    case httplib::Error::ConnectionTimeout:
      return fmt::format("no connection to {} within {:g} s (--timeout-s)", url, o.timeout_s);
    case httplib::Error::Read:
      return fmt::format(
          "no answer from {} within {:g} s (--timeout-s), or the connection was "
          "closed",
          url, o.timeout_s);
    case httplib::Error::Write:
      return fmt::format("sending the request to {} failed", url);
    case httplib::Error::SSLConnection:
      return fmt::format("TLS handshake with {} failed", url);
    case httplib::Error::SSLLoadingCerts:
      return fmt::format("cannot load the CA certificates ({}) for {}",
                         o.ca_file.empty() ? "the system's" : o.ca_file, url);
    case httplib::Error::SSLServerVerification:
      return fmt::format(
          "the certificate of {} is not trusted (self-signed, unknown CA or another "
          "host's name); give its CA with --ca-file FILE",
          url);
    default:
      return fmt::format("request to {} failed: {}", url, httplib::to_string(e));
  }
}

}  // namespace

std::string api_key_from_env() {
  for (const char* name : {"REGIME_LLM_API_KEY", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  return "";
}

Endpoint parse_endpoint(const std::string& url) {
  static const std::regex re(R"((https?)://([^/?#\s]+)(/[^?#\s]*)?)");
  std::smatch m;
  if (!std::regex_match(url, m, re))
    throw Error(ErrorKind::InvalidArgument,
                "--endpoint '" + url + "' is not an http:// or https:// URL");
  Endpoint e;
  e.origin = m[1].str() + "://" + m[2].str();
  std::string path = m[3].str();
  while (!path.empty() && path.back() == '/') path.pop_back();
  const std::string tail = "/chat/completions";
  if (path.size() < tail.size() || path.compare(path.size() - tail.size(), tail.size(), tail) != 0)
    path += tail;
  e.path = path;
  return e;
}

double retry_wait_s(int attempt, const std::string& retry_after, const ChatOptions& o) {
  double wait = o.backoff_s * std::pow(2.0, attempt - 1);
  static const std::regex secs(R"(\s*([0-9]+(\.[0-9]+)?)\s*)");
  std::smatch m;
  if (std::regex_match(retry_after, m, secs)) {
    wait = std::stod(m[1].str());
  } else if (!retry_after.empty()) {
    std::tm tm{};  // "Wed, 21 Oct 2015 07:28:00 GMT"
    if (strptime(retry_after.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) != nullptr)
      wait = std::max(0.0, std::difftime(timegm(&tm), std::time(nullptr)));
  }
  return std::min(wait, o.max_wait_s);
}

std::string request_body(const std::string& model, const std::vector<ChatMessage>& messages) {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  return nlohmann::json{{"model", model}, {"messages", msgs}, {"temperature", 0}}.dump();
}

std::string response_content(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("choices") && j["choices"].is_array() &&
      !j["choices"].empty()) {
    const auto& c = j["choices"][0];
    if (c.contains("message") && c["message"].is_object() && c["message"].contains("content") &&
        c["message"]["content"].is_string())
      return c["message"]["content"].get<std::string>();
  }
  std::string start = body.substr(0, 160);
  throw Error(
      ErrorKind::Parse,
      "the endpoint's response is not a chat completion (no choices[0].message.content): '" +
          start + (body.size() > 160 ? "...'" : "'"));
}

ChatClient::ChatClient(ChatOptions options, std::string api_key)
    : options_(std::move(options)), api_key_(std::move(api_key)) {
  if (options_.model.empty())
    throw Error(ErrorKind::InvalidArgument, "an LLM predictor needs --model NAME");
  endpoint_ = parse_endpoint(options_.endpoint);
  if (!options_.sleep)
    options_.sleep = [](double s) {
      std::this_thread::sleep_for(std::chrono::duration<double>(s));
    };
  if (!options_.log) options_.log = [](const std::string& line) { std::cerr << line << "\n"; };
}

std::string ChatClient::redact(std::string text) const {
  if (api_key_.empty()) return text;
  for (size_t at; (at = text.find(api_key_)) != std::string::npos;)
    text.replace(at, api_key_.size(), "[API key]");
  return text;
}

std::string ChatClient::complete(const std::vector<ChatMessage>& messages) {
  httplib::Client client(endpoint_.origin);
  const auto whole_s = static_cast<time_t>(options_.timeout_s);
  const auto usec = static_cast<time_t>((options_.timeout_s - static_cast<double>(whole_s)) * 1e6);
  client.set_connection_timeout(whole_s, usec);
  client.set_read_timeout(whole_s, usec);
  client.set_write_timeout(whole_s, usec);
  if (endpoint_.origin.rfind("https://", 0) == 0) {
    client.enable_server_certificate_verification(true);
    if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file);
  }
  httplib::Headers headers;
  if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
  const std::string body = request_body(options_.model, messages);
  const std::string url = endpoint_.origin + endpoint_.path;
  for (int attempt = 0;; ++attempt) {
    ++requests_;
    auto res = client.Post(endpoint_.path, headers, body, "application/json");
    if (!res) throw Error(ErrorKind::Io, redact(what_failed(res.error(), options_, url)));
    const int status = res->status;
    if (status >= 200 && status < 300) return response_content(res->body);
    const bool retriable = status == 429 || status >= 500;
    std::string detail = res->body.substr(0, 200);
    if (retriable && attempt < options_.retries) {
      double wait = retry_wait_s(attempt + 1, res->get_header_value("Retry-After"), options_);
      options_.log(fmt::format("regime: {} answered HTTP {}; retrying in {:.1f} s (retry {} of {})",
                               url, status, wait, attempt + 1, options_.retries));
      options_.sleep(wait);
      continue;
    }
    std::string msg = fmt::format("{} answered HTTP {}", url, status);
    if (retriable) msg += fmt::format(" after {} retries", options_.retries);
    if (status == 401 || status == 403)
      msg += " (set the key in REGIME_LLM_API_KEY or OPENAI_API_KEY)";
    if (!detail.empty()) msg += ": " + detail;
    throw Error(ErrorKind::Io, redact(msg));
  }
}

}  // namespace regime::predict
