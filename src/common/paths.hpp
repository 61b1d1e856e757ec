#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace regime {

// State directory: $REGIME_STATE_DIR, else $XDG_STATE_HOME/regime, else ~/.local/state/regime.
// Holds the power-limit journal and the default run database. Created on first use.
std::filesystem::path state_dir();

// Data directory with gpus/*.json: $REGIME_DATA_DIR, else found from where the running binary is
// (/proc/self/exe, find_data_dir), so an installed or moved tree works and no build path is
// compiled in. When nothing is found: the installed location, for messages to name.
std::filesystem::path data_dir();

// Where the spec files are for a binary in `exe_dir`: `../share/regime` when it holds gpus/ (the
// installed layout, bin/ beside share/), else the nearest `data` folder holding gpus/ in
// `exe_dir` or a folder above it (a build folder: each has a `data` link to the source tree's, and
// one inside the source tree also finds the tree's own).
std::optional<std::filesystem::path> find_data_dir(const std::filesystem::path& exe_dir);

// Writes `content` to `path` atomically: temp file in the same directory, fsync, rename, fsync dir.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace regime
