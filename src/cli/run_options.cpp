#include "cli/run_options.hpp"

#include <fmt/core.h>

#include <charconv>

#include "common/error.hpp"

namespace regime::cli {

session::RunRef parse_run_ref(const std::string& text) {
  session::RunRef ref;
  ref.text = text;
  std::string number = text;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    const std::optional<session::RunRef::Kind> kind =
        session::run_kind_named(text.substr(0, colon));
    number = text.substr(colon + 1);
    if (!kind)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("run '{}': expected {}", text, session::kRunRefForms));
    ref.kind = *kind;
  }
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), ref.id);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || ref.id < 1)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("run '{}': expected {} with ID a positive integer", text,
                            session::kRunRefForms));
  return ref;
}

}  // namespace regime::cli
