#include "run/process_tree.hpp"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace regime {

std::set<int> descendants_of(int root, const std::map<int, int>& parent_of) {
  std::map<int, std::vector<int>> children;
  for (const auto& [pid, parent] : parent_of) children[parent].push_back(pid);
  std::set<int> out{root};
  std::vector<int> todo{root};
  while (!todo.empty()) {
    const int p = todo.back();
    todo.pop_back();
    auto it = children.find(p);
    if (it == children.end()) continue;
    for (int c : it->second)
      if (out.insert(c).second) todo.push_back(c);
  }
  return out;
}

std::map<int, int> read_parent_pids() {
  std::map<int, int> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // "PID (comm) state PPID ...": comm may hold spaces and parentheses, so read after the last
    // ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int parent = 0;
    if (rest >> state >> parent) out[static_cast<int>(pid)] = parent;
  }
  closedir(proc);
  return out;
}

std::set<int> process_tree(int root) { return descendants_of(root, read_parent_pids()); }

}  // namespace regime
