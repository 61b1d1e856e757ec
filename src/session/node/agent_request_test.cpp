#include "session/node/agent_request.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace regime::session {
namespace {

TEST(AgentRequest, AnOkAnswerCarriesNoErrorAndARefusalItsKind) {
  EXPECT_EQ(answer_error_kind({{"ok", true}, {"gpus", nlohmann::json::array()}}), std::nullopt);
  EXPECT_EQ(answer_error_kind({{"ok", false}, {"kind", "read_only"}, {"error", "no"}}),
            ErrorKind::ReadOnly);
  EXPECT_EQ(answer_error_kind({{"ok", false}, {"kind", "actuation_refused"}}),
            ErrorKind::ActuationRefused);
}

TEST(AgentRequest, AnAnswerWithoutAKnownKindIsInternal) {
  EXPECT_EQ(answer_error_kind({{"ok", false}}), ErrorKind::Internal);
  EXPECT_EQ(answer_error_kind({{"ok", false}, {"kind", "no-such-kind"}}), ErrorKind::Internal);
  EXPECT_EQ(answer_error_kind({{"ok", false}, {"kind", 7}}), ErrorKind::Internal);
  EXPECT_EQ(answer_error_kind({{"ok", "yes"}}), ErrorKind::Internal);
  EXPECT_EQ(answer_error_kind(nlohmann::json::array()), ErrorKind::Internal);
}

TEST(AgentRequest, NoAgentAtTheSocketIsAnIoErrorNamingIt) {
  const std::string socket =
      (std::filesystem::temp_directory_path() / "regime-no-agent-here.sock").string();
  try {
    request_agent(socket, R"({"op":"report"})");
    FAIL() << "no agent listens there";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find(socket), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace regime::session
