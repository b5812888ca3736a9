#include "examples/inbox_search/inbox.h"

#include "gtest/gtest.h"

namespace tessera::examples {
namespace {

TEST(InboxTest, Words) {
  EXPECT_EQ(Words("Dinner on Friday? dinner!"),
            (std::vector<std::string>{"dinner", "on", "friday"}));
  EXPECT_TRUE(Words(" ,.;").empty());
  EXPECT_EQ(Words("a1b2-C3"), (std::vector<std::string>{"a1b2", "c3"}));
}

TEST(InboxTest, ParseMessageLine) {
  auto m = ParseMessageLine("1700000000001000\talice\tbob,,carol\tHi there");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->time_micros, 1700000000001000);
  EXPECT_EQ(m->sender, "alice");
  EXPECT_EQ(m->recipients, (std::vector<std::string>{"bob", "carol"}));
  EXPECT_EQ(m->text, "Hi there");
  for (const char* bad : {"", "1\ta\tb", "x\ta\tb\tt", "-5\ta\tb\tt", "1\t\tb\tt", "1\ta\t\tt"}) {
    EXPECT_EQ(ParseMessageLine(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace tessera::examples
