#pragma once
// Shared by the harnesses: bad input must end in regime::Error (a message for the user); any
// other exception, a crash, a sanitizer report or a timeout is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace regime::fuzz {

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <typename Body>
void expect_clean(Body body) {
  try {
    body();
  } catch (const regime::Error&) {
    // Refused with a message: what bad input should get.
  }
}

}  // namespace regime::fuzz
