#include "store/database_location.hpp"

#include <utility>

#include "store/run_store.hpp"

namespace regime {

DatabaseLocation DatabaseLocation::from_text(const std::string& text) {
  DatabaseLocation out;
  if (text.empty()) return out;
  out.server_ = parse_db_uri(text);
  out.named_ = true;
  out.text_ = text;
  return out;
}

DatabaseLocation DatabaseLocation::file(std::filesystem::path path) {
  DatabaseLocation out;
  out.named_ = true;
  out.text_ = std::move(path);
  return out;
}

std::filesystem::path DatabaseLocation::path() const {
  return named_ || !text_.empty() ? text_ : RunStore::default_path();
}

DatabaseLocation DatabaseLocation::resolved() const {
  DatabaseLocation out = *this;
  out.text_ = path();
  return out;
}

}  // namespace regime
