#include "tessera/server/data_service.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "google/bigtable/v2/feature_flags.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tessera/client/row_merger.h"
#include "tessera/replication/local_table_access.h"
#include "tessera/testing/rpc_server.h"
#include "tessera/server/grpc_executor.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/coding.h"
#include "tessera/util/executor.h"
#include "tessera/util/random.h"

namespace tessera::server {
namespace {

namespace v2 = ::google::bigtable::v2;
using std::string_literals::operator""s;
using ::testing::HasSubstr;

constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kTable[] = "projects/p/instances/i/tables/t";
constexpr int64_t kStartMicros = 1'700'000'000'000'000;

std::string BigEndian64(int64_t v) { return BigEndian64String(static_cast<uint64_t>(v)); }

v2::Mutation SetCell(const std::string& family, const std::string& qualifier, int64_t ts,
                     const std::string& value) {
  v2::Mutation m;
  v2::Mutation::SetCell* set = m.mutable_set_cell();
  set->set_family_name(family);
  set->set_column_qualifier(qualifier);
  set->set_timestamp_micros(ts);
  set->set_value(value);
  return m;
}

// A flattened cell, for comparisons.
struct Flat {
  std::string key, family, qualifier;
  int64_t ts = 0;
  std::string value;
  bool operator==(const Flat&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Flat& f) {
  return os << "{" << f.key << " " << f.family << ":" << model::DisplayBytes(f.qualifier) << "@"
            << f.ts << "=" << model::DisplayBytes(f.value.substr(0, 20)) << "}";
}

struct ReadResult {
  grpc::Status status;
  std::vector<model::Row> rows;
  std::vector<v2::ReadRowsResponse> responses;

  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const auto& r : rows) keys.push_back(r.key);
    return keys;
  }
  std::vector<Flat> Cells() const {
    std::vector<Flat> out;
    for (const auto& r : rows) {
      for (const auto& c : r.cells)
        out.push_back({r.key, c.family, c.qualifier, c.timestamp_micros, c.value});
    }
    return out;
  }
};

// Parameter: whether the service runs its work on an executor (true) or inline (false).
class DataServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  // As `tessera serve` runs gRPC: its deferred callbacks (OnDone) on the thread at hand.
  static void SetUpTestSuite() { SetGrpcExecutorThreads(false); }

  void SetUp() override {
    char tmpl[] = "/tmp/tessera_data_service_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    tablet::EngineOptions options;
    options.dir = dir_;
    options.sync_mode = tablet::SyncMode::kPeriodic;
    options.background_threads = 1;
    options.memtable_bytes = 4 << 20;
    auto engine = tablet::Engine::Open(options, Env{PosixFileSystem(), &clock_});
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    auto catalog = catalog::TableCatalog::Open(engine_.get());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
    access_ = std::make_unique<replication::LocalTableAccess>(engine_.get());
    StartServer(DataServiceOptions());
  }

  // Serves through `access` when given, else through access_.
  void StartServer(DataServiceOptions options, replication::TableAccess* access = nullptr) {
    StopServer();
    if (GetParam()) executor_ = NewThreadPoolExecutor(4);
    service_ = std::make_unique<DataService>(
        catalog_.get(), access != nullptr ? access : access_.get(), &clock_, executor_.get(),
        options);
    server_ = std::make_unique<testing::RpcServer>();
    server_->builder()->SetMaxReceiveMessageSize(256 << 20);
    service_->Register(server_->services());
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
    const int port = server_->port();
    grpc::ChannelArguments args;
    // As the official clients set it: Go and Java 256 MiB, Node and Python unlimited.
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = v2::Bigtable::NewStub(channel_);
  }

  void StopServer() {
    stub_.reset();
    channel_.reset();
    if (server_ != nullptr) {
      server_->Shutdown(5000);
      server_.reset();
    }
    executor_.reset();
    service_.reset();
  }

  void TearDown() override {
    StopServer();
    catalog_.reset();
    if (engine_ != nullptr) {
      EXPECT_TRUE(engine_->Close().ok());
    }
    engine_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Table `id` with families cf1, cf2 (plain), events (time-sorted), inbox (super columns).
  void CreateTable(const std::string& id, std::vector<std::string> splits = {},
                   model::TimestampGranularity g = model::TimestampGranularity::kMillis) {
    model::TableSchema schema;
    schema.name = id;
    schema.granularity = g;
    schema.families["cf1"] = {};
    schema.families["cf2"] = {};
    model::FamilySchema events;
    events.time_sorted = true;
    schema.families["events"] = events;
    model::FamilySchema inbox;
    inbox.super_columns = true;
    schema.families["inbox"] = inbox;
    auto t = catalog_->CreateTable(kInstance, std::move(schema), std::move(splits));
    ASSERT_TRUE(t.ok()) << t.status();
  }

  grpc::Status MutateRow(const std::string& row, std::vector<v2::Mutation> mutations,
                         const std::string& table = kTable) {
    v2::MutateRowRequest req;
    req.set_table_name(table);
    req.set_row_key(row);
    for (auto& m : mutations) *req.add_mutations() = std::move(m);
    v2::MutateRowResponse resp;
    grpc::ClientContext ctx;
    return stub_->MutateRow(&ctx, req, &resp);
  }

  void Put(const std::string& row, const std::string& family, const std::string& qualifier,
           int64_t ts, const std::string& value) {
    grpc::Status s = MutateRow(row, {SetCell(family, qualifier, ts, value)});
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  ReadResult Read(v2::ReadRowsRequest req,
                  const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
    if (req.table_name().empty()) req.set_table_name(kTable);
    ReadResult result;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    for (const auto& [k, v] : metadata) ctx.AddMetadata(k, v);
    auto reader = stub_->ReadRows(&ctx, req);
    client::RowMerger merger(req.reversed());
    v2::ReadRowsResponse resp;
    Status merge_status;
    for (int i = 0; i < 100000 && reader->Read(&resp); ++i) {
      if (merge_status.ok()) merge_status = merger.Add(resp);
      // cbt fails on a response that ends inside a row (read_rows_chunker.h).
      if (resp.chunks_size() > 0) {
        EXPECT_TRUE(resp.chunks(resp.chunks_size() - 1).commit_row())
            << "response " << i << " ends inside a row";
      }
      result.responses.push_back(resp);
    }
    result.status = reader->Finish();
    if (result.status.ok() && merge_status.ok()) merge_status = merger.Finish();
    EXPECT_TRUE(merge_status.ok()) << merge_status;
    while (merger.HasRow()) result.rows.push_back(merger.TakeRow());
    return result;
  }

  ReadResult ReadAll() { return Read(v2::ReadRowsRequest()); }

  static std::vector<std::string> Strings(std::initializer_list<const char*> list) {
    return std::vector<std::string>(list.begin(), list.end());
  }

  std::string dir_;
  ManualClock clock_{kStartMicros + 123};
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<catalog::TableCatalog> catalog_;
  std::unique_ptr<replication::LocalTableAccess> access_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<DataService> service_;
  std::unique_ptr<testing::RpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v2::Bigtable::Stub> stub_;
};

INSTANTIATE_TEST_SUITE_P(Executor, DataServiceTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Pool" : "Inline"; });

// ---------------------------------------------------------------------------------------------
// Request options: app profiles and deadlines

// The access the service calls, recording the options of each call.
class RecordingAccess final : public replication::TableAccess {
 public:
  explicit RecordingAccess(replication::TableAccess* inner) : inner_(inner) {}
  using Options = replication::AccessOptions;

  Status Mutate(const catalog::TableInfo& t, const model::RowMutation& m,
                const Options& o) override {
    Record(o);
    return inner_->Mutate(t, m, o);
  }
  std::vector<Status> MutateRows(const catalog::TableInfo& t,
                                 std::span<const model::RowMutation> m,
                                 const Options& o) override {
    Record(o);
    return inner_->MutateRows(t, m, o);
  }
  StatusOr<bool> CheckAndMutate(const catalog::TableInfo& t, std::string_view row,
                                model::RowFilter* p, const model::RowMutation& on_true,
                                const model::RowMutation& on_false, const Options& o) override {
    Record(o);
    return inner_->CheckAndMutate(t, row, p, on_true, on_false, o);
  }
  StatusOr<model::Row> ReadModifyWrite(const catalog::TableInfo& t, std::string_view row,
                                       const std::vector<replication::ReadModifyWriteRule>& r,
                                       int64_t now, size_t max, const Options& o) override {
    Record(o);
    return inner_->ReadModifyWrite(t, row, r, now, max, o);
  }
  StatusOr<std::unique_ptr<replication::RowStream>> Read(replication::TableSnapshot t,
                                                         replication::ReadRequest r,
                                                         const Options& o) override {
    Record(o);
    return inner_->Read(std::move(t), std::move(r), o);
  }
  StatusOr<std::vector<replication::RowKeySample>> SampleRowKeys(const catalog::TableInfo& t,
                                                                 uint64_t every) override {
    return inner_->SampleRowKeys(t, every);
  }
  StatusOr<uint64_t> DropRowRange(const catalog::TableInfo& t, std::string_view prefix,
                                  const Options& o) override {
    Record(o);
    return inner_->DropRowRange(t, prefix, o);
  }

  std::optional<Options> last() {
    absl::MutexLock l(&mu_);
    return last_;
  }

 private:
  void Record(const Options& o) {
    absl::MutexLock l(&mu_);
    last_ = o;
  }
  replication::TableAccess* const inner_;
  absl::Mutex mu_;
  std::optional<Options> last_;
};

TEST_P(DataServiceTest, AppProfilesSetTheLevelsAndAnUnknownOneIsNotFound) {
  CreateTable("t");
  RecordingAccess recording(access_.get());
  DataServiceOptions options;
  options.profile_levels = [](std::string_view instance,
                              std::string_view id) -> StatusOr<ProfileLevels> {
    if (std::optional<ProfileLevels> built_in = BuiltInProfileLevels(id)) return *built_in;
    if (instance == kInstance && id == "reports") {
      return ProfileLevels{replication::ReadLevel::kOne, std::nullopt};
    }
    return absl::NotFoundError(StrCat("app profile \"", instance, "/appProfiles/", id,
                                      "\" not found"));
  };
  StartServer(options, &recording);

  auto mutate = [&](const std::string& profile, const std::string& header) {
    v2::MutateRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key("r");
    req.set_app_profile_id(profile);
    *req.add_mutations() = SetCell("cf1", "q", 1000, "v");
    v2::MutateRowResponse resp;
    grpc::ClientContext ctx;
    if (!header.empty()) ctx.AddMetadata("x-goog-request-params", header);
    return stub_->MutateRow(&ctx, req, &resp);
  };
  ASSERT_TRUE(mutate("one", "").ok());
  EXPECT_EQ(recording.last()->write_level, replication::WriteLevel::kOne);
  EXPECT_EQ(recording.last()->read_level, replication::ReadLevel::kOne);
  EXPECT_EQ(recording.last()->timeout_us, 0);  // no deadline given
  ASSERT_TRUE(mutate("", "").ok());
  EXPECT_FALSE(recording.last()->write_level.has_value());
  // The header's id, percent-encoded as the clients send it, when the field is empty.
  ASSERT_TRUE(mutate("", StrCat("table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&"
                                "app_profile_id=local%5Fquorum"))
                  .ok());
  EXPECT_EQ(recording.last()->write_level, replication::WriteLevel::kLocalQuorum);

  grpc::Status unknown = mutate("nosuch", "");
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(unknown.error_message(), HasSubstr("appProfiles/nosuch"));
  EXPECT_EQ(mutate("", "app_profile_id=nosuch").error_code(), grpc::StatusCode::NOT_FOUND);

  // Reads take the profile and the client's deadline.
  v2::ReadRowsRequest read;
  read.set_app_profile_id("reports");
  ReadResult r = Read(read);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(recording.last()->read_level, replication::ReadLevel::kOne);
  EXPECT_GT(recording.last()->timeout_us, 20'000'000);  // Read() gives 30 s
  EXPECT_LE(recording.last()->timeout_us, 31'000'000);  // the wire rounds the timeout up
  read.set_app_profile_id("nosuch");
  EXPECT_EQ(Read(read).status.error_code(), grpc::StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------------------------
// Writes

TEST_P(DataServiceTest, MutateRowEveryKindInOrder) {
  CreateTable("t");
  Put("r1", "cf1", "a", 1000, "a1");
  Put("r1", "cf1", "a", 2000, "a2");
  Put("r1", "cf1", "a", 3000, "a3");
  Put("r1", "cf1", "b", 1000, "b1");
  Put("r1", "cf2", "c", 1000, "c1");
  // Delete versions [2000, 3000) of cf1:a, then family cf2.
  v2::Mutation del_col;
  del_col.mutable_delete_from_column()->set_family_name("cf1");
  del_col.mutable_delete_from_column()->set_column_qualifier("a");
  del_col.mutable_delete_from_column()->mutable_time_range()->set_start_timestamp_micros(2000);
  del_col.mutable_delete_from_column()->mutable_time_range()->set_end_timestamp_micros(3000);
  v2::Mutation del_fam;
  del_fam.mutable_delete_from_family()->set_family_name("cf2");
  ASSERT_TRUE(MutateRow("r1", {del_col, del_fam}).ok());
  EXPECT_EQ(ReadAll().Cells(), (std::vector<Flat>{{"r1", "cf1", "a", 3000, "a3"},
                                                  {"r1", "cf1", "a", 1000, "a1"},
                                                  {"r1", "cf1", "b", 1000, "b1"}}));
  // Later mutations of one call mask earlier ones: set, delete row, set.
  v2::Mutation del_row;
  del_row.mutable_delete_from_row();
  ASSERT_TRUE(
      MutateRow("r1", {SetCell("cf1", "x", 0, "x"), del_row, SetCell("cf2", "y", 5000, "y")}).ok());
  EXPECT_EQ(ReadAll().Cells(), (std::vector<Flat>{{"r1", "cf2", "y", 5000, "y"}}));
}

TEST_P(DataServiceTest, ANodeThatIsNotServingAnswersUnavailable) {
  std::atomic<bool> serving{true};
  DataServiceOptions options;
  options.serving_check = [&serving]() -> Status {
    if (serving) return Status();
    return absl::UnavailableError("node n1 is not serving: it has no lock-service session");
  };
  StartServer(options);
  CreateTable("t");
  ASSERT_TRUE(MutateRow("r1", {SetCell("cf1", "c", 1000, "v")}).ok());
  serving = false;
  grpc::Status s = MutateRow("r2", {SetCell("cf1", "c", 1000, "v")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("not serving"), std::string::npos) << s.error_message();
  grpc::ClientContext ctx;
  v2::ReadRowsRequest req;
  req.set_table_name(kTable);
  auto reader = stub_->ReadRows(&ctx, req);
  v2::ReadRowsResponse resp;
  while (reader->Read(&resp)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  serving = true;
  EXPECT_TRUE(MutateRow("r2", {SetCell("cf1", "c", 1000, "v")}).ok());
}

// A cluster node whose schema mirror lags: the table it does not have is looked up again after
// refresh_schema, which here is what brings it; a table that does not exist stays NotFound,
// after one refresh per request.
TEST_P(DataServiceTest, AnUnknownTableIsLookedUpAgainAfterRefreshingTheSchema) {
  int refreshes = 0;
  DataServiceOptions options;
  options.refresh_schema = [&]() -> Status {
    if (++refreshes == 1) CreateTable("t");
    return Status();
  };
  StartServer(options);
  EXPECT_TRUE(MutateRow("r1", {SetCell("cf1", "c", 1000, "v")}).ok());
  EXPECT_EQ(refreshes, 1);
  EXPECT_TRUE(MutateRow("r2", {SetCell("cf1", "c", 1000, "v")}).ok());
  EXPECT_EQ(refreshes, 1);  // known now: no refresh
  EXPECT_EQ(MutateRow("r", {SetCell("cf1", "c", 1000, "v")}, "projects/p/instances/i/tables/no")
                .error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(refreshes, 2);
}

TEST_P(DataServiceTest, ServerTimestampForMinusOne) {
  CreateTable("t");
  Put("r", "cf1", "q", -1, "v");
  auto cells = ReadAll().Cells();
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].ts, kStartMicros);  // truncated to milliseconds
}

TEST_P(DataServiceTest, MutateRowErrors) {
  CreateTable("t");
  grpc::Status s = MutateRow("r", {SetCell("nope", "q", 0, "v")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("Requested column family not found: nope"));
  s = MutateRow("r", {SetCell("cf1", "q", 0, "v"), SetCell("cf1", "q", 1234, "v")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("Error in element #1 : Timestamp granularity mismatch"));
  EXPECT_EQ(MutateRow("", {SetCell("cf1", "q", 0, "v")}).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(MutateRow(std::string(4097, 'k'), {SetCell("cf1", "q", 0, "v")}).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(MutateRow("r", {}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(MutateRow("r", {v2::Mutation()}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v2::Mutation add;
  add.mutable_add_to_cell()->set_family_name("cf1");
  EXPECT_EQ(MutateRow("r", {add}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Tables.
  s = MutateRow("r", {SetCell("cf1", "q", 0, "v")}, "projects/p/instances/i/tables/missing");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("table \"projects/p/instances/i/tables/missing\""));
  EXPECT_EQ(MutateRow("r", {SetCell("cf1", "q", 0, "v")}, "tables/t").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(MutateRow("r", {SetCell("cf1", "q", 0, "v")}, "").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v2::MutateRowRequest view;
  view.set_authorized_view_name(std::string(kTable) + "/authorizedViews/v");
  view.set_row_key("r");
  *view.add_mutations() = SetCell("cf1", "q", 0, "v");
  v2::MutateRowResponse resp;
  grpc::ClientContext ctx;
  s = stub_->MutateRow(&ctx, view, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("authorized views"));
  EXPECT_TRUE(ReadAll().rows.empty());  // nothing above was applied
}

TEST_P(DataServiceTest, LargeMutateRowIsAccepted) {
  CreateTable("t");
  const std::string big(5 << 20, 'x');
  Put("r", "cf1", "q", 0, big);
  auto cells = ReadAll().Cells();  // one 5 MiB response, the value in 1 MiB chunks
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, big);
}

TEST_P(DataServiceTest, MutateRowsStatusPerEntry) {
  CreateTable("t", {"m"});
  v2::MutateRowsRequest req;
  req.set_table_name(kTable);
  for (int i = 0; i < 40; ++i) {
    auto* e = req.add_entries();
    e->set_row_key("row" + std::to_string(100 + i));
    *e->add_mutations() = SetCell(i == 7 ? "nofam" : "cf1", "q", 1000, std::to_string(i));
  }
  req.mutable_entries(11)->clear_mutations();
  req.mutable_entries(12)->set_row_key("");
  grpc::ClientContext ctx;
  auto reader = stub_->MutateRows(&ctx, req);
  v2::MutateRowsResponse resp;
  std::vector<v2::MutateRowsResponse::Entry> entries;
  for (int i = 0; i < 100 && reader->Read(&resp); ++i) {
    for (const auto& e : resp.entries()) entries.push_back(e);
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(entries.size(), 40u);
  std::vector<bool> seen(40);
  for (const auto& e : entries) {
    ASSERT_GE(e.index(), 0);
    ASSERT_LT(e.index(), 40);
    seen[e.index()] = true;
    if (e.index() == 7) {
      EXPECT_EQ(e.status().code(), grpc::StatusCode::NOT_FOUND);
      EXPECT_THAT(e.status().message(), HasSubstr("nofam"));
    } else if (e.index() == 11 || e.index() == 12) {
      EXPECT_EQ(e.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
    } else {
      EXPECT_TRUE(e.has_status());
      EXPECT_EQ(e.status().code(), 0) << e.status().message();
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 40);
  EXPECT_EQ(ReadAll().rows.size(), 37u);

  // Whole-request errors.
  v2::MutateRowsRequest empty;
  empty.set_table_name(kTable);
  grpc::ClientContext ctx2;
  auto r2 = stub_->MutateRows(&ctx2, empty);
  while (r2->Read(&resp)) {
  }
  EXPECT_EQ(r2->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v2::MutateRowsRequest too_many;
  too_many.set_table_name(kTable);
  v2::Mutation del_row;
  del_row.mutable_delete_from_row();
  for (int i = 0; i < 2; ++i) {
    auto* e = too_many.add_entries();
    e->set_row_key("r");
    for (int j = 0; j < 50001; ++j) *e->add_mutations() = del_row;
  }
  grpc::ClientContext ctx3;
  auto r3 = stub_->MutateRows(&ctx3, too_many);
  while (r3->Read(&resp)) {
  }
  grpc::Status s3 = r3->Finish();
  EXPECT_EQ(s3.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s3.error_message(), HasSubstr("100002"));
  v2::MutateRowsRequest missing = req;
  missing.set_table_name("projects/p/instances/i/tables/zz");
  grpc::ClientContext ctx4;
  auto r4 = stub_->MutateRows(&ctx4, missing);
  while (r4->Read(&resp)) {
  }
  EXPECT_EQ(r4->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------------------------
// ReadRows

class ReadRowsTest : public DataServiceTest {
 protected:
  // Rows a, b, ..., j over three tablets ([, c) [c, g) [g, )), one cell each.
  void Fill() {
    CreateTable("t", {"c", "g"});
    for (char c = 'a'; c <= 'j'; ++c) Put(std::string(1, c), "cf1", "q", 1000, std::string(1, c));
  }
};
INSTANTIATE_TEST_SUITE_P(Executor, ReadRowsTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Pool" : "Inline"; });

v2::RowRange Range(const char* start, bool start_closed, const char* end, bool end_closed) {
  v2::RowRange r;
  if (start != nullptr) start_closed ? r.set_start_key_closed(start) : r.set_start_key_open(start);
  if (end != nullptr) end_closed ? r.set_end_key_closed(end) : r.set_end_key_open(end);
  return r;
}

TEST_P(ReadRowsTest, WholeTableAcrossTablets) {
  Fill();
  EXPECT_EQ(ReadAll().Keys(), Strings({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}));
  v2::ReadRowsRequest req;
  *req.mutable_rows()->add_row_ranges() = v2::RowRange();  // empty range = whole table
  EXPECT_EQ(Read(req).Keys().size(), 10u);
}

TEST_P(ReadRowsTest, KeysAndRangesDedupedAndOrdered) {
  Fill();
  v2::ReadRowsRequest req;
  for (const char* k : {"h", "a", "h", "zz", "d"}) req.mutable_rows()->add_row_keys(k);
  *req.mutable_rows()->add_row_ranges() = Range("b", true, "d", true);        // b c d
  *req.mutable_rows()->add_row_ranges() = Range("c", false, "f", false);      // d e
  *req.mutable_rows()->add_row_ranges() = Range("i", false, nullptr, false);  // j
  ReadResult r = Read(req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.Keys(), Strings({"a", "b", "c", "d", "e", "h", "j"}));

  req.set_reversed(true);
  r = Read(req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.Keys(), Strings({"j", "h", "e", "d", "c", "b", "a"}));
}

// Many absent keys: each is a point read; steps stay bounded and yield in between.
TEST_P(ReadRowsTest, ManyKeysMostlyAbsent) {
  DataServiceOptions options;
  options.read_rows_per_step = 16;
  StartServer(options);
  Fill();
  v2::ReadRowsRequest req;
  for (int i = 0; i < 3000; ++i) req.mutable_rows()->add_row_keys("b" + std::to_string(i));
  req.mutable_rows()->add_row_keys("j");
  req.mutable_rows()->add_row_keys("a");
  ReadResult r = Read(req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.Keys(), Strings({"a", "j"}));
  req.set_reversed(true);
  EXPECT_EQ(Read(req).Keys(), Strings({"j", "a"}));
}

TEST_P(ReadRowsTest, RangeBounds) {
  Fill();
  auto keys = [&](v2::RowRange range) {
    v2::ReadRowsRequest req;
    *req.mutable_rows()->add_row_ranges() = range;
    return Read(req).Keys();
  };
  EXPECT_EQ(keys(Range("b", true, "d", false)), Strings({"b", "c"}));
  EXPECT_EQ(keys(Range("b", false, "d", true)), Strings({"c", "d"}));
  EXPECT_EQ(keys(Range(nullptr, false, "b", true)), Strings({"a", "b"}));
  EXPECT_EQ(keys(Range("i", true, nullptr, false)), Strings({"i", "j"}));
  EXPECT_EQ(keys(Range("c", true, "c", false)), Strings({}));  // empty, not an error
  EXPECT_EQ(keys(Range("c", true, "c", true)), Strings({"c"}));

  v2::ReadRowsRequest bad;
  *bad.mutable_rows()->add_row_ranges() = Range("a", true, "b", false);
  *bad.mutable_rows()->add_row_ranges() = Range("e", true, "d", false);
  ReadResult r = Read(bad);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("Error in element #1"));
}

TEST_P(ReadRowsTest, RowsLimitAndReversed) {
  Fill();
  v2::ReadRowsRequest req;
  req.set_rows_limit(4);
  EXPECT_EQ(Read(req).Keys(), Strings({"a", "b", "c", "d"}));
  req.set_reversed(true);
  EXPECT_EQ(Read(req).Keys(), Strings({"j", "i", "h", "g"}));
  req.set_rows_limit(0);
  EXPECT_EQ(Read(req).Keys(), Strings({"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"}));
  // The limit counts rows returned, after the filter.
  req.set_reversed(false);
  req.set_rows_limit(2);
  req.mutable_filter()->set_row_key_regex_filter("[b-z]");
  EXPECT_EQ(Read(req).Keys(), Strings({"b", "c"}));
  req.set_rows_limit(-1);
  ReadResult r = Read(req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("rows_limit"));
}

TEST_P(ReadRowsTest, Filters) {
  CreateTable("t", {"m"});
  for (int ts = 1; ts <= 3; ++ts) {
    Put("r1", "cf1", "a", ts * 1000, "a" + std::to_string(ts));
    Put("r1", "cf2", "b", ts * 1000, "b" + std::to_string(ts));
    Put("x2", "cf1", "a", ts * 1000, "x" + std::to_string(ts));
  }
  // Latest version of family cf1.
  v2::ReadRowsRequest req;
  auto* chain = req.mutable_filter()->mutable_chain();
  chain->add_filters()->set_family_name_regex_filter("cf1");
  chain->add_filters()->set_cells_per_column_limit_filter(1);
  EXPECT_EQ(Read(req).Cells(),
            (std::vector<Flat>{{"r1", "cf1", "a", 3000, "a3"}, {"x2", "cf1", "a", 3000, "x3"}}));
  // Value regex + strip value; rows without cells are not sent.
  v2::ReadRowsRequest req2;
  auto* chain2 = req2.mutable_filter()->mutable_chain();
  chain2->add_filters()->set_value_regex_filter("b.");
  chain2->add_filters()->set_strip_value_transformer(true);
  EXPECT_EQ(Read(req2).Cells(), (std::vector<Flat>{{"r1", "cf2", "b", 3000, ""},
                                                   {"r1", "cf2", "b", 2000, ""},
                                                   {"r1", "cf2", "b", 1000, ""}}));
  // Timestamp range (pushed down) and block all.
  v2::ReadRowsRequest req3;
  req3.mutable_filter()->mutable_timestamp_range_filter()->set_start_timestamp_micros(2000);
  req3.mutable_filter()->mutable_timestamp_range_filter()->set_end_timestamp_micros(3000);
  EXPECT_EQ(Read(req3).Cells().size(), 3u);
  v2::ReadRowsRequest req4;
  req4.mutable_filter()->set_block_all_filter(true);
  ReadResult r4 = Read(req4);
  EXPECT_TRUE(r4.status.ok());
  EXPECT_TRUE(r4.rows.empty());
  // A bad filter is INVALID_ARGUMENT naming the field.
  v2::ReadRowsRequest bad;
  bad.mutable_filter()->set_column_qualifier_regex_filter("(");
  ReadResult r = Read(bad);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("column_qualifier_regex_filter"));
  v2::ReadRowsRequest off_granularity;
  off_granularity.mutable_filter()->mutable_timestamp_range_filter()->set_start_timestamp_micros(5);
  EXPECT_EQ(Read(off_granularity).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_P(ReadRowsTest, LargeValuesAreChunked) {
  DataServiceOptions options;
  options.read_chunk_bytes = 1 << 20;
  options.read_response_bytes = 1 << 20;
  StartServer(options);
  CreateTable("t");
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  Put("big", "cf1", "q", 1000, big);
  Put("big", "cf1", "r", 1000, "small");
  Put("small", "cf1", "q", 1000, "s");
  ReadResult r = ReadAll();
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.rows.size(), 2u);
  ASSERT_EQ(r.rows[0].cells.size(), 2u);
  EXPECT_EQ(r.rows[0].cells[0].value, big);
  EXPECT_EQ(r.rows[0].cells[1].value, "small");
  // A response holds whole rows: the 3 MiB row alone, then the small one.
  ASSERT_EQ(r.responses.size(), 2u);
  EXPECT_GT(r.responses[0].ByteSizeLong(), 3u << 20);
  int split_chunks = 0;
  for (const auto& resp : r.responses) {
    for (const auto& c : resp.chunks()) {
      EXPECT_LE(c.value().size(), 1u << 20);
      split_chunks += c.value_size() > 0;
    }
  }
  EXPECT_EQ(split_chunks, 2);  // 3 pieces: two with value_size, the last without
}

TEST_P(ReadRowsTest, RequestStats) {
  Fill();
  v2::ReadRowsRequest req;
  req.set_request_stats_view(v2::ReadRowsRequest::REQUEST_STATS_FULL);
  req.mutable_filter()->set_row_key_regex_filter("[a-c]");
  ReadResult r = Read(req);
  ASSERT_TRUE(r.status.ok());
  ASSERT_FALSE(r.responses.empty());
  const v2::ReadRowsResponse& last = r.responses.back();
  ASSERT_TRUE(last.has_request_stats());
  const auto& it = last.request_stats().full_read_stats_view().read_iteration_stats();
  EXPECT_EQ(it.rows_seen_count(), 10);
  EXPECT_EQ(it.rows_returned_count(), 3);
  EXPECT_EQ(it.cells_seen_count(), 10);
  EXPECT_EQ(it.cells_returned_count(), 3);
  EXPECT_TRUE(last.request_stats()
                  .full_read_stats_view()
                  .request_latency_stats()
                  .has_frontend_server_latency());
  for (size_t i = 0; i + 1 < r.responses.size(); ++i) {
    EXPECT_FALSE(r.responses[i].has_request_stats());
  }
  // Without the view, no stats.
  req.clear_request_stats_view();
  for (const auto& resp : Read(req).responses) EXPECT_FALSE(resp.has_request_stats());
}

TEST_P(ReadRowsTest, ManySmallResponsesWithFlowControl) {
  DataServiceOptions options;
  options.read_response_rows = 7;
  options.read_rows_per_step = 5;
  StartServer(options);
  CreateTable("t", {"k050", "k100"});
  v2::MutateRowsRequest req;
  req.set_table_name(kTable);
  for (int i = 0; i < 150; ++i) {
    auto* e = req.add_entries();
    char key[8];
    snprintf(key, sizeof(key), "k%03d", i);
    e->set_row_key(key);
    *e->add_mutations() = SetCell("cf1", "q", 1000, key);
  }
  grpc::ClientContext ctx;
  auto w = stub_->MutateRows(&ctx, req);
  v2::MutateRowsResponse resp;
  while (w->Read(&resp)) {
  }
  ASSERT_TRUE(w->Finish().ok());
  ReadResult r = ReadAll();
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.rows.size(), 150u);
  EXPECT_GE(r.responses.size(), 150u / 7);
  v2::ReadRowsRequest rev;
  rev.set_reversed(true);
  r = Read(rev);
  ASSERT_EQ(r.rows.size(), 150u);
  EXPECT_EQ(r.rows.front().key, "k149");
  EXPECT_EQ(r.rows.back().key, "k000");
}

TEST_P(ReadRowsTest, LastScannedRowKeyWhenTheClientAsksForIt) {
  DataServiceOptions options;
  options.read_rows_per_step = 3;
  StartServer(options);
  Fill();
  v2::ReadRowsRequest req;
  req.mutable_filter()->set_row_key_regex_filter("j");
  v2::FeatureFlags flags;
  flags.set_last_scanned_row_responses(true);
  std::string header;
  absl::WebSafeBase64Escape(flags.SerializeAsString(), &header);
  ReadResult r = Read(req, {{"bigtable-features", header}});
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.Keys(), Strings({"j"}));
  int scanned_only = 0;
  for (const auto& resp : r.responses) scanned_only += !resp.last_scanned_row_key().empty();
  EXPECT_GE(scanned_only, 2);
  // Without the flag: no such responses.
  r = Read(req);
  for (const auto& resp : r.responses) EXPECT_TRUE(resp.last_scanned_row_key().empty());
  EXPECT_EQ(r.Keys(), Strings({"j"}));
}

TEST_P(ReadRowsTest, CancelMidStream) {
  DataServiceOptions options;
  options.read_response_rows = 1;
  StartServer(options);
  Fill();
  for (int round = 0; round < 5; ++round) {
    grpc::ClientContext ctx;
    v2::ReadRowsRequest req;
    req.set_table_name(kTable);
    auto reader = stub_->ReadRows(&ctx, req);
    v2::ReadRowsResponse resp;
    ASSERT_TRUE(reader->Read(&resp));
    ctx.TryCancel();
    for (int i = 0; i < 20 && reader->Read(&resp); ++i) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_EQ(ReadAll().rows.size(), 10u);  // the server is fine
}

TEST_P(ReadRowsTest, ReadErrors) {
  Fill();
  v2::ReadRowsRequest req;
  req.set_table_name("projects/p/instances/i/tables/missing");
  ReadResult r = Read(req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(r.status.error_message(), HasSubstr("not found"));
  req.set_table_name("projects/p/instances/i/tables/bad name");
  EXPECT_EQ(Read(req).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v2::ReadRowsRequest view;
  view.set_table_name(kTable);
  view.set_materialized_view_name("projects/p/instances/i/materializedViews/v");
  EXPECT_EQ(Read(view).status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// ---------------------------------------------------------------------------------------------
// Family kinds through the API

TEST_P(DataServiceTest, TimeSortedAndSuperColumnFamilies) {
  CreateTable("t");
  const std::string t1 = BigEndian64(1000), t2 = BigEndian64(2000), t3 = BigEndian64(3000);
  Put("u", "events", t2, 1000, "e2");
  Put("u", "events", t1, 1000, "e1");
  Put("u", "events", t3, 1000, "e3");
  Put("u", "inbox", "term-b:m1", 1000, "b1");
  Put("u", "inbox", "term-a:m2", 1000, "a2");
  Put("u", "inbox", "term-a:m1", 1000, "a1");
  Put("u", "inbox", "term-a-x:m9", 1000, "ax");
  ReadResult all = ReadAll();
  ASSERT_TRUE(all.status.ok());
  // Newest first in the time-sorted family; super columns by name, then columns.
  EXPECT_EQ(all.Cells(), (std::vector<Flat>{{"u", "events", t3, 1000, "e3"},
                                            {"u", "events", t2, 1000, "e2"},
                                            {"u", "events", t1, 1000, "e1"},
                                            {"u", "inbox", "term-a:m1", 1000, "a1"},
                                            {"u", "inbox", "term-a:m2", 1000, "a2"},
                                            {"u", "inbox", "term-a-x:m9", 1000, "ax"},
                                            {"u", "inbox", "term-b:m1", 1000, "b1"}}));
  // One whole super column, by a qualifier regex on the presented form.
  v2::ReadRowsRequest req;
  auto* chain = req.mutable_filter()->mutable_chain();
  chain->add_filters()->set_family_name_regex_filter("inbox");
  chain->add_filters()->set_column_qualifier_regex_filter("term-a:.*");
  EXPECT_EQ(Read(req).Cells(), (std::vector<Flat>{{"u", "inbox", "term-a:m1", 1000, "a1"},
                                                  {"u", "inbox", "term-a:m2", 1000, "a2"}}));
  // The latest two events: cells_per_row_limit walks the presented (newest first) order.
  v2::ReadRowsRequest latest;
  auto* chain2 = latest.mutable_filter()->mutable_chain();
  chain2->add_filters()->set_family_name_regex_filter("events");
  chain2->add_filters()->set_cells_per_row_limit_filter(2);
  EXPECT_EQ(Read(latest).Cells(),
            (std::vector<Flat>{{"u", "events", t3, 1000, "e3"}, {"u", "events", t2, 1000, "e2"}}));
  // An interleave keeps the returned order.
  v2::ReadRowsRequest inter;
  auto* il = inter.mutable_filter()->mutable_interleave();
  il->add_filters()->set_family_name_regex_filter("events");
  il->add_filters()->set_column_qualifier_regex_filter("term-b:.*");
  EXPECT_EQ(Read(inter).Cells(), (std::vector<Flat>{{"u", "events", t3, 1000, "e3"},
                                                    {"u", "events", t2, 1000, "e2"},
                                                    {"u", "events", t1, 1000, "e1"},
                                                    {"u", "inbox", "term-b:m1", 1000, "b1"}}));
  // Bad qualifiers for the kinds.
  EXPECT_EQ(MutateRow("u", {SetCell("events", "short", 0, "v")}).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(MutateRow("u", {SetCell("inbox", "nosuper", 0, "v")}).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Deleting one column by its presented qualifier.
  v2::Mutation del;
  del.mutable_delete_from_column()->set_family_name("events");
  del.mutable_delete_from_column()->set_column_qualifier(t2);
  ASSERT_TRUE(MutateRow("u", {del}).ok());
  v2::ReadRowsRequest ev;
  ev.mutable_filter()->set_family_name_regex_filter("events");
  EXPECT_EQ(Read(ev).Cells().size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// CheckAndMutateRow, ReadModifyWriteRow

TEST_P(DataServiceTest, CheckAndMutateRowBothBranches) {
  CreateTable("t");
  Put("r", "cf1", "state", 1000, "open");
  auto cam = [&](const v2::RowFilter* predicate, const std::string& row, bool* matched) {
    v2::CheckAndMutateRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key(row);
    if (predicate != nullptr) *req.mutable_predicate_filter() = *predicate;
    *req.add_true_mutations() = SetCell("cf1", "result", 1000, "true");
    *req.add_false_mutations() = SetCell("cf1", "result", 1000, "false");
    v2::CheckAndMutateRowResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->CheckAndMutateRow(&ctx, req, &resp);
    *matched = resp.predicate_matched();
    return s;
  };
  auto result = [&](const std::string& row) {
    v2::ReadRowsRequest req;
    req.mutable_rows()->add_row_keys(row);
    req.mutable_filter()->set_column_qualifier_regex_filter("result");
    auto cells = Read(req).Cells();
    return cells.empty() ? std::string("<none>") : cells[0].value;
  };
  v2::RowFilter is_open;
  is_open.set_value_regex_filter("open");
  bool matched = false;
  ASSERT_TRUE(cam(&is_open, "r", &matched).ok());
  EXPECT_TRUE(matched);
  EXPECT_EQ(result("r"), "true");
  v2::RowFilter is_closed;
  is_closed.set_value_regex_filter("closed");
  ASSERT_TRUE(cam(&is_closed, "r", &matched).ok());
  EXPECT_FALSE(matched);
  EXPECT_EQ(result("r"), "false");
  // No predicate: matched iff the row has any cell.
  ASSERT_TRUE(cam(nullptr, "r", &matched).ok());
  EXPECT_TRUE(matched);
  ASSERT_TRUE(cam(nullptr, "empty", &matched).ok());
  EXPECT_FALSE(matched);
  EXPECT_EQ(result("empty"), "false");

  // Errors.
  v2::CheckAndMutateRowRequest none;
  none.set_table_name(kTable);
  none.set_row_key("r");
  v2::CheckAndMutateRowResponse resp;
  grpc::ClientContext c1;
  EXPECT_EQ(stub_->CheckAndMutateRow(&c1, none, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v2::CheckAndMutateRowRequest bad_family = none;
  *bad_family.add_false_mutations() = SetCell("zz", "q", 0, "v");
  grpc::ClientContext c2;
  grpc::Status s = stub_->CheckAndMutateRow(&c2, bad_family, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("false_mutations"));
  v2::CheckAndMutateRowRequest bad_filter = none;
  *bad_filter.add_true_mutations() = SetCell("cf1", "q", 0, "v");
  bad_filter.mutable_predicate_filter()->mutable_chain()->add_filters();
  grpc::ClientContext c3;
  EXPECT_EQ(stub_->CheckAndMutateRow(&c3, bad_filter, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_P(DataServiceTest, ReadModifyWriteRow) {
  CreateTable("t");
  auto rmw = [&](std::vector<v2::ReadModifyWriteRule> rules, v2::Row* row) {
    v2::ReadModifyWriteRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key("r");
    for (auto& rule : rules) *req.add_rules() = rule;
    v2::ReadModifyWriteRowResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->ReadModifyWriteRow(&ctx, req, &resp);
    if (row != nullptr) *row = resp.row();
    return s;
  };
  auto append = [](const std::string& f, const std::string& q, const std::string& v) {
    v2::ReadModifyWriteRule r;
    r.set_family_name(f);
    r.set_column_qualifier(q);
    r.set_append_value(v);
    return r;
  };
  auto increment = [](const std::string& f, const std::string& q, int64_t v) {
    v2::ReadModifyWriteRule r;
    r.set_family_name(f);
    r.set_column_qualifier(q);
    r.set_increment_amount(v);
    return r;
  };
  v2::Row row;
  ASSERT_TRUE(rmw({append("cf1", "s", "ab"), increment("cf2", "n", 5), append("cf1", "s", "cd"),
                   increment("cf2", "n", -7)},
                  &row)
                  .ok());
  EXPECT_EQ(row.key(), "r");
  ASSERT_EQ(row.families_size(), 2);
  EXPECT_EQ(row.families(0).name(), "cf1");
  ASSERT_EQ(row.families(0).columns_size(), 1);
  ASSERT_EQ(row.families(0).columns(0).cells_size(), 1);
  EXPECT_EQ(row.families(0).columns(0).cells(0).value(), "abcd");
  EXPECT_EQ(row.families(0).columns(0).cells(0).timestamp_micros(), kStartMicros);
  EXPECT_EQ(row.families(1).columns(0).cells(0).value(), BigEndian64(-2));

  // The new cell's timestamp is at least the latest existing one; only modified columns come
  // back.
  Put("r", "cf1", "future", kStartMicros + 5'000'000, "x");
  Put("r", "cf1", "other", 1000, "o");
  ASSERT_TRUE(rmw({append("cf1", "future", "y")}, &row).ok());
  ASSERT_EQ(row.families_size(), 1);
  ASSERT_EQ(row.families(0).columns_size(), 1);
  EXPECT_EQ(row.families(0).columns(0).qualifier(), "future");
  EXPECT_EQ(row.families(0).columns(0).cells(0).value(), "xy");
  EXPECT_EQ(row.families(0).columns(0).cells(0).timestamp_micros(), kStartMicros + 5'000'000);
  clock_.Advance(2'000'000);
  ASSERT_TRUE(rmw({increment("cf2", "n", 10)}, &row).ok());
  EXPECT_EQ(row.families(0).columns(0).cells(0).value(), BigEndian64(8));
  EXPECT_EQ(row.families(0).columns(0).cells(0).timestamp_micros(), kStartMicros + 2'000'000);

  // Errors: increment of a non-8-byte value, unknown family, no rules, empty rule.
  grpc::Status s = rmw({increment("cf1", "s", 1)}, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("qualifier=s"));
  s = rmw({append("nofam", "q", "v")}, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(rmw({}, nullptr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v2::ReadModifyWriteRule empty;
  empty.set_family_name("cf1");
  EXPECT_EQ(rmw({empty}, nullptr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A failed request changed nothing.
  v2::ReadRowsRequest req;
  req.mutable_filter()->set_column_qualifier_regex_filter("s");
  auto cells = Read(req).Cells();
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "abcd");
}

// Increments from several threads sum exactly: ReadModifyWriteRow is atomic on its row, also
// against plain writes of other columns of the row.
TEST_P(DataServiceTest, ConcurrentIncrementsSumExactly) {
  CreateTable("t");
  constexpr int kThreads = 4, kPerThread = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = v2::Bigtable::NewStub(channel_);
      for (int i = 0; i < kPerThread; ++i) {
        v2::ReadModifyWriteRowRequest req;
        req.set_table_name(kTable);
        req.set_row_key("counter");
        auto* rule = req.add_rules();
        rule->set_family_name("cf1");
        rule->set_column_qualifier("n");
        rule->set_increment_amount(1);
        v2::ReadModifyWriteRowResponse resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        if (!stub->ReadModifyWriteRow(&ctx, req, &resp).ok()) failures++;
        // A plain write of another column of the same row in between.
        v2::MutateRowRequest put;
        put.set_table_name(kTable);
        put.set_row_key("counter");
        *put.add_mutations() = SetCell("cf2", "t" + std::to_string(t), -1, std::to_string(i));
        v2::MutateRowResponse put_resp;
        grpc::ClientContext ctx2;
        ctx2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        if (!stub->MutateRow(&ctx2, put, &put_resp).ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  v2::ReadRowsRequest req;
  req.mutable_filter()->set_family_name_regex_filter("cf1");
  auto cells = Read(req).Cells();
  ASSERT_GE(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, BigEndian64(kThreads * kPerThread));
}

// ---------------------------------------------------------------------------------------------
// SampleRowKeys, PingAndWarm

std::vector<v2::SampleRowKeysResponse> Samples(v2::Bigtable::Stub* stub, const std::string& table,
                                               grpc::Status* status) {
  v2::SampleRowKeysRequest req;
  req.set_table_name(table);
  grpc::ClientContext ctx;
  auto reader = stub->SampleRowKeys(&ctx, req);
  std::vector<v2::SampleRowKeysResponse> out;
  v2::SampleRowKeysResponse resp;
  for (int i = 0; i < 10000 && reader->Read(&resp); ++i) out.push_back(resp);
  *status = reader->Finish();
  return out;
}

TEST_P(DataServiceTest, SampleRowKeys) {
  DataServiceOptions options;
  options.sample_every_bytes = 64 << 10;
  StartServer(options);
  CreateTable("t", {"m", "t"});
  grpc::Status s;
  auto samples = Samples(stub_.get(), kTable, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(samples.size(), 1u);  // empty table
  EXPECT_EQ(samples[0].row_key(), "");
  EXPECT_EQ(samples[0].offset_bytes(), 0);

  Random rnd(5);
  for (int i = 0; i < 300; ++i) {
    char key[16];
    snprintf(key, sizeof(key), "%c%04d", "amz"[i % 3], i);
    Put(key, "cf1", "q", 1000, rnd.Bytes(4000));  // incompressible
  }
  ASSERT_TRUE(engine_->Flush(std::nullopt).ok());
  samples = Samples(stub_.get(), kTable, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_GE(samples.size(), 3u);
  EXPECT_EQ(samples.back().row_key(), "");
  EXPECT_GE(samples.back().offset_bytes(), 300 * 4000 / 2);
  bool has_m = false, has_t = false;
  for (size_t i = 0; i < samples.size(); ++i) {
    has_m |= samples[i].row_key() == "m";
    has_t |= samples[i].row_key() == "t";
    if (i > 0) {
      EXPECT_GE(samples[i].offset_bytes(), samples[i - 1].offset_bytes());
      if (i + 1 < samples.size()) {
        EXPECT_GT(samples[i].row_key(), samples[i - 1].row_key());
      }
    }
  }
  EXPECT_TRUE(has_m);
  EXPECT_TRUE(has_t);
  EXPECT_GT(samples.size(), 5u);  // samples inside the tablets, not just boundaries

  Samples(stub_.get(), "projects/p/instances/i/tables/none", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_P(DataServiceTest, PingAndWarm) {
  auto ping = [&](const std::string& name) {
    v2::PingAndWarmRequest req;
    req.set_name(name);
    v2::PingAndWarmResponse resp;
    grpc::ClientContext ctx;
    return stub_->PingAndWarm(&ctx, req, &resp);
  };
  EXPECT_TRUE(ping("projects/any/instances/thing").ok());
  EXPECT_EQ(ping("").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ping("projects/p").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// ---------------------------------------------------------------------------------------------
// Waiting for other nodes holds no thread (a cluster's ReadRows and MutateRow)

// Another node, as the service sees it: answers none of the calls waiting on it until `n`
// wait at once, then all of them, from a thread of its own. A service that held a thread for
// each waiting call would never get there with fewer than `n` threads (the pool has 4).
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n) {}
  ~Rendezvous() {
    for (std::thread& t : threads_) t.join();
  }
  void Wait(std::function<void()> answer) {
    absl::MutexLock l(&mu_);
    waiting_.push_back(std::move(answer));
    if (static_cast<int>(waiting_.size()) < n_) return;
    threads_.emplace_back([all = std::move(waiting_)] {
      for (const auto& a : all) a();
    });
    waiting_.clear();
  }

 private:
  const int n_;
  absl::Mutex mu_;
  std::vector<std::function<void()>> waiting_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

// A stream whose first step waits for the rendezvous (as a cluster's waits for a tablet's
// primary), then reads through `inner`.
class WaitingStream final : public replication::RowStream {
 public:
  WaitingStream(std::unique_ptr<replication::RowStream> inner, Rendezvous* other_node)
      : inner_(std::move(inner)), other_node_(other_node) {}
  bool SetWaker(std::function<void()> wake) override {
    wake_ = std::move(wake);
    return true;
  }
  StatusOr<replication::ReadStep> Step(model::Row* row) override {
    EXPECT_TRUE(wake_ != nullptr) << "the service reads without a waker";
    if (!asked_) {
      asked_ = true;
      other_node_->Wait([this] {
        std::function<void()> wake = wake_;  // a copy: the wake may end the stream
        answered_.store(true);
        wake();
      });
      return replication::ReadStep::kWait;
    }
    EXPECT_TRUE(answered_.load()) << "Step called again before the wake";
    return inner_->Step(row);
  }
  bool done() const override { return inner_->done(); }
  const replication::ReadProgress& progress() const override { return inner_->progress(); }

 private:
  std::unique_ptr<replication::RowStream> inner_;
  Rendezvous* const other_node_;
  std::function<void()> wake_;
  bool asked_ = false;
  std::atomic<bool> answered_{false};
};

class WaitingAccess final : public replication::TableAccess {
 public:
  WaitingAccess(replication::TableAccess* inner, Rendezvous* other_node)
      : inner_(inner), other_node_(other_node) {}
  using Options = replication::AccessOptions;

  void MutateAsync(replication::TableSnapshot t, model::RowMutation m, const Options& o,
                   Executor* /*blocking*/, std::function<void(Status)> done) override {
    other_node_->Wait([this, t, m = std::move(m), o, done = std::move(done)] {
      done(inner_->Mutate(*t, m, o));
    });
  }
  void MutateRowsAsync(replication::TableSnapshot t, std::vector<model::RowMutation> m,
                       const Options& o, Executor* /*blocking*/,
                       std::function<void(std::vector<Status>)> done) override {
    other_node_->Wait([this, t, m = std::move(m), o, done = std::move(done)] {
      done(inner_->MutateRows(*t, m, o));
    });
  }
  void CheckAndMutateAsync(replication::TableSnapshot t, std::string row,
                           std::shared_ptr<model::RowFilter> p, model::RowMutation on_true,
                           model::RowMutation on_false, const Options& o, Executor* /*blocking*/,
                           std::function<void(StatusOr<bool>)> done) override {
    other_node_->Wait([this, t, row = std::move(row), p = std::move(p),
                       on_true = std::move(on_true), on_false = std::move(on_false), o,
                       done = std::move(done)] {
      done(inner_->CheckAndMutate(*t, row, p.get(), on_true, on_false, o));
    });
  }
  void ReadModifyWriteAsync(replication::TableSnapshot t, std::string row,
                            std::vector<replication::ReadModifyWriteRule> r, int64_t now,
                            size_t max, const Options& o, Executor* /*blocking*/,
                            std::function<void(StatusOr<model::Row>)> done) override {
    other_node_->Wait([this, t, row = std::move(row), r = std::move(r), now, max, o,
                       done = std::move(done)] {
      done(inner_->ReadModifyWrite(*t, row, r, now, max, o));
    });
  }
  // The service must call none of the waiting forms.
  Status Mutate(const catalog::TableInfo& t, const model::RowMutation& m,
                const Options& o) override {
    ADD_FAILURE() << "MutateRow waited on a thread";
    return inner_->Mutate(t, m, o);
  }
  std::vector<Status> MutateRows(const catalog::TableInfo& t,
                                 std::span<const model::RowMutation> m,
                                 const Options& o) override {
    ADD_FAILURE() << "MutateRows waited on a thread";
    return inner_->MutateRows(t, m, o);
  }
  StatusOr<bool> CheckAndMutate(const catalog::TableInfo& t, std::string_view row,
                                model::RowFilter* p, const model::RowMutation& on_true,
                                const model::RowMutation& on_false, const Options& o) override {
    ADD_FAILURE() << "CheckAndMutateRow waited on a thread";
    return inner_->CheckAndMutate(t, row, p, on_true, on_false, o);
  }
  StatusOr<model::Row> ReadModifyWrite(const catalog::TableInfo& t, std::string_view row,
                                       const std::vector<replication::ReadModifyWriteRule>& r,
                                       int64_t now, size_t max, const Options& o) override {
    ADD_FAILURE() << "ReadModifyWriteRow waited on a thread";
    return inner_->ReadModifyWrite(t, row, r, now, max, o);
  }
  StatusOr<std::unique_ptr<replication::RowStream>> Read(replication::TableSnapshot t,
                                                         replication::ReadRequest r,
                                                         const Options& o) override {
    ASSIGN_OR_RETURN(std::unique_ptr<replication::RowStream> inner,
                     inner_->Read(std::move(t), std::move(r), o));
    return std::unique_ptr<replication::RowStream>(
        std::make_unique<WaitingStream>(std::move(inner), other_node_));
  }
  StatusOr<std::vector<replication::RowKeySample>> SampleRowKeys(const catalog::TableInfo& t,
                                                                 uint64_t every) override {
    return inner_->SampleRowKeys(t, every);
  }
  StatusOr<uint64_t> DropRowRange(const catalog::TableInfo& t, std::string_view prefix,
                                  const Options& o) override {
    return inner_->DropRowRange(t, prefix, o);
  }

 private:
  replication::TableAccess* const inner_;
  Rendezvous* const other_node_;
};

TEST_P(ReadRowsTest, ReadsWaitingForAnotherNodeHoldNoThread) {
  Fill();
  constexpr int kReads = 12;  // more than the pool's 4 threads
  Rendezvous other_node(kReads);
  WaitingAccess access(access_.get(), &other_node);
  StartServer(DataServiceOptions(), &access);
  std::vector<std::vector<std::string>> keys(kReads);
  std::vector<std::thread> readers;
  for (int i = 0; i < kReads; ++i) {
    readers.emplace_back([&, i] {
      v2::ReadRowsRequest req;
      req.set_rows_limit(i + 1);
      ReadResult r = Read(req);
      EXPECT_TRUE(r.status.ok()) << r.status.error_message();
      keys[i] = r.Keys();
    });
  }
  for (std::thread& t : readers) t.join();
  for (int i = 0; i < kReads; ++i) EXPECT_EQ(keys[i].size(), std::min<size_t>(i + 1, 10)) << i;
  StopServer();
}

TEST_P(DataServiceTest, WritesWaitingForAnotherNodeHoldNoThread) {
  CreateTable("t", {"m"});
  constexpr int kWrites = 12;  // three of each kind
  Rendezvous other_node(kWrites);
  WaitingAccess access(access_.get(), &other_node);
  StartServer(DataServiceOptions(), &access);
  std::vector<std::thread> writers;
  for (int i = 0; i < kWrites; ++i) {
    writers.emplace_back([&, i] {
      const std::string row = StrCat(i % 2 == 0 ? "a" : "z", i);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      grpc::Status s;
      if (i % 4 == 0) {
        s = MutateRow(row, {SetCell("cf1", "q", 1000, "v")});
      } else if (i % 4 == 1) {
        v2::MutateRowsRequest req;
        req.set_table_name(kTable);
        // All in one tablet, so one call waits (the rendezvous counts calls).
        for (const std::string& key : {row, StrCat(row, "x"), StrCat(row, "y")}) {
          auto* e = req.add_entries();
          e->set_row_key(key);
          *e->add_mutations() = SetCell("cf1", "q", 1000, "v");
        }
        auto reader = stub_->MutateRows(&ctx, req);
        v2::MutateRowsResponse resp;
        while (reader->Read(&resp)) {
          for (const auto& e : resp.entries()) EXPECT_EQ(e.status().code(), 0) << e.status().message();
        }
        s = reader->Finish();
      } else if (i % 4 == 2) {
        v2::CheckAndMutateRowRequest req;
        req.set_table_name(kTable);
        req.set_row_key(row);
        *req.add_false_mutations() = SetCell("cf1", "q", 1000, "v");
        v2::CheckAndMutateRowResponse resp;
        s = stub_->CheckAndMutateRow(&ctx, req, &resp);
        EXPECT_FALSE(resp.predicate_matched());
      } else {
        v2::ReadModifyWriteRowRequest req;
        req.set_table_name(kTable);
        req.set_row_key(row);
        auto* rule = req.add_rules();
        rule->set_family_name("cf1");
        rule->set_column_qualifier("q");
        rule->set_append_value("v");
        v2::ReadModifyWriteRowResponse resp;
        s = stub_->ReadModifyWriteRow(&ctx, req, &resp);
        EXPECT_EQ(resp.row().key(), row);
      }
      EXPECT_TRUE(s.ok()) << i << ": " << s.error_message();
    });
  }
  for (std::thread& t : writers) t.join();
  StartServer(DataServiceOptions());
  // 9 single rows and 3 MutateRows of 3.
  EXPECT_EQ(ReadAll().Keys().size(), static_cast<size_t>(9 + 3 * 3));
}

}  // namespace
}  // namespace tessera::server
