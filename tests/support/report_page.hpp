#pragma once
// The page data a report's HTML carries (report::render_html writes it in one script element,
// every '<' in it as \u003c), for tests that check a page on its data.
#include <nlohmann/json.hpp>
#include <string>

namespace regime::test {

inline nlohmann::json report_page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"page-data\">\n";
  const size_t a = html.find(open);
  const size_t b = html.find("\n</script>", a);
  if (a == std::string::npos || b == std::string::npos) return nlohmann::json();
  return nlohmann::json::parse(html.substr(a + open.size(), b - a - open.size()));
}

}  // namespace regime::test
