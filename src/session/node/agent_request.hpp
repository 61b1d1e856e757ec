#pragma once
// `regime agent request`: one request line to the node agent (regimed), its answer as it came.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.hpp"

namespace regime::session {

struct AgentAnswer {
  nlohmann::json answer;             // the agent's answer, printed as it came
  std::optional<ErrorKind> refused;  // the kind the agent named when the answer is not ok
};

// The error kind an answer carries when it is not {"ok": true}: the kind it names ("internal"
// when it names none or one unknown here); nullopt for an ok answer.
std::optional<ErrorKind> answer_error_kind(const nlohmann::json& answer);

// Sends `request_line` to the agent at `socket` (empty: $REGIME_AGENT_SOCKET, else
// /run/regime/regimed.sock). Error Io naming the socket when nothing answers there.
AgentAnswer request_agent(const std::string& socket, const std::string& request_line);

}  // namespace regime::session
