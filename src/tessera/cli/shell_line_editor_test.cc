// Tab completion logic of the interactive shell (the libedit wiring itself needs a terminal).
#include "tessera/cli/shell_line_editor.h"

#include <gtest/gtest.h>

namespace tessera::cli::shell {
namespace {

using Words = std::vector<std::string>;

CompletionSource Source() {
  CompletionSource s;
  s.tables = [] { return Words{"events", "users", "usage"}; };
  s.families = [](const std::string& table) {
    return table == "users" ? Words{"info", "inbox"} : Words{};
  };
  return s;
}

TEST(ShellCompletionTest, CommandNames) {
  EXPECT_EQ(CompleteWord("", Source()).size(), 16u);
  EXPECT_EQ(CompleteWord("s", Source()), (Words{"scan", "set"}));
  EXPECT_EQ(CompleteWord("  de", Source()), (Words{"delete", "describe"}));
  EXPECT_EQ(CompleteWord("ls; sc", Source()), (Words{"scan"}));
  EXPECT_EQ(CompleteWord("create ", Source()), (Words{"family", "table"}));
  EXPECT_EQ(CompleteWord("set ", Source()), (Words{"gc"}));
  EXPECT_EQ(CompleteWord("help in", Source()), (Words{"increment"}));
  EXPECT_EQ(CompleteWord("help drop f", Source()), (Words{"family"}));
}

TEST(ShellCompletionTest, TableNames) {
  EXPECT_EQ(CompleteWord("scan us", Source()), (Words{"usage", "users"}));
  EXPECT_EQ(CompleteWord("describe e", Source()), (Words{"events"}));
  EXPECT_EQ(CompleteWord("drop table ", Source()), (Words{"events", "usage", "users"}));
  EXPECT_EQ(CompleteWord("create family u", Source()), (Words{"usage", "users"}));
  EXPECT_EQ(CompleteWord("set gc ev", Source()), (Words{"events"}));
  EXPECT_TRUE(CompleteWord("create table u", Source()).empty());  // a new name
}

TEST(ShellCompletionTest, FamiliesAndOptions) {
  EXPECT_EQ(CompleteWord("drop family users i", Source()), (Words{"inbox", "info"}));
  EXPECT_EQ(CompleteWord("put users r1 in", Source()), (Words{"inbox:", "info:"}));
  EXPECT_EQ(CompleteWord("put users r1 info:a=1 inb", Source()), (Words{"inbox:"}));
  EXPECT_EQ(CompleteWord("delete users r1 ", Source()), (Words{"inbox:", "info:"}));
  EXPECT_EQ(CompleteWord("scan users li", Source()), (Words{"limit="}));
  EXPECT_EQ(CompleteWord("scan users prefix=a re", Source()), (Words{"reverse"}));
  EXPECT_EQ(CompleteWord("get users r v", Source()), (Words{"versions="}));
  EXPECT_EQ(CompleteWord("count users ", Source()), (Words{"end=", "prefix=", "start="}));
  EXPECT_EQ(CompleteWord("create family users f t", Source()), (Words{"time-sorted"}));
  EXPECT_TRUE(CompleteWord("ls ", Source()).empty());
  // No source callbacks: no names, no crash.
  EXPECT_TRUE(CompleteWord("scan ", CompletionSource()).empty());
}

// Issue 9: `scan t columns=c<TAB>` completed nothing.
TEST(ShellCompletionTest, FamiliesAfterColumns) {
  EXPECT_EQ(CompleteWord("scan users columns=", Source()),
            (Words{"columns=inbox", "columns=info"}));
  EXPECT_EQ(CompleteWord("scan users columns=inf", Source()), (Words{"columns=info"}));
  EXPECT_EQ(CompleteWord("scan users limit=3 columns=info,i", Source()),
            (Words{"columns=info,inbox"}));
  EXPECT_EQ(CompleteWord("scan users columns=inbox:q,", Source()), (Words{"columns=inbox:q,info"}));
  EXPECT_EQ(CompleteWord("get users r1 columns=inb", Source()), (Words{"columns=inbox"}));
  EXPECT_EQ(CompleteWord("scan events columns=", Source()), Words{});  // no families
  EXPECT_EQ(CompleteWord("scan users col", Source()), (Words{"columns="}));
  EXPECT_TRUE(CompleteWord("get users columns=", Source()).empty());  // the row comes first
  EXPECT_TRUE(CompleteWord("scan users columns=", CompletionSource()).empty());
}

}  // namespace
}  // namespace tessera::cli::shell
