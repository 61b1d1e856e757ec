#include "session/node/agent_request.hpp"

#include <filesystem>

#include "agent/client.hpp"
#include "agent/protocol.hpp"

namespace regime::session {

std::optional<ErrorKind> answer_error_kind(const nlohmann::json& answer) {
  if (!answer.is_object()) return ErrorKind::Internal;
  if (answer.contains("ok") && answer["ok"] == true) return std::nullopt;
  const auto kind = answer.find("kind");
  return kind != answer.end() && kind->is_string()
             ? agent::error_kind_from_name(kind->get<std::string>())
             : ErrorKind::Internal;
}

AgentAnswer request_agent(const std::string& socket, const std::string& request_line) {
  agent::AgentConnection connection(socket.empty() ? agent::agent_socket_path()
                                                   : std::filesystem::path(socket));
  AgentAnswer out;
  out.answer = connection.request(request_line);
  out.refused = answer_error_kind(out.answer);
  return out;
}

}  // namespace regime::session
