// The command-line pieces every subcommand shares (issue 9: exit codes 105/106/109 for usage
// errors, no --version, `--inline-reads,--no-inline-reads{false}` in --help, HOST:PORT flags).
#include "tessera/cli/cli_flags.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/util/version.h"

namespace tessera::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Parsed {
  int code = -1;  // -1: parse succeeded
  std::string out, err;
};

Parsed Parse(CLI::App& app, std::vector<std::string> args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  Parsed p;
  std::ostringstream out, err;
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    p.code = ExitForParseError(app, e, out, err);
  }
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(CliFlagsTest, UsageErrorsExitTwoHelpAndVersionZero) {
  CLI::App app("a command", "tessera test");
  SetUpCommandLine(&app);
  int n = 1;
  app.add_option("--n", n)->check(CLI::Range(1, 10));
  EXPECT_EQ(Parse(app, {"--n", "0"}).code, 2);          // CLI11: 105
  EXPECT_EQ(Parse(app, {"--n", "x"}).code, 2);          // 106
  EXPECT_EQ(Parse(app, {"--nope"}).code, 2);            // 109
  EXPECT_EQ(Parse(app, {"extra"}).code, 2);
  EXPECT_EQ(Parse(app, {"--help"}).code, 0);
  Parsed version = Parse(app, {"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out, VersionLine("tessera test") + "\n");
  EXPECT_EQ(Parse(app, {"--n", "3"}).code, -1);
}

TEST(CliFlagsTest, VersionLineNamesVersionAndCommit) {
  EXPECT_FALSE(Version().empty());
  EXPECT_FALSE(GitCommit().empty());
  EXPECT_EQ(VersionLine("tessera"),
            StrCat("tessera ", Version(), " (commit ", GitCommit(), ")"));
}

TEST(CliFlagsTest, HelpShowsTheDefaultOfSwitchPairs) {
  CLI::App app("a command", "tessera test");
  SetUpCommandLine(&app);
  bool on = true, off = false, plain = false;
  AddSwitch(&app, "inline-reads", &on, "serve reads inline");
  AddSwitch(&app, "inline-writes", &off, "apply writes inline");
  app.add_flag("--json", plain, "print JSON");
  bool negated = true;
  app.add_flag("--other,!--no-other", negated, "another pair");
  const std::string help = app.help();
  EXPECT_THAT(help, Not(HasSubstr("{false}"))) << help;
  EXPECT_THAT(help, HasSubstr("--inline-reads, --no-inline-reads")) << help;
  EXPECT_THAT(help, HasSubstr("serve reads inline (default: on)")) << help;
  EXPECT_THAT(help, HasSubstr("apply writes inline (default: off)")) << help;
  EXPECT_THAT(help, HasSubstr("print JSON\n")) << help;
  EXPECT_THAT(help, HasSubstr("--other, --no-other")) << help;
  EXPECT_THAT(help, HasSubstr("--version")) << help;
  // The switches still work both ways.
  EXPECT_EQ(Parse(app, {"--no-inline-reads", "--inline-writes"}).code, -1);
  EXPECT_FALSE(on);
  EXPECT_TRUE(off);
}

TEST(CliFlagsTest, HostPortFlagsNameTheFlagAndTheValue) {
  CLI::App app("a command", "tessera test");
  SetUpCommandLine(&app);
  std::string listen, endpoint;
  app.add_option("--listen", listen)->check(HostPortCheck(PortZero::kPicksFreePort));
  app.add_option("--endpoint", endpoint)->check(HostPortCheck());
  Parsed p = Parse(app, {"--listen", "127.0.0.1:99999"});
  EXPECT_EQ(p.code, 2);
  EXPECT_THAT(p.err, HasSubstr("--listen: \"127.0.0.1:99999\" is not HOST:PORT: port 99999 is out "
                               "of range (0..65535)"));
  EXPECT_EQ(Parse(app, {"--listen", "127.0.0.1:0"}).code, -1);
  EXPECT_EQ(Parse(app, {"--endpoint", "127.0.0.1:0"}).code, 2);
  EXPECT_EQ(Parse(app, {"--endpoint", "localhost"}).code, 2);
  EXPECT_EQ(Parse(app, {"--endpoint", "[::1]:8086"}).code, -1);
  EXPECT_EQ(CheckHostPort("$BIGTABLE_EMULATOR_HOST", "h:x").message(),
            "$BIGTABLE_EMULATOR_HOST: \"h:x\" is not HOST:PORT: port \"x\" is not a number in "
            "0..65535");
}

}  // namespace
}  // namespace tessera::cli
