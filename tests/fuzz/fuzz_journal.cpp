// One GPU's power-limit journal file (src/act/journal.cpp): read as root by `regime restore`.
#include "act/journal.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  regime::fuzz::expect_clean([&] {
    regime::JournalEntry e =
        regime::parse_journal_entry(regime::fuzz::text_of(data, size), "fuzz.json");
    regime::journal_key(e.uuid, e.device);
    regime::parse_journal_entry(regime::to_json(e).dump(), "round-trip");
  });
  return 0;
}
