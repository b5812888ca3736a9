// The layout and the verdict of `tessera admin repair` from hand-built answers.
#include "tessera/cli/admin_repair.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::cli {
namespace {

using ::testing::HasSubstr;
namespace v1 = ::tessera::v1;

v1::TabletRepair Tablet(const std::string& start, const std::string& end, uint64_t sequence) {
  v1::TabletRepair t;
  t.set_table_name("projects/p/instances/i/tables/orders");
  t.set_start_row(start);
  t.set_end_row(end);
  t.set_sequence(sequence);
  return t;
}

void AddReplica(v1::TabletRepair* t, const std::string& endpoint, const std::string& result,
                const std::string& message = "") {
  v1::ReplicaRepair* r = t->add_replicas();
  r->set_endpoint(endpoint);
  r->set_result(result);
  r->set_message(message);
}

TEST(AdminRepairFormatTest, OneLinePerReplicaAndASummaryThatJudges) {
  v1::RepairResponse a;
  a.set_endpoint("10.0.0.1:7000");
  v1::TabletRepair* t = a.add_tablets();
  *t = Tablet("", "m", 120);
  AddReplica(t, "10.0.0.2:7000", "consistent");
  AddReplica(t, "10.0.0.3:7000", "rebuilding", "its copy differs");
  v1::RepairResponse b;
  b.set_endpoint("10.0.0.2:7000");
  t = b.add_tablets();
  *t = Tablet("m", "", 7);
  AddReplica(t, "10.0.0.1:7000", "consistent");
  AddReplica(t, "10.0.0.3:7000", "consistent");

  bool ok = false;
  std::string out = FormatRepair({a, b}, &ok);
  EXPECT_TRUE(ok) << out;
  EXPECT_THAT(out, HasSubstr("Table"));
  EXPECT_THAT(out,
              HasSubstr("orders  [-inf, m)  10.0.0.1:7000  120       10.0.0.2:7000  consistent"));
  EXPECT_THAT(out, HasSubstr("10.0.0.3:7000  rebuilding: its copy differs"));
  EXPECT_THAT(out, HasSubstr("[m, +inf)"));
  EXPECT_THAT(out, HasSubstr("Repaired 2 tablets: 4 replicas (3 consistent, 1 rebuilding)\n"));

  // A replica behind, or a tablet that could not be checked, is a failure for scripts.
  AddReplica(t, "10.0.0.4:7000", "behind", "at sequence 3 of 7");
  out = FormatRepair({a, b}, &ok);
  EXPECT_FALSE(ok);
  EXPECT_THAT(out, HasSubstr("behind: at sequence 3 of 7"));
  t->clear_replicas();
  t->set_error("not the primary");
  out = FormatRepair({b}, &ok);
  EXPECT_FALSE(ok);
  EXPECT_THAT(out, HasSubstr("not checked: not the primary"));
  EXPECT_THAT(out, HasSubstr("1 tablets could not be checked"));
}

TEST(AdminRepairFormatTest, ASingleNodesTabletsHaveNothingToCompare) {
  v1::RepairResponse a;
  a.set_endpoint("127.0.0.1:8086");
  *a.add_tablets() = Tablet("", "", 9);
  bool ok = false;
  const std::string out = FormatRepair({a}, &ok);
  EXPECT_TRUE(ok);
  EXPECT_THAT(out, HasSubstr("one copy: nothing to compare"));
  EXPECT_THAT(out, HasSubstr("Repaired 1 tablets: 0 replicas\n"));
  EXPECT_EQ(FormatRepair({}, &ok), "Repaired 0 tablets: 0 replicas\n");
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace tessera::cli
