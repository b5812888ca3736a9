// The layout of `tessera admin info`, `compactionstats` and `tablestats` from hand-built answers.
#include "tessera/cli/admin_node_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace v1 = ::tessera::v1;

TEST(AdminNodeFormatTest, InfoNamesEveryFigure) {
  v1::NodeInfo info;
  info.set_endpoint("127.0.0.1:8086");
  info.set_serving(true);
  info.set_data_dir("/var/lib/tessera");
  info.set_uptime_seconds(42);
  info.set_load_bytes(3 << 20);
  info.set_tablets(4);
  info.set_sstables(7);
  info.set_block_cache_hits(3);
  info.set_block_cache_misses(1);
  info.set_block_cache_capacity_bytes(256 << 20);
  info.set_pending_jobs(2);
  info.set_running_jobs(1);
  const std::string out = FormatNodeInfo(info);
  EXPECT_THAT(out, HasSubstr("Endpoint                : 127.0.0.1:8086\n"));
  EXPECT_THAT(out, HasSubstr("Serving                 : yes\n"));
  EXPECT_THAT(out, HasSubstr("Uptime (seconds)        : 42\n"));
  EXPECT_THAT(out, HasSubstr("Load                    : 3.0 MiB\n"));
  EXPECT_THAT(out, HasSubstr("Tablets                 : 4 (7 SSTables)\n"));
  EXPECT_THAT(out, HasSubstr("capacity 256.0 MiB, 3 hits, 4 lookups, 0.750 hit rate"));
  EXPECT_THAT(out, HasSubstr("Background jobs         : 2 pending, 1 running\n"));
  info.set_serving(false);
  info.set_block_cache_hits(0);
  info.set_block_cache_misses(0);
  EXPECT_THAT(FormatNodeInfo(info), HasSubstr("NO (no lock-service session)"));
  EXPECT_THAT(FormatNodeInfo(info), HasSubstr("0 lookups, NaN hit rate"));
}

TEST(AdminNodeFormatTest, CompactionStatsShowsPendingRunningAndDone) {
  v1::NodeInfo info;
  info.set_pending_jobs(5);
  info.set_compactions(9);
  info.set_compaction_bytes_written(2048);
  const std::string out = FormatCompactionStats(info);
  EXPECT_THAT(out, HasSubstr("pending tasks           : 5\n"));
  EXPECT_THAT(out, HasSubstr("running tasks           : 0\n"));
  EXPECT_THAT(out, HasSubstr("compactions done        : 9 (2.0 KiB written)\n"));
}

TEST(AdminNodeFormatTest, NetStatsShowStreamsUnderWayAndSinceTheStart) {
  v1::NodeInfo info;
  info.set_serving(true);
  info.set_stream_throughput_mb_per_second(24);
  std::string out = FormatNetStats(info);
  EXPECT_THAT(out, HasSubstr("Mode                    : serving\n"));
  EXPECT_THAT(out, HasSubstr("Streams out             : none\n"));
  EXPECT_THAT(out, HasSubstr("Streams in              : none\n"));
  EXPECT_THAT(out, HasSubstr("Stream throughput       : 24 MiB/s\n"));
  info.set_streams_out(2);
  info.set_streams_out_bytes(3 << 20);
  info.set_streams_in(1);
  info.set_stream_bytes_sent(5 << 20);
  info.set_streams_done(4);
  info.set_stream_throughput_mb_per_second(0);
  out = FormatNetStats(info);
  EXPECT_THAT(out, HasSubstr("Streams out             : 2 under way (3.0 MiB sent so far)\n"));
  EXPECT_THAT(out, HasSubstr("Streams in              : 1 under way\n"));
  EXPECT_THAT(out, HasSubstr(": 5.0 MiB sent, 0 B received, 4 copies sent whole\n"));
  EXPECT_THAT(out, HasSubstr("Stream throughput       : unlimited\n"));
}

TEST(AdminNodeFormatTest, TableStatsHaveABlockPerTableWithMeanLatencies) {
  v1::TableStats stats;
  stats.set_endpoint("n1:1");
  EXPECT_THAT(FormatTableStats(stats), HasSubstr("(no tablets of any table asked for"));
  v1::TableStat* t = stats.add_tables();
  t->set_table_name("projects/p/instances/i/tables/t");
  t->set_tablets(2);
  t->set_row_reads(4);
  t->set_row_read_mean_seconds(0.0005);
  t->set_writes(3);
  t->set_rows_written(10);
  stats.add_tables();  // a dropped table's tablets
  const std::string out = FormatTableStats(stats);
  EXPECT_THAT(out, HasSubstr("Node: n1:1\nTable: projects/p/instances/i/tables/t\n"));
  EXPECT_THAT(out, HasSubstr("\tTablets                 : 2\n"));
  EXPECT_THAT(out, HasSubstr("\tLocal read count        : 4\n"));
  EXPECT_THAT(out, HasSubstr("\tLocal read latency      : 0.500 ms\n"));
  EXPECT_THAT(out, HasSubstr("\tLocal write count       : 3 (10 rows)\n"));
  EXPECT_THAT(out, HasSubstr("\tLocal write latency     : NaN ms\n"));
  EXPECT_THAT(out, HasSubstr("Table: (tablets being dropped)\n"));
  EXPECT_THAT(out, Not(HasSubstr("(no tablets")));
}

}  // namespace
}  // namespace tessera::cli
