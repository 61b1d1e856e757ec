#include "cli/config_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "support/temp_dir.hpp"

namespace regime::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::string_literals;

class ConfigFilesTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text, mode_t mode = 0644) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::string error_of(const std::string& text) {
    try {
      checked_config_text(text, "site.toml");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  test::TempDir tmp_{"regime-config-test"};
  const fs::path dir_ = tmp_.path;
};

TEST_F(ConfigFilesTest, ConfigOptionsBeforeTheCommandAreTakenOut) {
  const ConfigArgs a = take_config_args(
      {"regime", "--config", "a.toml,b.toml", "--config=c.toml", "probe", "--config", "x"});
  EXPECT_THAT(a.named, ElementsAre("a.toml", "b.toml", "c.toml"));
  // After the command, --config is the command's business (CLI11 refuses it there).
  EXPECT_THAT(a.rest, ElementsAre("regime", "probe", "--config", "x"));
  EXPECT_THAT(take_config_args({"regime", "--config"}).rest, ElementsAre("regime", "--config"));
}

TEST_F(ConfigFilesTest, NamedFilesReplaceTheDefaultsAndOnlyAbsoluteHomesNameAFile) {
  const auto named = config_candidates({"my.toml"}, "/x", "/h");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_TRUE(named[0].named);
  const auto xdg = config_candidates({}, "/x", "/h");
  ASSERT_EQ(xdg.size(), 2u);
  EXPECT_EQ(xdg[0].path, "/etc/regime/regime.toml");
  EXPECT_EQ(xdg[1].path, "/x/regime/regime.toml");
  EXPECT_EQ(config_candidates({}, "rel", "/h")[1].path, "/h/.config/regime/regime.toml");
  EXPECT_EQ(config_candidates({}, nullptr, "rel").size(), 1u);
}

TEST_F(ConfigFilesTest, TextMustBeUtf8WithoutNulAndABomIsDropped) {
  EXPECT_EQ(checked_config_text("\xEF\xBB\xBF[probe]\nseconds = 3\n", "f"),
            "[probe]\nseconds = 3\n");
  EXPECT_EQ(checked_config_text("# caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5\n", "f"),
            "# caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5\n");
  EXPECT_THAT(error_of("[probe]\nseconds = 3\0\n"s), HasSubstr("site.toml:2: a NUL"));
  EXPECT_THAT(error_of("[probe]\n\n# \xFF\n"),
              HasSubstr("site.toml:3: not UTF-8 text (byte 0xFF)"));
  EXPECT_THAT(error_of("# \xC0\xAF overlong\n"), HasSubstr("site.toml:1: not UTF-8"));
  EXPECT_THAT(error_of("# \xED\xA0\x80 surrogate\n"), HasSubstr("not UTF-8"));
  EXPECT_THAT(error_of("# \xE2\x82 cut"), HasSubstr("not UTF-8"));
}

TEST_F(ConfigFilesTest, AMissingDefaultIsNothingAMissingNamedFileIsAnError) {
  EXPECT_FALSE(load_config({dir_ / "none.toml", false}, ::geteuid()).text);
  EXPECT_TRUE(load_config({dir_ / "none.toml", false}, ::geteuid()).refusal.empty());
  EXPECT_THROW(load_config({dir_ / "none.toml", true}, ::geteuid()), Error);
}

TEST_F(ConfigFilesTest, AFileOthersCanWriteIsRefusedWithTheReason) {
  const fs::path p = write("loose.toml", "[probe]\nseconds = 3\n", 0666);
  const LoadedConfig loaded = load_config({p, false}, ::geteuid());
  EXPECT_FALSE(loaded.text);
  EXPECT_THAT(loaded.refusal, HasSubstr("writable by others (mode 0666)"));
  try {
    load_config({p, true}, ::geteuid());
    ADD_FAILURE() << "a named file others can write was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
    EXPECT_THAT(e.what(), HasSubstr("--config "));
  }
  ::chmod(p.c_str(), 0644);
  EXPECT_EQ(load_config({p, true}, ::geteuid()).text, "[probe]\nseconds = 3\n");
}

TEST_F(ConfigFilesTest, APrivilegedRunReadsOnlyRootsFiles) {
  const fs::path p = write("mine.toml", "[sweep]\nactuate = true\n");
  if (::geteuid() == 0) ::chown(p.c_str(), 65534, 65534);  // as if another user's
  const LoadedConfig loaded = load_config({p, false}, 0);
  EXPECT_FALSE(loaded.text);
  EXPECT_THAT(loaded.refusal, HasSubstr("not by root"));
  EXPECT_THAT(loaded.refusal, HasSubstr("a privileged run reads only config files that root owns"));
}

TEST_F(ConfigFilesTest, ALargeFileOrADeviceIsRefusedBeforeItIsRead) {
  const fs::path big = write("big.toml", std::string(kMaxConfigBytes + 1, '#'));
  EXPECT_THROW(load_config({big, true}, ::geteuid()), Error);
  try {
    load_config({"/dev/zero", true}, ::geteuid());
    ADD_FAILURE() << "/dev/zero was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("character device"));
  }
}

}  // namespace
}  // namespace regime::cli
