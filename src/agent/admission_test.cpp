#include "agent/admission.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::agent {
namespace {

TEST(AgentAdmission, AUserPastItsConnectionsIsRefusedAndRootStillGetsASlot) {
  Limits l;
  l.max_clients = 4;
  l.reserved_clients = 2;
  l.max_clients_per_user = 3;
  EXPECT_FALSE(refusal(l, false, 1001, {2, 2, 2}));
  auto mine = refusal(l, false, 1001, {3, 3, 3});
  ASSERT_TRUE(mine);
  EXPECT_EQ(*mine,
            "uid 1001 already has 3 connections to regimed, the most one user may hold; close one "
            "or try again later");
  // Every ordinary slot taken (by several users): another user is refused, root is not.
  auto full = refusal(l, false, 1002, {4, 4, 0});
  ASSERT_TRUE(full);
  EXPECT_NE(full->find("at most 4 connections of users other than root"), std::string::npos);
  EXPECT_FALSE(refusal(l, true, 0, {4, 4, 0}));
  EXPECT_FALSE(refusal(l, true, 0, {4, 5, 1}));
  // Root past the reserved slots too.
  auto root = refusal(l, true, 0, {4, 6, 2});
  ASSERT_TRUE(root);
  EXPECT_EQ(*root,
            "regimed serves at most 6 connections at once (2 of them kept for root and admins) "
            "and all are taken; try again later");
}

TEST(AgentAdmission, TheTokenBucketTakesABurstThenTheRate) {
  Limits l;
  l.requests_per_s = 10;
  l.request_burst = 5;
  TokenBucket b = full_bucket(l, 100);
  EXPECT_TRUE(bucket_full(b, l, 100));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(take_token(b, l, 100)) << i;
  EXPECT_FALSE(take_token(b, l, 100));
  EXPECT_NEAR(seconds_to_token(b, l, 100), 0.1, 1e-9);
  EXPECT_FALSE(take_token(b, l, 100.05));
  EXPECT_TRUE(take_token(b, l, 100.1));
  EXPECT_FALSE(bucket_full(b, l, 100.3));
  // Refilled to the burst, never beyond: an hour of silence buys 5 requests, not 36,000.
  EXPECT_TRUE(bucket_full(b, l, 3700));
  int taken = 0;
  while (take_token(b, l, 3700)) ++taken;
  EXPECT_EQ(taken, 5);
}

TEST(AgentAdmission, EachTurnServesOneRequestPerUserPrivilegedFirst) {
  std::map<uid_t, uint64_t> last;
  // uid 1001 floods on connections 1-3 (and 9); uid 1002 has one request on 5; root on 7.
  std::vector<Waiting> w = {{1, 1001, false}, {2, 1001, false}, {3, 1001, false},
                            {5, 1002, false}, {7, 0, true},     {9, 1001, false}};
  EXPECT_EQ(fair_turn(w, last), (std::vector<uint64_t>{7, 1, 5}));
  // The flooder's connections in turn, one per turn; the others' still one each.
  EXPECT_EQ(fair_turn(w, last), (std::vector<uint64_t>{7, 2, 5}));
  EXPECT_EQ(fair_turn(w, last), (std::vector<uint64_t>{7, 3, 5}));
  EXPECT_EQ(fair_turn(w, last), (std::vector<uint64_t>{7, 9, 5}));
  EXPECT_EQ(fair_turn(w, last), (std::vector<uint64_t>{7, 1, 5}));
  // A connection that was served last and left: the next one after it.
  last[1001] = 4;
  EXPECT_EQ(fair_turn({{1, 1001, false}, {9, 1001, false}}, last), (std::vector<uint64_t>{9}));
  EXPECT_TRUE(fair_turn({}, last).empty());
}

TEST(AgentAdmission, AFloodOfOneUserDelaysAnotherByOneRequest) {
  // 1000 of uid 1001's requests waiting on 32 connections; uid 1002's one request arrives: it is
  // in the next turn, whatever the flood.
  std::map<uid_t, uint64_t> last;
  std::vector<Waiting> flood;
  for (uint64_t c = 1; c <= 32; ++c) flood.push_back({c, 1001, false});
  for (int turn = 0; turn < 100; ++turn) EXPECT_EQ(fair_turn(flood, last).size(), 1u);
  flood.push_back({40, 1002, false});
  std::vector<uint64_t> next = fair_turn(flood, last);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[1], 40u);
}

TEST(AgentAdmission, IdleUnfinishedAndUnreadConnectionsExpire) {
  Limits l;  // idle 5 s, request deadline 2 s, write timeout 5 s
  ConnectionTimes t;
  t.last_activity_s = 10;
  EXPECT_EQ(expiry(t, l, 14.9), Expiry::None);
  EXPECT_EQ(expiry(t, l, 15), Expiry::Idle);
  EXPECT_EQ(expiry_message(Expiry::Idle, l), "");  // closed without a word: no answer is due
  // A connection holding caps, or one with a request waiting, is not idle.
  t.holds_caps = true;
  EXPECT_EQ(expiry(t, l, 1000), Expiry::None);
  t.holds_caps = false;
  t.busy = true;
  EXPECT_EQ(expiry(t, l, 1000), Expiry::None);
  // Half a request: two seconds to finish it, caps or not.
  t = {};
  t.last_activity_s = 10;
  t.holds_caps = true;
  t.partial_since_s = 10;
  EXPECT_EQ(expiry(t, l, 11.9), Expiry::None);
  EXPECT_EQ(expiry(t, l, 12), Expiry::UnfinishedRequest);
  EXPECT_EQ(expiry_message(Expiry::UnfinishedRequest, l),
            "request not finished (no newline) within 2 s: closing the connection");
  // Answers nobody reads.
  t = {};
  t.busy = true;
  t.unsent_since_s = 20;
  EXPECT_EQ(expiry(t, l, 24), Expiry::None);
  EXPECT_EQ(expiry(t, l, 25), Expiry::UnreadAnswers);
}

TEST(AgentAdmission, LimitsOutOfRangeAreNamedAndFittedToTheDescriptors) {
  Limits l;
  EXPECT_NO_THROW(check_limits(l));
  EXPECT_EQ(descriptors_needed(l), 256u + 64u + 64u);
  l.max_clients_per_user = 300;
  try {
    check_limits(l);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "--max-clients-per-user (at most --max-clients) must be from 1 to 256, not 300");
  }
  l = Limits{};
  l.requests_per_s = 0;
  EXPECT_THROW(check_limits(l), Error);
  // 1024 descriptors are enough; 200 are not: fewer connections, root's slots kept.
  l = Limits{};
  EXPECT_EQ(fit_to_descriptors(l, 1024).max_clients, 256u);
  Limits small = fit_to_descriptors(l, 200);
  EXPECT_LE(descriptors_needed(small), 200u);
  EXPECT_EQ(small.reserved_clients, 34u);
  EXPECT_EQ(small.max_clients, 102u);
  EXPECT_EQ(small.max_clients_per_user, 32u);
  EXPECT_NO_THROW(check_limits(small));
}

}  // namespace
}  // namespace regime::agent
