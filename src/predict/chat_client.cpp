#include "predict/chat_client.hpp"

#include <fmt/core.h>
#include <httplib.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "predict/socket_bytes.hpp"

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
          "no complete answer from {} within {:g} s (--timeout-s), or the connection was "
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

using Clock = std::chrono::steady_clock;

// Room for the status line and headers on top of the body bound.
constexpr uint64_t kHeaderAllowanceBytes = 64 * 1024;
// How often the watchdog looks: a flood at loopback speed gets a few MB past the bound at most.
constexpr auto kWatchInterval = std::chrono::milliseconds(5);

enum class Cut { None, Deadline, Size };

// Shuts the connection down once the attempt's deadline passes or the server has sent more than
// `max_bytes`: also where the library reads without a callback (a status line or headers dripped
// byte by byte, headers without end, a TLS handshake). On the descriptor itself, not through
// httplib's stop(), which waits for a connect or a handshake to finish.
class Watchdog {
 public:
  Watchdog(const std::atomic<int>& fd, Clock::time_point deadline, uint64_t max_bytes)
      : thread_([this, &fd, deadline, max_bytes] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!done_) {
            const int s = fd.load();
            if (cut_ == Cut::None && Clock::now() >= deadline) {
              cut_ = Cut::Deadline;
            } else if (cut_ == Cut::None && s >= 0) {
              const auto received = tcp_bytes_received(s);
              if (received && *received > max_bytes) cut_ = Cut::Size;
            }
            // Again at every look: the library may make a new connection (a redirect).
            if (cut_ != Cut::None && s >= 0) ::shutdown(s, SHUT_RDWR);
            wake_.wait_for(lock, kWatchInterval);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  Cut cut() {
    std::lock_guard<std::mutex> lock(mu_);
    return cut_;
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool done_ = false;
  Cut cut_ = Cut::None;
  std::thread thread_;  // last: starts once the members above exist
};

// Built anew, not replaced in place: a body full of matches stays linear.
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
    const std::string digits = m[1].str();
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), wait);
    if (ec == std::errc::result_out_of_range) wait = std::numeric_limits<double>::infinity();
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
  nlohmann::json j = parse_json_or_discarded(body);
  if (!j.is_discarded() && j.is_object() && j.contains("choices") && j["choices"].is_array() &&
      !j["choices"].empty()) {
    const auto& c = j["choices"][0];
    if (c.contains("message") && c["message"].is_object() && c["message"].contains("content") &&
        c["message"]["content"].is_string())
      return c["message"]["content"].get<std::string>();
  }
  throw Error(ErrorKind::Parse,
              "the endpoint's response is not a chat completion (no choices[0].message.content): " +
                  quote_received(body));
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

std::string ChatClient::complete(const std::vector<ChatMessage>& messages) {
  httplib::Client client(endpoint_.origin);
  const auto whole_s = static_cast<time_t>(options_.timeout_s);
  const auto usec = static_cast<time_t>((options_.timeout_s - static_cast<double>(whole_s)) * 1e6);
  client.set_connection_timeout(whole_s, usec);
  client.set_read_timeout(whole_s, usec);
  client.set_write_timeout(whole_s, usec);
  // The socket, for the watchdog's byte count (the library makes one per connection).
  std::atomic<int> socket_fd{-1};
  client.set_socket_options([&socket_fd](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    socket_fd.store(sock);
  });
  if (endpoint_.origin.rfind("https://", 0) == 0) {
    client.enable_server_certificate_verification(true);
    if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file);
  }
  httplib::Request request;
  request.method = "POST";
  request.path = endpoint_.path;
  if (!api_key_.empty()) request.headers.emplace("Authorization", "Bearer " + api_key_);
  request.headers.emplace("Content-Type", "application/json");
  request.body = request_body(options_.model, messages);
  const std::string url = endpoint_.origin + endpoint_.path;
  const size_t max_body = options_.max_response_bytes;
  for (int attempt = 0;; ++attempt) {
    ++requests_;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(options_.timeout_s));
    std::string received;
    bool too_big = false;
    bool too_late = false;
    request.response_handler = [&received](const httplib::Response&) {
      received.clear();  // a redirect's body is not the answer
      return true;
    };
    request.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (Clock::now() >= deadline) return !(too_late = true);
      if (received.size() + n > max_body) return !(too_big = true);
      received.append(data, n);
      return true;
    };
    Cut cut = Cut::None;
    httplib::Result res = [&] {
      Watchdog watchdog(socket_fd, deadline, max_body + kHeaderAllowanceBytes);
      httplib::Result r = client.send(request);
      socket_fd.store(-1);  // closed by now: the watchdog must not touch the number again
      cut = watchdog.cut();
      return r;
    }();
    if (too_big || cut == Cut::Size)
      throw Error(ErrorKind::Io,
                  fmt::format("{} sent more than {} bytes, far more than a chat completion; "
                              "the answer was dropped",
                              url, max_body));
    if (too_late || cut == Cut::Deadline)
      throw Error(ErrorKind::Io, fmt::format("no complete answer from {} within {:g} s "
                                             "(--timeout-s)",
                                             url, options_.timeout_s));
    if (!res) throw Error(ErrorKind::Io, redact(what_failed(res.error(), options_, url)));
    const int status = res->status;
    // Everything the server sent is redacted before anyone reads it: an endpoint may echo the
    // request, Authorization header included.
    received = redact(std::move(received));
    if (status >= 200 && status < 300) return response_content(received);
    const bool retriable = status == 429 || status >= 500;
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
    if (!received.empty()) msg += ": " + quote_received(received, 200);
    throw Error(ErrorKind::Io, msg);
  }
}

}  // namespace regime::predict
