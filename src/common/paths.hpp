#pragma once
#include <filesystem>

namespace regime {

// State directory: $REGIME_STATE_DIR, else $XDG_STATE_HOME/regime, else ~/.local/state/regime.
// Holds the power-limit journal and the default run database. Created on first use.
std::filesystem::path state_dir();

// Data directory with gpus/*.json: $REGIME_DATA_DIR, else the one the build was configured with.
std::filesystem::path data_dir();

// Writes `content` to `path` atomically: temp file in the same directory, fsync, rename, fsync dir.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace regime
