#pragma once
// The client of an OpenAI-compatible chat-completions service (hosted services, vLLM,
// llama.cpp's server, Ollama) over HTTP or HTTPS. The API key comes from the environment and is
// sent only in the Authorization header: it is never printed, logged or stored, and is cut out of
// everything a server sends back (answers and error bodies alike) before anyone reads it. An
// answer is bounded in size and in time: a server that floods or drips cannot grow the process
// or hold it past --timeout-s. Failures are typed errors with plain messages.
#include <functional>
#include <string>
#include <vector>

#include "predict/prompt.hpp"
#include "predict/received_text.hpp"

namespace regime::predict {

struct ChatOptions {
  std::string endpoint;  // base URL ("http://127.0.0.1:8000/v1") or the full .../chat/completions
  std::string model;
  std::string ca_file;    // PEM file of the CAs to trust for HTTPS (empty: the system's)
  double timeout_s = 60;  // one attempt, whole: connect, send and the answer read to its end
  size_t max_response_bytes = 1 << 20;  // answer body; a chat completion is a few kB
  int retries = 3;                      // further attempts after a 429 or 5xx answer
  double backoff_s = 1;                 // first wait; doubles each attempt
  double max_wait_s = 60;               // longest single wait, Retry-After included
  // Injected for tests (default: std::this_thread::sleep_for and a line on stderr).
  std::function<void(double seconds)> sleep;
  std::function<void(const std::string& line)> log;
};

// REGIME_LLM_API_KEY, else OPENAI_API_KEY, else empty (local servers need none).
std::string api_key_from_env();

struct Endpoint {
  std::string origin;  // scheme://host[:port]
  std::string path;    // "/v1/chat/completions"
};
// Error InvalidArgument for anything but an http:// or https:// URL with a host.
Endpoint parse_endpoint(const std::string& url);

// The wait before retry `attempt` (1-based): Retry-After in seconds (or an HTTP date) when the
// server sent one, else backoff_s * 2^(attempt-1); never more than max_wait_s.
double retry_wait_s(int attempt, const std::string& retry_after, const ChatOptions& options);

// The request body: model, the messages, temperature 0 (the same question, the same answer).
std::string request_body(const std::string& model, const std::vector<ChatMessage>& messages);
// choices[0].message.content of a response body; Error Parse (quoting the body's start) when the
// body is not one. Callers pass a redacted body.
std::string response_content(const std::string& body);

class ChatClient {
 public:
  ChatClient(ChatOptions options, std::string api_key);
  // One completion, redacted. Error Io for a refused connection, a time-out (timeout_s for the
  // whole attempt), an answer over max_response_bytes, a TLS failure, an HTTP error (after the
  // retries for 429 and 5xx); Error Parse for a response that is not chat completions.
  std::string complete(const std::vector<ChatMessage>& messages);
  int requests_sent() const { return requests_; }
  const ChatOptions& options() const { return options_; }

 private:
  std::string redact(std::string text) const { return redact_secret(std::move(text), api_key_); }
  ChatOptions options_;
  Endpoint endpoint_;
  std::string api_key_;
  int requests_ = 0;
};

}  // namespace regime::predict
