#pragma once
// Text received from a server, made safe to print or store: pure, no HTTP, so every reader of a
// server's answer (the chat client, the answer parser, the fuzzers) shares it.
#include <cstddef>
#include <string>

namespace regime::predict {

// `text` with every copy of `key` (also JSON-escaped) and any bearer token cut out: what a
// server echoes of a request must not reach a terminal or the run store.
std::string redact_secret(std::string text, const std::string& key);
// At most `max_chars` of text received from a server, quoted for a message: control characters
// (terminal escapes, line breaks) shown as '?', cut at a UTF-8 character boundary.
std::string quote_received(const std::string& text, size_t max_chars = 160);

}  // namespace regime::predict
