#pragma once
// The node agent's state: the node's GPUs, the jobs holding caps on them, and the policy that says
// who may do what. Each request is decided here and every change goes through a PowerLimitGuard
// (journaled before the first change, restored when its job ends, when the connection that set it
// closes, and on every catchable signal). One guard per GPU: a GPU is capped by one job at a time.
//
// Jobs come in two kinds:
//  - declared: an administrator (a scheduler's prolog) names the job, its owner and its GPUs with
//    `begin`; its caps stay until `end` (the epilog), whichever connection set them;
//  - a connection's own: caps set without naming a job last as long as the connection, so a
//    client killed with SIGKILL leaves nothing behind.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "agent/policy.hpp"
#include "agent/protocol.hpp"
#include "device/gpu.hpp"

namespace regime::agent {

class Agent {
 public:
  // Error Parse naming the policy's line when an allow line names a GPU this node does not have.
  Agent(Policy policy, std::vector<GpuPtr> gpus, ActuationPolicy actuation, std::ostream& log);
  ~Agent();  // restores every cap still held
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // The answer to one request from `peer` on connection `conn`; never throws.
  nlohmann::json handle(const Peer& peer, uint64_t conn, const Request& request);
  // The connection is gone: restore the caps its own job holds.
  void connection_closed(uint64_t conn);

  size_t gpu_count() const { return nodes_.size(); }
  // Root or an admin line of the policy: the callers the server keeps slots for.
  bool privileged(const Peer& peer) const { return is_admin(policy_, peer); }
  // The connection's own job holds a cap: closing it would restore the cap.
  bool holds_caps(uint64_t conn) const;

  // Keeps the declared jobs (owner, GPUs, energy counters at begin; not their caps, which a
  // restart restores) in `file`, and takes back the ones found there: a restarted agent still
  // knows whose GPUs they are and reports their energy since begin. A file that cannot be read
  // is logged and ignored: it only holds accounting.
  void keep_jobs_in(const std::filesystem::path& file);

 private:
  struct Held {
    std::unique_ptr<PowerLimitGuard> guard;
    double cap_W = 0;
  };
  struct Job {
    std::string key;  // "job:ID" or "conn:N"
    std::string id;   // declared: its id; else empty
    uid_t uid = 0;
    pid_t pid = 0;  // a connection's job: the client's pid
    bool declared = false;
    std::vector<size_t> gpus;                 // declared: its GPUs
    std::map<size_t, double> energy_start_J;  // per GPU, when the job took it
    std::map<size_t, Held> held;              // GPUs it caps now
    double begin_unix_s = 0;
  };
  struct Node {
    GpuPtr gpu;
    GpuInfo info;        // identity, read at start
    std::string holder;  // the key of the job capping it, or empty
  };

  nlohmann::json report(const Peer& peer, const Request& r);
  nlohmann::json set(const Peer& peer, uint64_t conn, const Request& r);
  nlohmann::json restore(const Peer& peer, uint64_t conn, const Request& r);
  nlohmann::json begin(const Peer& peer, const Request& r);
  nlohmann::json end(const Peer& peer, const Request& r);

  size_t find_gpu(const std::string& name) const;  // Error NotFound
  Job& job_for(const std::string& key);            // Error NotFound for a declared job
  void check_owner(const Peer& peer, const Job& job) const;
  // Restores the job's caps (one GPU when `only` is set); returns what was restored.
  nlohmann::json restore_job(Job& job, std::optional<size_t> only);
  nlohmann::json job_json(const Job& job);
  std::optional<double> energy_J(size_t index);
  void save_jobs();
  // begin with cap_W: the same cap on every GPU of the job (Error from the first that fails).
  void cap_job(const Peer& peer, const Job& job, double cap_W);
  // A declared job of `uid` has GPU `index`: that user may set any cap the card allows.
  bool holds_declared_job_gpu(uid_t uid, size_t index) const;
  // The GPU's limit before the job `key` capped it (its guard's original), or its current limit
  // while no job holds it; nullopt while another job does.
  std::optional<double> limit_before_W(const std::string& key, size_t index) const;
  // Error ActuationRefused while a job other than `key` holds the GPU (one guard per GPU).
  void refuse_if_held_by_other(const std::string& key, size_t index) const;
  // The job `key` that takes the GPU, made for a connection on its first cap; it records the
  // GPU's energy counter when it first takes it.
  Job& job_taking(const std::string& key, const Peer& peer, size_t index);
  // Sets the cap through the job's guard for the GPU (made on first use) and makes the job its
  // holder; returns the limit enforced. A set that fails leaves no unused guard, nor an empty
  // connection job, behind.
  double hold_cap(const std::string& key, Job& job, size_t index, double cap_W);

  Policy policy_;
  ActuationPolicy actuation_;
  std::ostream& log_;
  std::vector<Node> nodes_;
  std::map<std::string, Job> jobs_;
  std::optional<std::filesystem::path> jobs_file_;
};

}  // namespace regime::agent
