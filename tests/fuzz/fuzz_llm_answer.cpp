// What a remote LLM service answers (src/predict/answer.cpp) and workload descriptions
// (src/predict/workload.cpp): a power or a clear refusal, never a crash.
#include "harness.hpp"
#include "predict/answer.hpp"
#include "predict/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(regime::fuzz::text_of(data, size));
  regime::fuzz::expect_clean([&] {
    regime::predict::LlmAnswer a = regime::predict::parse_llm_answer(text);
    if (!(a.avg_power_W > 0 && a.avg_power_W <= 5000)) __builtin_trap();
  });
  regime::fuzz::expect_clean([&] {
    regime::predict::WorkloadDesc w = regime::predict::parse_workload(text);
    (void)regime::predict::describe(w);
  });
  return 0;
}
