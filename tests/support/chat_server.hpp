#pragma once
// A scripted OpenAI-compatible chat-completions server on loopback, for the LLM predictors'
// tests: each request gets the next scripted reply (status, assistant content or raw body,
// headers, a delay), and every request is recorded (body, Authorization header). HTTP, or HTTPS
// with a certificate the test makes. Started by the test, stopped by its destructor.
// Header-only (cpp-httplib stays out of the support library).
#include <httplib.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace regime::test {

struct ScriptedReply {
  int status = 200;
  std::string content;   // the assistant's message (wrapped in a chat completion)
  std::string raw_body;  // sent as is when not empty
  httplib::Headers headers;
  double delay_s = 0;
};

struct SeenRequest {
  nlohmann::json body;
  std::string authorization;
  std::chrono::steady_clock::time_point at;
};

inline ScriptedReply answer(std::string content) { return {200, std::move(content), "", {}, 0}; }

class ChatServer {
 public:
  // HTTP; or HTTPS when cert and key (PEM files) are given.
  explicit ChatServer(const std::string& cert = "", const std::string& key = "") {
    if (cert.empty())
      server_ = std::make_unique<httplib::Server>();
    else
      server_ = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
    if (!server_->is_valid()) throw std::runtime_error("chat server: bad certificate or key");
    server_->Post("/v1/chat/completions", [this](const httplib::Request& req,
                                                 httplib::Response& res) {
      ScriptedReply r;
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back({nlohmann::json::parse(req.body, nullptr, false),
                         req.get_header_value("Authorization"), std::chrono::steady_clock::now()});
        if (script_.empty()) {
          r.status = 500;
          r.raw_body = "{\"error\": \"script exhausted\"}";
        } else {
          r = script_.front();
          script_.pop_front();
        }
      }
      if (r.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(r.delay_s));
      res.status = r.status;
      for (const auto& [k, v] : r.headers) res.set_header(k.c_str(), v);
      std::string body = r.raw_body;
      if (body.empty() && r.status == 200)
        body = nlohmann::json{{"id", "chatcmpl-test"},
                              {"object", "chat.completion"},
                              {"choices",
                               {{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", r.content}}},
                                 {"finish_reason", "stop"}}}}}
                   .dump();
      res.set_content(body, "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ChatServer() {
    server_->stop();
    thread_.join();
  }
  ChatServer(const ChatServer&) = delete;
  ChatServer& operator=(const ChatServer&) = delete;

  void push(ScriptedReply r) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back(std::move(r));
  }
  std::vector<SeenRequest> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }
  int port() const { return port_; }
  std::string url(bool https = false) const {
    return std::string(https ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + "/v1";
  }
  // The user message of request i.
  std::string prompt(size_t i) {
    auto s = seen();
    return s.at(i).body["messages"][1]["content"].get<std::string>();
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::deque<ScriptedReply> script_;
  std::vector<SeenRequest> seen_;
};

// A self-signed certificate for 127.0.0.1 made with the openssl command line: cert.pem and
// key.pem in `dir`. False when openssl fails.
inline bool make_self_signed_cert(const std::string& dir) {
  std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-keyout '" +
      dir + "/key.pem' -out '" + dir +
      "/cert.pem' -days 1 "
      "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace regime::test
