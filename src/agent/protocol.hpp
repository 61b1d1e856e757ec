#pragma once
// The node agent's wire protocol (docs/agent.md): one JSON object per line in each direction over
// a Unix stream socket. A request is at most kMaxRequestBytes bytes; a longer one is answered
// with an error and the connection closed, since nothing after it can be trusted to be a line.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace regime::agent {

inline constexpr size_t kMaxRequestBytes = 4096;
inline constexpr int kProtocolVersion = 1;

enum class Op {
  Report,   // read: the node's GPUs and jobs (any caller)
  Set,      // set a cap on one GPU for a job (the caller's connection when no job is named)
  Restore,  // restore a job's caps (all of them, or one GPU's)
  Begin,    // declare a job: its owner and its GPUs, and with cap_W cap them all (administrators:
            // a scheduler's prolog)
  End,      // end a job: restore its caps and report its GPUs' energy
};

struct Request {
  Op op = Op::Report;
  std::optional<std::string> job;  // a declared job's id
  std::optional<std::string> gpu;  // an index ("0") or a UUID
  std::vector<std::string> gpus;   // begin: the job's GPUs
  std::optional<double> cap_W;     // set; begin: the same cap on every GPU of the job
  std::optional<long> uid;         // begin: the job's owner
};

// One request line (without its newline). Error InvalidArgument naming the field and what it
// should be; Error OutOfRange when the line is longer than kMaxRequestBytes.
Request parse_request(std::string_view line);

// A job id: 1 to 64 characters of [A-Za-z0-9_.-] (a Slurm job id, "1234.0", "batch-7").
bool valid_job_id(std::string_view id);

// The answers: {"ok": true, ...fields} and {"ok": false, "kind": KIND, "error": MESSAGE}. KIND is
// the ErrorKind's name (error_kind_name), so a client can rebuild the same error.
nlohmann::json ok_response(nlohmann::json fields = nlohmann::json::object());
nlohmann::json error_response(ErrorKind kind, const std::string& message);
std::string_view error_kind_name(ErrorKind kind);
ErrorKind error_kind_from_name(std::string_view name);  // Internal for an unknown name

}  // namespace regime::agent
