#include "agent/protocol.hpp"

#include <gtest/gtest.h>

namespace regime::agent {
namespace {

std::string error_of(const std::string& line, ErrorKind kind = ErrorKind::InvalidArgument) {
  try {
    parse_request(line);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << line;
    return e.what();
  }
  return "no error";
}

TEST(AgentProtocol, ParsesEachOp) {
  Request r = parse_request(R"({"op":"set","gpu":0,"cap_W":250.5,"job":"1234.0"})");
  EXPECT_EQ(r.op, Op::Set);
  EXPECT_EQ(*r.gpu, "0");
  EXPECT_EQ(*r.cap_W, 250.5);
  EXPECT_EQ(*r.job, "1234.0");
  r = parse_request(R"({"op":"begin","job":"7","uid":1000,"gpus":["GPU-a",1]})");
  EXPECT_EQ(r.op, Op::Begin);
  EXPECT_EQ(r.gpus, (std::vector<std::string>{"GPU-a", "1"}));
  EXPECT_EQ(*r.uid, 1000);
  EXPECT_EQ(parse_request(R"({"op":"report"})").op, Op::Report);
  EXPECT_EQ(parse_request(R"({"op":"end","job":"7"})").op, Op::End);
  EXPECT_EQ(parse_request(R"({"op":"restore"})").op, Op::Restore);
}

TEST(AgentProtocol, RefusesMalformedRequestsSayingWhy) {
  EXPECT_EQ(error_of("{\"op\":"), "bad request: not a JSON object (one object per line)");
  EXPECT_EQ(error_of("[1,2]"), "bad request: not a JSON object (one object per line)");
  EXPECT_EQ(error_of("{}"), "bad request: \"op\" is missing (report, set, restore, begin or end)");
  EXPECT_EQ(error_of(R"({"op":"reboot"})"),
            "bad request: unknown op \"reboot\" (report, set, restore, begin or end)");
  EXPECT_EQ(error_of(R"({"op":"set","gpu":0})"), "bad request: set needs \"gpu\" and \"cap_W\"");
  EXPECT_EQ(error_of(R"({"op":"set","gpu":0,"cap_W":"250"})"),
            "bad request: \"cap_W\" must be a number of watts above 0");
  EXPECT_EQ(error_of(R"({"op":"set","gpu":0,"cap_W":-1})"),
            "bad request: \"cap_W\" must be a number of watts above 0");
  EXPECT_EQ(error_of(R"({"op":"set","gpu":0,"cap_W":1e999})"),
            "bad request: not a JSON object (one object per line)");
  EXPECT_EQ(error_of(R"({"op":"end","job":"a b"})"),
            "bad request: \"job\" must be 1 to 64 characters of letters, digits, '_', '.' and '-'");
  EXPECT_EQ(error_of(R"({"op":"begin","job":"1","uid":-5,"gpus":[0]})"),
            "bad request: \"uid\" must be a user id (a whole number)");
  EXPECT_EQ(error_of(R"({"op":"begin","job":"1","uid":5,"gpus":[]})"),
            "bad request: \"gpus\" must be a list of 1 to 64 GPUs (indexes or UUIDs)");
  EXPECT_EQ(error_of(R"({"op":"report","extra":1})"), "bad request: unknown field \"extra\"");
  EXPECT_EQ(error_of(R"({"op":"set","gpu":true,"cap_W":1})"),
            "bad request: \"gpu\" must name a GPU by index or UUID");
}

TEST(AgentProtocol, RefusesOversizedRequests) {
  std::string big = R"({"op":"report","job":")" + std::string(kMaxRequestBytes, 'x') + "\"}";
  EXPECT_EQ(error_of(big, ErrorKind::OutOfRange), "request of " + std::to_string(big.size()) +
                                                      " bytes is longer than the limit of " +
                                                      std::to_string(kMaxRequestBytes) + " bytes");
}

TEST(AgentProtocol, ErrorKindsRoundTrip) {
  for (ErrorKind k : {ErrorKind::NoPermission, ErrorKind::OutOfRange, ErrorKind::NotFound,
                      ErrorKind::ActuationRefused, ErrorKind::InvalidArgument}) {
    nlohmann::json j = error_response(k, "why");
    EXPECT_EQ(j["ok"], false);
    EXPECT_EQ(error_kind_from_name(j["kind"].get<std::string>()), k);
  }
  EXPECT_EQ(error_kind_from_name("nonsense"), ErrorKind::Internal);
}

}  // namespace
}  // namespace regime::agent
