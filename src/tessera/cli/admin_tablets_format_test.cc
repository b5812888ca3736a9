// `tessera admin tablets` output from hand-built GetTablets answers: the merge (configuration,
// the primary's last sequence, each replica's own, lags), the table and the JSON.
#include "tessera/cli/admin_tablets_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::cli {
namespace {

using ::testing::HasSubstr;
namespace v1 = ::tessera::v1;

constexpr char kA[] = "10.0.0.1:1";
constexpr char kB[] = "10.0.0.2:1";
constexpr char kC[] = "10.0.0.3:1";
constexpr char kTable[] = "projects/p/instances/i/tables/r";

// One node's view of tablet `id` of kTable, rows [start, end), replicas A, B, C with `primary`.
v1::TabletReplicaView View(uint64_t id, const std::string& start, const std::string& end,
                           const std::string& primary, uint64_t last, bool is_primary) {
  v1::TabletReplicaView v;
  v.set_tablet_id(id);
  v.set_table_name(kTable);
  v.set_start_row(start);
  v.set_end_row(end);
  v.set_config_epoch(2);
  v.set_config_state("serving");
  for (const char* r : {kA, kB, kC}) v.add_replicas(r);
  v.set_primary(primary);
  v.set_is_primary(is_primary);
  v.set_last_sequence(last);
  return v;
}

v1::PeerProgress* AddPeer(v1::TabletReplicaView* v, const std::string& endpoint, uint64_t acked,
                          bool answering) {
  v1::PeerProgress* p = v->add_peers();
  p->set_endpoint(endpoint);
  p->set_acknowledged_sequence(acked);
  p->set_answering(answering);
  return p;
}

NodeAnswer Answer(const std::string& endpoint, std::vector<v1::TabletReplicaView> views) {
  v1::NodeTablets t;
  t.set_endpoint(endpoint);
  t.set_replicated(true);
  for (auto& v : views) *t.add_tablets() = std::move(v);
  return NodeAnswer{endpoint, std::move(t), ""};
}

// Two tablets ("".."m" led by A, "m".. led by B); C lags on the first and cannot be asked.
std::vector<NodeAnswer> TwoTabletsOneNodeDown() {
  v1::TabletReplicaView first = View(0xab00000000000000, "", "m", kA, 17, true);
  AddPeer(&first, kB, 17, true);
  v1::PeerProgress* c = AddPeer(&first, kC, 15, false);
  c->set_needs_rebuild(true);
  c->set_copying(true);
  first.set_retained_bytes(2048);
  v1::TabletReplicaView second = View(0xab00000000000001, "m", "", kB, 9, true);
  AddPeer(&second, kA, 9, true);
  AddPeer(&second, kC, 9, true);
  return {Answer(kA, {first, View(0xab00000000000001, "m", "", kB, 9, false)}),
          Answer(kB, {View(0xab00000000000000, "", "m", kA, 16, false), second}),
          NodeAnswer{kC, std::nullopt, "connection refused"}};
}

TEST(AdminTabletsFormatTest, MergesEachTabletsViewsIntoOneLine) {
  // Given in the order of the nodes; sorted by row.
  std::vector<NodeAnswer> answers = TwoTabletsOneNodeDown();
  std::swap(answers[0], answers[1]);
  const TabletsView view = MergeTablets(std::move(answers));
  EXPECT_FALSE(view.complete());
  ASSERT_EQ(view.tablets.size(), 2u);
  const TabletLine& first = view.tablets[0];
  EXPECT_EQ(first.start_row, "");
  EXPECT_EQ(first.end_row, "m");
  EXPECT_EQ(first.primary, kA);
  EXPECT_TRUE(first.primary_acting);
  EXPECT_EQ(first.primary_last, 17u);
  EXPECT_EQ(first.hints_bytes, 2048u);
  ASSERT_EQ(first.replicas.size(), 3u);
  EXPECT_EQ(first.replicas[0].lag, 0);
  EXPECT_EQ(first.replicas[1].last_sequence, 16u);  // B's own answer, not A's view of it
  EXPECT_EQ(first.replicas[1].lag, 1);
  EXPECT_FALSE(first.replicas[2].last_sequence.has_value());  // C was not asked
  EXPECT_FALSE(first.replicas[2].lag.has_value());
  EXPECT_FALSE(first.replicas[2].answering);
  EXPECT_TRUE(first.replicas[2].needs_rebuild);
  EXPECT_TRUE(first.replicas[2].copying);
  EXPECT_EQ(view.tablets[1].start_row, "m");
  EXPECT_EQ(view.tablets[1].primary, kB);
}

TEST(AdminTabletsFormatTest, TheTableHasALinePerTabletAndNamesWhoCouldNotBeAsked) {
  const std::string text = FormatTablets(MergeTablets(TwoTabletsOneNodeDown()));
  EXPECT_THAT(text, HasSubstr("2 tablets of 1 table in projects/p/instances/i, from 2 of 3 nodes"));
  EXPECT_THAT(text, HasSubstr("TABLE  START..END  TABLET ID"));
  EXPECT_THAT(text, HasSubstr(std::string("r      \"\"..\"m\"     ab00000000000000  2      ") + kA +
                              "  " + kC + "  2.0 KiB  " + kA + " @17, " + kB + " @16 lag 1, " + kC +
                              " @? lag ? (not answering) (copying)\n"));
  EXPECT_THAT(text, HasSubstr(std::string("r      \"m\"..       ab00000000000001  2      ") + kB +
                              "  -           0 B      " + kA + " @9 lag 0, " + kB + " @9, " + kC +
                              " @? lag ?\n"));
  EXPECT_THAT(text, HasSubstr(std::string(kC) + ": could not be asked: connection refused\n"));
}

TEST(AdminTabletsFormatTest, HintsCountMemoryAndTheHintLogAndSayTheLogsShare) {
  v1::TabletReplicaView v = View(7, "", "", kA, 30, true);
  AddPeer(&v, kB, 30, true);
  AddPeer(&v, kC, 3, false);
  v.set_retained_bytes(1024);
  v.set_hint_bytes(3072);
  v.set_hint_records(21);
  const TabletsView view = MergeTablets({Answer(kA, {v})});
  ASSERT_EQ(view.tablets.size(), 1u);
  EXPECT_EQ(view.tablets[0].hints_bytes, 4096u);
  EXPECT_THAT(FormatTablets(view), HasSubstr("4.0 KiB (3.0 KiB in 21 hints)"));
  const nlohmann::json j = TabletsToJson(view);
  EXPECT_EQ(j["tablets"][0]["hints_bytes"], 4096);
  EXPECT_EQ(j["tablets"][0]["hint_log_bytes"], 3072);
  EXPECT_EQ(j["tablets"][0]["hint_log_records"], 21);
}

TEST(AdminTabletsFormatTest, RowsAreEscapedAndAPrimaryThatDoesNotActIsSaid) {
  v1::TabletReplicaView v = View(7, std::string("a\x01\n", 3), "", kA, 3, false);
  const std::string text = FormatTablets(MergeTablets({Answer(kB, {v})}));
  EXPECT_THAT(text, HasSubstr("\"a\\x01\\n\".."));
  EXPECT_THAT(text, HasSubstr(std::string(kA) + " (not acting)"));
  EXPECT_THAT(text, HasSubstr(std::string(kA) + " @?, " + kB + " @3 lag ?, " + kC + " @? lag ?"));
}

TEST(AdminTabletsFormatTest, JsonHoldsTheMergedViewWithNullsForTheUnknown) {
  const nlohmann::json j = TabletsToJson(MergeTablets(TwoTabletsOneNodeDown()));
  ASSERT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][0]["tablets"], 2);
  EXPECT_EQ(j["nodes"][0]["primaries"], 1);
  EXPECT_EQ(j["nodes"][2]["answered"], false);
  EXPECT_EQ(j["nodes"][2]["error"], "connection refused");
  ASSERT_EQ(j["tablets"].size(), 2u);
  const nlohmann::json& t = j["tablets"][0];
  EXPECT_EQ(t["table"], kTable);
  EXPECT_EQ(t["tablet_id"], "ab00000000000000");
  EXPECT_EQ(t["end_row"], "m");
  EXPECT_EQ(t["epoch"], 2);
  EXPECT_EQ(t["primary_last_sequence"], 17);
  EXPECT_EQ(t["hints_bytes"], 2048);
  ASSERT_EQ(t["replicas"].size(), 3u);
  EXPECT_EQ(t["replicas"][1]["lag"], 1);
  EXPECT_TRUE(t["replicas"][2]["last_sequence"].is_null());
  EXPECT_TRUE(t["replicas"][2]["needs_rebuild"]);
  EXPECT_TRUE(t["replicas"][2]["copying"]);
  EXPECT_FALSE(t["replicas"][1]["copying"]);
}

TEST(AdminTabletsFormatTest, ASingleNodesNoteIsPrinted) {
  v1::NodeTablets t;
  t.set_endpoint(kA);
  t.set_note("this node does not replicate its tables (single node)");
  v1::TabletReplicaView* v = t.add_tablets();
  v->set_tablet_id(1);
  v->set_table_name(kTable);
  v->add_replicas(kA);
  v->set_primary(kA);
  v->set_is_primary(true);
  v->set_last_sequence(4);
  const std::string text = FormatTablets(MergeTablets({NodeAnswer{kA, t, ""}}));
  EXPECT_THAT(text, HasSubstr(std::string(kA) +
                              ": this node does not replicate its tables (single node)\n"));
  EXPECT_THAT(text, HasSubstr(std::string(kA) + " @4\n"));
  EXPECT_EQ(CountTablets(t).primaries, 1u);
}

}  // namespace
}  // namespace tessera::cli
