// `--config FILE` strictness (issue 9: `data_dir = "x"` was ignored, unknown keys and an
// unterminated string were accepted).
#include "tessera/cli/config_file.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/cli/cli_flags.h"
#include "tessera/testing/test_support.h"

namespace tessera::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A command with the kinds of flags `tessera serve` has.
struct Flags {
  std::string data_dir = "./data";
  size_t memtable_mb = 64;
  bool inline_reads = true;
  std::vector<std::string> seeds;
  std::string listen = "127.0.0.1:8086";
  double phi = 5;
};

class ConfigFileTest : public ::testing::Test {
 protected:
  ConfigFileTest() : path_(dir_.path() + "/tessera.toml"), app_("test command", "tessera serve") {
    app_.add_option("--config", config_);
    app_.add_option("--data-dir", flags_.data_dir);
    app_.add_option("--memtable-mb", flags_.memtable_mb)->check(CLI::Range(1, 4096));
    app_.add_flag("--inline-reads,!--no-inline-reads", flags_.inline_reads);
    app_.add_option("--seeds", flags_.seeds)->delimiter(',')->check(HostPortCheck());
    app_.add_option("--listen", flags_.listen)->check(HostPortCheck(PortZero::kPicksFreePort));
    app_.add_option("--phi", flags_.phi)->check(CLI::Range(0.5, 100.0));
  }

  // Parses `args` as the command line, then applies a file holding `toml`.
  Status Run(const std::string& toml, std::vector<std::string> args = {}) {
    std::ofstream(path_) << toml;
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app_.parse(reversed);
    return ApplyConfigFile(&app_, path_);
  }
  std::string Error(const std::string& toml, std::vector<std::string> args = {}) {
    Status s = Run(toml, std::move(args));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  }

  testing::TempDir dir_;
  std::string path_;
  std::string config_;
  Flags flags_;
  CLI::App app_;
};

TEST_F(ConfigFileTest, AppliesEveryKindOfValue) {
  Status s = Run("data-dir = \"/var/lib/tessera\"\nmemtable-mb = 8\ninline-reads = false\n"
                 "seeds = [\"10.0.0.1:7000\", \"10.0.0.2:7000\"]\nphi = 8.5\n");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(flags_.data_dir, "/var/lib/tessera");
  EXPECT_EQ(flags_.memtable_mb, 8u);
  EXPECT_FALSE(flags_.inline_reads);
  EXPECT_EQ(flags_.seeds, (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000"}));
  EXPECT_EQ(flags_.phi, 8.5);
}

TEST_F(ConfigFileTest, NegatedSwitchAndCommaList) {
  Status s = Run("no-inline-reads = true\nseeds = \"a:1,b:2\"\n");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_FALSE(flags_.inline_reads);
  EXPECT_EQ(flags_.seeds, (std::vector<std::string>{"a:1", "b:2"}));
}

TEST_F(ConfigFileTest, UnknownKeyNamesFileLineAndClosestKey) {
  EXPECT_EQ(Error("# a node\nmemtable-mb = 8\ndata_dir = \"x\"\n"),
            path_ + ":3: unknown key 'data_dir'; did you mean 'data-dir'?");
  EXPECT_EQ(flags_.data_dir, "./data");
  EXPECT_THAT(Error("compleately-unrelated = 1\n"),
              HasSubstr(":1: unknown key 'compleately-unrelated' (the keys are the flags of "
                        "`tessera serve --help`)"));
  // Sections are not flags either, nor is --config itself.
  EXPECT_THAT(Error("[cluster]\nseeds = [\"a:1\"]\n"), HasSubstr(":1: unknown table 'cluster'"));
  EXPECT_THAT(Error("config = \"other.toml\"\n"), HasSubstr(":1: unknown key 'config'"));
  EXPECT_THAT(Error("help = true\n"), HasSubstr(":1: unknown key 'help'"));
}

TEST_F(ConfigFileTest, BadValuesGoThroughTheFlagsValidators) {
  EXPECT_EQ(Error("data-dir = \"d\"\n\nmemtable-mb = 0\n"),
            path_ + ":3: bad value for 'memtable-mb': Value 0 not in range 1 to 4096");
  EXPECT_THAT(Error("memtable-mb = \"lots\"\n"), StartsWith(path_ + ":1: bad value for 'memtable-mb'"));
  EXPECT_THAT(Error("listen = \"127.0.0.1:99999\"\n"),
              HasSubstr(":1: bad value for 'listen': \"127.0.0.1:99999\" is not HOST:PORT: port "
                        "99999 is out of range (0..65535)"));
  EXPECT_THAT(Error("seeds = [\"a:1\", \"b\"]\n"), HasSubstr(":1: bad value for 'seeds'"));
  EXPECT_THAT(Error("inline-reads = \"yes\"\n"),
              HasSubstr(":1: bad value for 'inline-reads': a switch takes true or false"));
  EXPECT_THAT(Error("data-dir = 1979-05-27\n"), HasSubstr(":1: bad value for 'data-dir'"));
  EXPECT_THAT(Error("memtable-mb = [1, 2]\n"), HasSubstr(":1: bad value for 'memtable-mb'"));
}

TEST_F(ConfigFileTest, SyntaxErrorsNameTheLine) {
  EXPECT_THAT(Error("memtable-mb = 8\ndata-dir = \"unterminated\n"),
              StartsWith(path_ + ":2: TOML syntax error"));
  EXPECT_THAT(Error("memtable-mb = 8\nmemtable-mb = 9\n"), HasSubstr("TOML syntax error"));
  EXPECT_THAT(Error("\n\njust words\n"), StartsWith(path_ + ":3: TOML syntax error"));
}

TEST_F(ConfigFileTest, TheCommandLineWins) {
  Status s = Run("data-dir = \"from-file\"\nmemtable-mb = 8\ninline-reads = true\n",
                 {"--data-dir", "from-flag", "--no-inline-reads"});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(flags_.data_dir, "from-flag");
  EXPECT_EQ(flags_.memtable_mb, 8u);
  EXPECT_FALSE(flags_.inline_reads);
  // A bad value in the file is refused even where the command line overrides it.
  EXPECT_THAT(Error("memtable-mb = 0\n", {"--memtable-mb", "16"}),
              HasSubstr("bad value for 'memtable-mb'"));
  EXPECT_EQ(flags_.memtable_mb, 16u);
}

TEST_F(ConfigFileTest, MissingFileIsUnavailable) {
  app_.parse(std::vector<std::string>{});
  Status s = ApplyConfigFile(&app_, dir_.path() + "/none.toml");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

TEST(EditDistanceTest, Levenshtein) {
  EXPECT_EQ(EditDistance("data_dir", "data-dir"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace tessera::cli
