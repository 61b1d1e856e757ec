// The run database's location as the command line names it: the default store (found in the state
// folder only when asked for), a file, a server; a malformed server URI refused as parse_db_uri
// words it.
#include "store/database_location.hpp"

#include <gtest/gtest.h>

#include "store/run_store.hpp"
#include "support/error_of.hpp"
#include "support/state_dir.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;

TEST(DatabaseLocation, NoneNamedIsTheDefaultStoreOfTheStateFolder) {
  test::TempStateDir state("regime-dbloc-");
  const DatabaseLocation none = DatabaseLocation::from_text("");
  EXPECT_TRUE(none.is_default());
  EXPECT_FALSE(none.is_server());
  EXPECT_EQ(none.path(), state.path() / "runs.sqlite");
  EXPECT_EQ(DatabaseLocation().path(), state.path() / "runs.sqlite");
}

TEST(DatabaseLocation, TheDefaultsFileIsFoundWhenAskedForAndKeptOnceResolved) {
  DatabaseLocation resolved;
  DatabaseLocation lazy;
  {
    test::TempStateDir first("regime-dbloc-a-");
    resolved = lazy.resolved();
    EXPECT_EQ(resolved.path(), first.path() / "runs.sqlite");
    test::TempStateDir second("regime-dbloc-b-");
    EXPECT_EQ(lazy.path(), second.path() / "runs.sqlite");
    EXPECT_EQ(resolved.path(), first.path() / "runs.sqlite");
  }
  EXPECT_TRUE(resolved.is_default());
}

TEST(DatabaseLocation, AFileKeepsItsPathAsNamed) {
  const DatabaseLocation file = DatabaseLocation::from_text("sub/runs.sqlite");
  EXPECT_FALSE(file.is_default());
  EXPECT_FALSE(file.is_server());
  EXPECT_FALSE(file.server().has_value());
  EXPECT_EQ(file.path(), fs::path("sub/runs.sqlite"));
  EXPECT_EQ(file.resolved().path(), fs::path("sub/runs.sqlite"));
}

TEST(DatabaseLocation, AFileKnownToBeSqliteIsNeverReadAsAUri) {
  const DatabaseLocation file = DatabaseLocation::file("odd://name.sqlite");
  EXPECT_FALSE(file.is_default());
  EXPECT_FALSE(file.is_server());
  EXPECT_EQ(file.path(), fs::path("odd://name.sqlite"));
  EXPECT_FALSE(test::error_of([] { DatabaseLocation::from_text("odd://name.sqlite"); }).empty());
}

TEST(DatabaseLocation, AServerUriIsParsedOnce) {
  const std::string uri = "mariadb://regime@db.cluster:3307/runs?credentials=/etc/regime/n.cnf";
  const DatabaseLocation server = DatabaseLocation::from_text(uri);
  EXPECT_FALSE(server.is_default());
  ASSERT_TRUE(server.is_server());
  EXPECT_EQ(server.server()->host, "db.cluster");
  EXPECT_EQ(server.server()->port, 3307);
  EXPECT_EQ(server.server()->database, "runs");
  EXPECT_EQ(server.server()->credentials, fs::path("/etc/regime/n.cnf"));
  EXPECT_EQ(server.path().string(), uri);  // as written, for messages that name it
}

TEST(DatabaseLocation, AMalformedServerUriIsRefusedAsParseDbUriWordsIt) {
  for (const std::string bad : {"mariadb://db/regime", "mariadb://regime:secret@db/regime",
                                "postgres://r@db/regime", "mariadb://r@db:99999/regime"}) {
    const std::string today = test::error_of([&] { parse_db_uri(bad); });
    ASSERT_FALSE(today.empty()) << bad;
    ErrorKind kind = ErrorKind::Internal;
    EXPECT_EQ(test::error_of([&] { DatabaseLocation::from_text(bad); }, &kind), today);
    EXPECT_EQ(kind, ErrorKind::InvalidArgument) << bad;
  }
  EXPECT_NE(test::error_of([] {
              DatabaseLocation::from_text("mariadb://db/regime");
            }).find("--db mariadb://db/regime: no user (expected mariadb://USER@HOST"),
            std::string::npos);
  EXPECT_EQ(test::error_of([] {
              DatabaseLocation::from_text("mariadb://regime:secret@db/r");
            }).find("secret"),
            std::string::npos);
}

TEST(DatabaseLocation, TheStoreOpensTheFileItNames) {
  test::TempStateDir state("regime-dbloc-open-");
  const fs::path file = state.path() / "named" / "runs.sqlite";
  {
    RunStore store(DatabaseLocation::from_text(file.string()));
    EXPECT_FALSE(store.is_server());
    EXPECT_EQ(store.path(), file);
  }
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(state.path() / "runs.sqlite"));
  RunStore store{DatabaseLocation()};
  EXPECT_EQ(store.path(), state.path() / "runs.sqlite");
}

}  // namespace
}  // namespace regime
