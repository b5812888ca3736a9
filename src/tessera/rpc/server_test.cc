#include "tessera/rpc/server.h"

#include <dirent.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tessera/v1/replica.grpc.pb.h"

namespace tessera::rpc {
namespace {

namespace v2 = ::google::bigtable::v2;
namespace v1 = ::tessera::v1;
constexpr char kBigtable[] = "google.bigtable.v2.Bigtable";
constexpr char kReplica[] = "tessera.v1.Replica";

// Streams `n` responses, one at a time; the request's rows_limit says how many.
class Counter final : public WriteReactor<v2::ReadRowsResponse> {
 public:
  Counter(ServerContext* c, int64_t n) : WriteReactor(c), n_(n) { Next(); }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::CANCELLED);
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (sent_ == n_) return Finish(grpc::Status::OK);
    response_.set_last_scanned_row_key("row" + std::to_string(sent_++));
    StartWrite(&response_);
  }
  const int64_t n_;
  int64_t sent_ = 0;
  v2::ReadRowsResponse response_;
};

// Echoes every message back, then finishes OK when the client half-closes.
class Echo final : public BidiReactor<v1::ReplicaFrames, v1::ReplicaFrames> {
 public:
  explicit Echo(ServerContext* c) : BidiReactor(c) { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    out_ = in_;
    StartWrite(&out_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::CANCELLED);
    StartRead(&in_);
  }
  void OnDone() override { delete this; }

 private:
  v1::ReplicaFrames in_, out_;
};

// A unary reactor that answers only when the call is cancelled.
class UntilCancelled final : public UnaryReactor {
 public:
  UntilCancelled(ServerContext* c, std::atomic<int>* cancels, std::atomic<int>* dones)
      : UnaryReactor(c), cancels_(cancels), dones_(dones) {}
  void OnCancel() override {
    cancels_->fetch_add(1);
    Finish(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    dones_->fetch_add(1);
    delete this;
  }

 private:
  std::atomic<int>* const cancels_;
  std::atomic<int>* const dones_;
};

class TestService {
 public:
  explicit TestService(Executor* executor) : executor_(executor) {}

  void Register(Services* s) {
    s->Add(kBigtable, "PingAndWarm", this, &TestService::PingAndWarm);
    s->Add(kBigtable, "ReadRows", this, &TestService::ReadRows);
    s->Add(kBigtable, "MutateRow", this, &TestService::MutateRow, executor_);
    s->Add(kBigtable, "CheckAndMutateRow", this, &TestService::CheckAndMutateRow);
    s->Add(kReplica, "Stream", this, &TestService::Stream);
  }

  // name "fail" fails; anything else answers OK, with the caller's metadata "echo" as trailer.
  UnaryReactor* PingAndWarm(ServerContext* c, const v2::PingAndWarmRequest* req,
                            v2::PingAndWarmResponse*) {
    UnaryReactor* r = c->DefaultReactor();
    auto it = c->client_metadata().find("echo");
    if (it != c->client_metadata().end()) {
      c->AddTrailingMetadata("echo", std::string(it->second.data(), it->second.size()));
    }
    r->Finish(req->name() == "fail" ? grpc::Status(grpc::StatusCode::NOT_FOUND, "no such thing")
                                    : grpc::Status::OK);
    return r;
  }
  WriteReactor<v2::ReadRowsResponse>* ReadRows(ServerContext* c, const v2::ReadRowsRequest* req) {
    return new Counter(c, req->rows_limit());
  }
  // Runs on the executor and answers from another thread, with the row key as the table name.
  UnaryReactor* MutateRow(ServerContext* c, const v2::MutateRowRequest* req,
                          v2::MutateRowResponse*) {
    handler_on_executor_ = !loop_thread_check_();
    UnaryReactor* r = c->DefaultReactor();
    std::thread([r, ok = req->row_key() == "k"] {
      r->Finish(ok ? grpc::Status::OK : grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "key"));
    }).detach();
    return r;
  }
  UnaryReactor* CheckAndMutateRow(ServerContext* c, const v2::CheckAndMutateRowRequest*,
                                  v2::CheckAndMutateRowResponse*) {
    return new UntilCancelled(c, &cancels, &dones);
  }
  BidiReactor<v1::ReplicaFrames, v1::ReplicaFrames>* Stream(ServerContext* c) {
    return new Echo(c);
  }

  std::function<bool()> loop_thread_check_;
  std::atomic<bool> handler_on_executor_{false};
  std::atomic<int> cancels{0};
  std::atomic<int> dones{0};

 private:
  Executor* const executor_;
};

class RpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    executor_ = NewThreadPoolExecutor(2);
    service_ = std::make_unique<TestService>(executor_.get());
    service_->Register(&services_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    loop_ = Loop::ForServer(&builder, 1);
    service_->loop_thread_check_ = [loop = loop_.get()] { return loop->InLoopThread(); };
    StatusOr<std::unique_ptr<Server>> server = Server::Start(&builder, &services_, loop_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    loop_->Shutdown();
  }

  std::unique_ptr<Executor> executor_;
  std::unique_ptr<TestService> service_;
  Services services_;
  int port_ = 0;
  std::unique_ptr<Loop> loop_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(RpcServerTest, UnaryAnswersWithStatusAndTrailingMetadata) {
  auto stub = v2::Bigtable::NewStub(channel_);
  for (int i = 0; i < 50; ++i) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("echo", "hello" + std::to_string(i));
    v2::PingAndWarmRequest req;
    req.set_name("projects/p/instances/i");
    v2::PingAndWarmResponse resp;
    ASSERT_TRUE(stub->PingAndWarm(&ctx, req, &resp).ok());
    auto it = ctx.GetServerTrailingMetadata().find("echo");
    ASSERT_NE(it, ctx.GetServerTrailingMetadata().end());
    EXPECT_EQ(std::string(it->second.data(), it->second.size()), "hello" + std::to_string(i));
  }
  grpc::ClientContext ctx;
  v2::PingAndWarmRequest req;
  req.set_name("fail");
  v2::PingAndWarmResponse resp;
  grpc::Status s = stub->PingAndWarm(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no such thing");
}

TEST_F(RpcServerTest, AHandlerRunsOnItsExecutorAndFinishesFromAnyThread) {
  auto stub = v2::Bigtable::NewStub(channel_);
  grpc::ClientContext ctx;
  v2::MutateRowRequest req;
  req.set_row_key("k");
  v2::MutateRowResponse resp;
  EXPECT_TRUE(stub->MutateRow(&ctx, req, &resp).ok());
  EXPECT_TRUE(service_->handler_on_executor_.load());
  grpc::ClientContext ctx2;
  req.set_row_key("x");
  EXPECT_EQ(stub->MutateRow(&ctx2, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(RpcServerTest, ServerStreamingWritesEveryResponseInOrder) {
  auto stub = v2::Bigtable::NewStub(channel_);
  for (int64_t n : {0, 1, 7}) {
    grpc::ClientContext ctx;
    v2::ReadRowsRequest req;
    req.set_rows_limit(n);
    auto reader = stub->ReadRows(&ctx, req);
    v2::ReadRowsResponse resp;
    int64_t got = 0;
    while (reader->Read(&resp)) {
      EXPECT_EQ(resp.last_scanned_row_key(), "row" + std::to_string(got));
      ++got;
    }
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(got, n);
  }
}

TEST_F(RpcServerTest, BidiEchoesUntilTheClientHalfCloses) {
  auto stub = v1::Replica::NewStub(channel_);
  grpc::ClientContext ctx;
  auto stream = stub->Stream(&ctx);
  for (int i = 0; i < 20; ++i) {
    v1::ReplicaFrames out;
    out.add_frames()->set_id(static_cast<uint64_t>(i));
    ASSERT_TRUE(stream->Write(out));
    v1::ReplicaFrames in;
    ASSERT_TRUE(stream->Read(&in));
    ASSERT_EQ(in.frames_size(), 1);
    EXPECT_EQ(in.frames(0).id(), static_cast<uint64_t>(i));
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(RpcServerTest, UnregisteredMethodsAreUnimplementedByName) {
  auto admin = ::google::bigtable::admin::v2::BigtableTableAdmin::NewStub(channel_);
  grpc::ClientContext ctx;
  ::google::bigtable::admin::v2::GetTableRequest req;
  ::google::bigtable::admin::v2::Table resp;
  grpc::Status s = admin->GetTable(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(s.error_message(),
            "GetTable (google.bigtable.admin.v2.BigtableTableAdmin) is not supported by Tessera");
  // A declared method of a registered service that nobody serves.
  auto data = v2::Bigtable::NewStub(channel_);
  grpc::ClientContext ctx2;
  v2::ReadModifyWriteRowRequest rmw;
  v2::ReadModifyWriteRowResponse rmw_resp;
  EXPECT_EQ(data->ReadModifyWriteRow(&ctx2, rmw, &rmw_resp).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(services_.Unregistered(kBigtable),
            (std::vector<std::string>{"/google.bigtable.v2.Bigtable/SampleRowKeys",
                                      "/google.bigtable.v2.Bigtable/MutateRows",
                                      "/google.bigtable.v2.Bigtable/ReadModifyWriteRow"}));
}

TEST_F(RpcServerTest, AClientsCancelReachesOnCancelThenOnDone) {
  auto stub = v2::Bigtable::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  v2::CheckAndMutateRowRequest req;
  v2::CheckAndMutateRowResponse resp;
  EXPECT_EQ(stub->CheckAndMutateRow(&ctx, req, &resp).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  for (int i = 0; i < 500 && service_->dones.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(service_->cancels.load(), 1);
  EXPECT_EQ(service_->dones.load(), 1);
}

TEST_F(RpcServerTest, ShutdownCancelsACallThatWouldNeverEnd) {
  auto stub = v2::Bigtable::NewStub(channel_);
  std::thread client([&] {
    grpc::ClientContext ctx;
    v2::CheckAndMutateRowRequest req;
    v2::CheckAndMutateRowResponse resp;
    grpc::Status s = stub->CheckAndMutateRow(&ctx, req, &resp);
    EXPECT_FALSE(s.ok());
  });
  for (int i = 0; i < 500; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  client.join();
  EXPECT_EQ(service_->cancels.load(), 1);
  EXPECT_EQ(service_->dones.load(), 1);
}

// The point of the layer: no gRPC callback threads in a process that serves on it.
TEST_F(RpcServerTest, NoCallbackThreadsAreStarted) {
  auto stub = v2::Bigtable::NewStub(channel_);
  grpc::ClientContext ctx;
  v2::PingAndWarmRequest req;
  v2::PingAndWarmResponse resp;
  ASSERT_TRUE(stub->PingAndWarm(&ctx, req, &resp).ok());
  DIR* dir = opendir("/proc/self/task");
  ASSERT_NE(dir, nullptr);
  int loop_threads = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    EXPECT_NE(name, "nexting_thread");
    if (name.rfind("rpc-loop-", 0) == 0) ++loop_threads;
  }
  closedir(dir);
  EXPECT_EQ(loop_threads, 1);
}

TEST(RpcServicesTest, AMethodRegisteredAgainstItsDeclarationIsRefused) {
  TestService service(nullptr);
  Services services;
  // ReadRows is server streaming: registering it as unary with other types is refused.
  struct Wrong {
    UnaryReactor* Handle(ServerContext* c, const v2::PingAndWarmRequest*,
                         v2::PingAndWarmResponse*) {
      return c->DefaultReactor();
    }
  } wrong;
  services.Add(kBigtable, "ReadRows", &wrong, &Wrong::Handle);
  services.Add(kBigtable, "NoSuchMethod", &wrong, &Wrong::Handle);
  services.Add(kBigtable, "PingAndWarm", &wrong, &Wrong::Handle);
  services.Add(kBigtable, "PingAndWarm", &wrong, &Wrong::Handle);
  ASSERT_EQ(services.errors().size(), 3u);
  EXPECT_NE(services.errors()[0].find("declared google.bigtable.v2.ReadRowsRequest"),
            std::string::npos);
  EXPECT_NE(services.errors()[1].find("no such method"), std::string::npos);
  EXPECT_NE(services.errors()[2].find("registered twice"), std::string::npos);
  grpc::ServerBuilder builder;
  auto loop = Loop::ForServer(&builder, 1);
  StatusOr<std::unique_ptr<Server>> server = Server::Start(&builder, &services, loop.get());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  loop->Shutdown();
}

TEST(RpcUnimplementedTest, MessageNamesTheMethodAndService) {
  EXPECT_EQ(UnimplementedMessage("/a.B/C"), "C (a.B) is not supported by Tessera");
  EXPECT_EQ(UnimplementedMessage("nonsense"), "method \"nonsense\" is not supported by Tessera");
  EXPECT_EQ(UnimplementedMessage("/google.bigtable.admin.v2.BigtableTableAdmin/CreateBackup"),
            "CreateBackup (google.bigtable.admin.v2.BigtableTableAdmin) is not supported by "
            "Tessera: its backups are snapshots, taken with `tessera admin snapshot --table T "
            "--tag S` and restored with `tessera admin restore` (docs/operations.md)");
}

}  // namespace
}  // namespace tessera::rpc
