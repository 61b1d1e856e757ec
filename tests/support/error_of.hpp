#pragma once
// What a call throws, for tests that check refusals: the Error's message (and kind), or its kind
// alone. Header-only.
#include <gtest/gtest.h>

#include <functional>
#include <string>

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

}  // namespace regime::test
