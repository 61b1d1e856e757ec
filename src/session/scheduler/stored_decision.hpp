#pragma once
// A decision read back from a run store is input: any process, another node, or a hand with
// sqlite3 may have written the row. Before a job's prolog sets a cap from it, the row is checked
// whole here (its kind, each field it uses, the cap against the GPU's range), so that a bad row is
// a reason to leave the limits as they are, never a failed prolog (which drains the node).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/gpu_info.hpp"

namespace regime::session {

// What a stored decision says for one GPU: a cap to set, the default kept, or why it cannot be
// used (`reason`, naming the field and what is wrong with it).
struct StoredDecision {
  enum class Kind { Cap, KeepDefault, Unusable };
  Kind kind = Kind::Unusable;
  double cap_W = 0;                         // Cap: finite, within the GPU's [min, max]
  std::optional<double> energy_change_pct;  // as stored, when a finite number
  std::optional<double> time_change_pct;
  std::string reason;  // Unusable
};

// Pure and total: every JSON value gives an answer. A decision is an object with `keep_default`
// true or false; with false, `cap_W` a finite number within `gpu`'s [min, max] W;
// `energy_change_pct` and `time_change_pct`, where present, numbers or null.
StoredDecision read_stored_decision(const nlohmann::json& decision, const GpuInfo& gpu);

// A stored number that a limit is made from: the finite number `v` holds, or why not ("is a
// string ("300"), not a number", "is missing"). `name` names it in the reason.
struct StoredNumber {
  std::optional<double> value;
  std::string reason;
};
StoredNumber read_stored_number(const nlohmann::json& object, const std::string& name);

// How a stored value is shown in a reason: its JSON type and, when short, its text.
std::string describe_stored_value(const nlohmann::json& v);

}  // namespace regime::session
