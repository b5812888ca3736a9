// kill -9 under write load: `tessera serve --sync batch --memtable-mb 1` takes MutateRow and
// MutateRows from several client threads (each on its own connection), each write a new row of
// two cells; the test records every ACKNOWLEDGED write, kills the server with SIGKILL mid-load,
// restarts it on the same data folder and checks that
//   * every acknowledged row is there, with both cells and the right values;
//   * every row there was written by the test, whole (a row mutation is atomic: both cells
//     or neither, also for writes in flight at the kill);
// over several cycles, the rows of earlier cycles included. The last cycle ends with a clean
// SIGTERM (exit 0) and one more restart and check.
//
//   kill9_test --tessera=<tessera binary> [gtest flags]
//   TESSERA_SEED=<n>            replay the kill times (printed at the start)
//   TESSERA_KILL9_CYCLES=<n>    cycles (default 5)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "server_process.h"

namespace tessera::integration {
namespace {

namespace btv2 = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;

std::string g_tessera_binary;

constexpr char kTable[] = "kill9";
constexpr int kRowThreads = 4;    // MutateRow writers
constexpr int kBulkThreads = 1;   // MutateRows writers (8 rows per call)
constexpr int kBulkRows = 8;

std::string ValueA(const std::string& key) { return StrCat("a:", key); }
// Padded so that a cycle's writes fill the 1 MiB memtable (--memtable-mb 1): the kills also
// hit flushes and compactions.
std::string ValueB(const std::string& key) {
  return StrCat("b:", key, ":", std::string(300, static_cast<char>('a' + key.size() % 26)));
}

void AddRowMutations(const std::string& key,
                     google::protobuf::RepeatedPtrField<btv2::Mutation>* mutations) {
  auto* a = mutations->Add()->mutable_set_cell();
  a->set_family_name("f");
  a->set_column_qualifier("a");
  a->set_timestamp_micros(1000);
  a->set_value(ValueA(key));
  auto* b = mutations->Add()->mutable_set_cell();
  b->set_family_name("g");
  b->set_column_qualifier("b");
  b->set_timestamp_micros(1000);
  b->set_value(ValueB(key));
}

// What the writers of one cycle did.
struct WriterLog {
  std::vector<std::string> attempted;     // sent (acknowledged or not)
  std::vector<std::string> acknowledged;  // answered OK
  int errors = 0;
};

class Kill9Test : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* seed_env = std::getenv("TESSERA_SEED");
    seed_ = seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10)
                                : static_cast<uint64_t>(
                                      std::chrono::system_clock::now().time_since_epoch().count());
    const char* cycles_env = std::getenv("TESSERA_KILL9_CYCLES");
    cycles_ = cycles_env != nullptr ? std::clamp(std::atoi(cycles_env), 1, 50) : 5;
    std::printf("kill9_test: seed %llu (replay with TESSERA_SEED=%llu), %d cycles\n",
                static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(seed_),
                cycles_);
    std::fflush(stdout);
    dir_ = std::make_unique<TempDir>("tessera-kill9");
    data_dir_ = dir_->path() + "/data";
  }

  void Start() {
    auto server = ServerProcess::StartTessera(g_tessera_binary, data_dir_,
                                              {"--sync", "batch", "--memtable-mb", "1"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void CreateTable() {
    auto admin = btadmin::BigtableTableAdmin::NewStub(server_->NewChannel());
    btadmin::CreateTableRequest request;
    request.set_parent(kInstanceName);
    request.set_table_id(kTable);
    (*request.mutable_table()->mutable_column_families())["f"].mutable_gc_rule();
    (*request.mutable_table()->mutable_column_families())["g"].mutable_gc_rule();
    request.add_initial_splits()->set_key("c1");  // several tablets
    request.add_initial_splits()->set_key("c2-w2");
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    btadmin::Table table;
    grpc::Status s = admin->CreateTable(&context, request, &table);
    ASSERT_TRUE(s.ok()) << "CreateTable: " << s.error_message();
  }

  // One MutateRow writer: new rows c<cycle>-w<thread>-<seq> until `stop`.
  void RowWriter(int cycle, int thread, const std::atomic<bool>* stop, WriterLog* log) {
    auto stub = btv2::Bigtable::NewStub(server_->NewChannel());
    for (int seq = 0; seq < 1'000'000 && !stop->load(); ++seq) {
      btv2::MutateRowRequest request;
      request.set_table_name(TableName(kTable));
      const std::string key = StrCat("c", cycle, "-w", thread, "-", seq);
      request.set_row_key(key);
      AddRowMutations(key, request.mutable_mutations());
      log->attempted.push_back(key);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      btv2::MutateRowResponse response;
      grpc::Status s = stub->MutateRow(&context, request, &response);
      if (s.ok()) {
        log->acknowledged.push_back(key);
      } else {
        // The server is gone (or going): nothing more is acknowledged from here on.
        ++log->errors;
        return;
      }
    }
  }

  // One MutateRows writer: batches of kBulkRows new rows; an entry is acknowledged when its
  // own status is OK.
  void BulkWriter(int cycle, int thread, const std::atomic<bool>* stop, WriterLog* log) {
    auto stub = btv2::Bigtable::NewStub(server_->NewChannel());
    for (int batch = 0; batch < 100'000 && !stop->load(); ++batch) {
      btv2::MutateRowsRequest request;
      request.set_table_name(TableName(kTable));
      std::vector<std::string> keys;
      for (int i = 0; i < kBulkRows; ++i) {
        keys.push_back(StrCat("c", cycle, "-b", thread, "-", batch, "-", i));
        auto* entry = request.add_entries();
        entry->set_row_key(keys.back());
        AddRowMutations(keys.back(), entry->mutable_mutations());
        log->attempted.push_back(keys.back());
      }
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      auto reader = stub->MutateRows(&context, request);
      btv2::MutateRowsResponse response;
      std::vector<bool> ok(kBulkRows, false);
      while (reader->Read(&response)) {
        for (const auto& e : response.entries()) {
          if (e.index() >= 0 && e.index() < kBulkRows && e.status().code() == 0) {
            ok[e.index()] = true;
          }
        }
      }
      grpc::Status s = reader->Finish();
      // Entries reported OK are acknowledged even if the stream broke afterwards.
      for (int i = 0; i < kBulkRows; ++i) {
        if (ok[i]) log->acknowledged.push_back(keys[i]);
      }
      if (!s.ok()) {
        ++log->errors;
        return;
      }
    }
  }

  // Reads the whole table; checks acknowledged rows are there and every row is whole and one
  // the test wrote.
  void Verify(const std::string& when) {
    auto stub = btv2::Bigtable::NewStub(server_->NewChannel());
    btv2::ReadRowsRequest request;
    request.set_table_name(TableName(kTable));
    std::vector<model::Row> rows;
    Status s = ReadAllRows(stub.get(), request, &rows, std::chrono::seconds(120));
    ASSERT_TRUE(s.ok()) << when << ": reading the table: " << s << "\n" << server_->LogTail();
    std::map<std::string, const model::Row*> by_key;
    for (const model::Row& r : rows) by_key[r.key] = &r;

    int missing = 0;
    std::string examples;
    for (const std::string& key : acknowledged_) {
      if (by_key.count(key) == 0) {
        if (++missing <= 5) examples += StrCat(" ", key);
      }
    }
    EXPECT_EQ(missing, 0) << when << ": " << missing << " of " << acknowledged_.size()
                          << " acknowledged rows are missing, e.g." << examples
                          << " (seed " << seed_ << ")";
    int bad = 0;
    for (const model::Row& r : rows) {
      bool whole = r.cells.size() == 2;
      if (whole) {
        const model::Cell* a = nullptr;
        const model::Cell* b = nullptr;
        for (const model::Cell& c : r.cells) {
          if (c.family == "f" && c.qualifier == "a") a = &c;
          if (c.family == "g" && c.qualifier == "b") b = &c;
        }
        whole = a != nullptr && b != nullptr && a->value == ValueA(r.key) &&
                b->value == ValueB(r.key) && a->timestamp_micros == 1000 &&
                b->timestamp_micros == 1000;
      }
      if (!whole || attempted_.count(r.key) == 0) {
        if (++bad <= 5) {
          ADD_FAILURE() << when << ": row " << r.key
                        << (attempted_.count(r.key) == 0 ? " was never written"
                                                         : " is not whole or has wrong values")
                        << " (" << r.cells.size() << " cells)";
        }
      }
    }
    EXPECT_EQ(bad, 0) << when << ": " << bad << " bad rows (seed " << seed_ << ")";
    std::printf("kill9_test: %s: %zu rows read, %zu acknowledged, all there: %s\n", when.c_str(),
                rows.size(), acknowledged_.size(), missing == 0 && bad == 0 ? "yes" : "NO");
    std::fflush(stdout);
  }

  uint64_t seed_ = 0;
  int cycles_ = 5;
  std::unique_ptr<TempDir> dir_;
  std::string data_dir_;
  std::unique_ptr<ServerProcess> server_;
  std::set<std::string> attempted_;
  std::vector<std::string> acknowledged_;
};

TEST_F(Kill9Test, AcknowledgedWritesSurviveKill9) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(CreateTable());
  std::mt19937_64 rng(seed_);
  for (int cycle = 0; cycle < cycles_; ++cycle) {
    std::atomic<bool> stop{false};
    std::vector<WriterLog> logs(kRowThreads + kBulkThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kRowThreads; ++t) {
      threads.emplace_back([&, t] { RowWriter(cycle, t, &stop, &logs[t]); });
    }
    for (int t = 0; t < kBulkThreads; ++t) {
      threads.emplace_back(
          [&, t] { BulkWriter(cycle, t, &stop, &logs[kRowThreads + t]); });
    }
    // Let the load run 300..1100 ms, then kill -9 while the writers are busy.
    const auto load_ms = std::chrono::milliseconds(300 + rng() % 800);
    std::this_thread::sleep_for(load_ms);
    server_->Kill();
    stop = true;
    for (std::thread& t : threads) t.join();

    size_t acked_now = 0, attempted_now = 0;
    int errors = 0;
    for (const WriterLog& log : logs) {
      attempted_.insert(log.attempted.begin(), log.attempted.end());
      acknowledged_.insert(acknowledged_.end(), log.acknowledged.begin(),
                           log.acknowledged.end());
      acked_now += log.acknowledged.size();
      attempted_now += log.attempted.size();
      errors += log.errors;
    }
    std::printf("kill9_test: cycle %d: killed after %lld ms; %zu writes acknowledged, %zu "
                "attempted, %d writers saw the kill\n",
                cycle, static_cast<long long>(load_ms.count()), acked_now, attempted_now,
                errors);
    std::fflush(stdout);
    ASSERT_GT(acked_now, 0u) << "no write was acknowledged in " << load_ms.count()
                             << " ms; the test proves nothing\n" << server_->LogTail();

    ASSERT_NO_FATAL_FAILURE(Start());
    ASSERT_NO_FATAL_FAILURE(Verify(StrCat("after kill -9 #", cycle + 1)));
  }

  // A clean stop keeps everything too.
  auto exit = server_->Stop();
  ASSERT_TRUE(exit.ok()) << exit.status() << "\n" << server_->LogTail();
  EXPECT_EQ(*exit, 0) << "tessera serve exit status on SIGTERM\n" << server_->LogTail();
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(Verify("after a clean restart"));
  auto last = server_->Stop();
  EXPECT_TRUE(last.ok() && *last == 0);
}

}  // namespace
}  // namespace tessera::integration

int main(int argc, char** argv) {
  return tessera::integration::RunTestsWithTesseraBinary(argc, argv,
                                                         &tessera::integration::g_tessera_binary);
}
