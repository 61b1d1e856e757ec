#pragma once
// What a call throws, for tests that check refusals: the Error's message (and kind), or its kind
// alone. Header-only.
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace regime::test {

// The message of the Error `f` throws, its kind in `*kind` when asked; "" when it throws none.
inline std::string error_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind != nullptr) *kind = e.kind();
    return e.what();
  }
  return "";
}

// The kind of the Error `f` throws; a test failure and Internal when it throws none.
inline ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorKind::Internal;
}

// Whether `f` throws an Error of `kind` whose message holds each of `parts`; the failure says what
// was thrown instead, or that nothing was.
inline ::testing::AssertionResult throws_error(const std::function<void()>& f, ErrorKind kind,
                                               std::initializer_list<std::string> parts = {}) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() != kind)
      return ::testing::AssertionFailure() << "threw " << error_kind_label(e.kind()) << ", not "
                                           << error_kind_label(kind) << ": " << e.what();
    for (const std::string& part : parts)
      if (std::string_view(e.what()).find(part) == std::string_view::npos)
        return ::testing::AssertionFailure() << "'" << part << "' is not in: " << e.what();
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no Error thrown";
}

}  // namespace regime::test
