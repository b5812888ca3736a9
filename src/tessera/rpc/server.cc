#include "tessera/rpc/server.h"

#include <optional>
#include <utility>

#include "google/protobuf/descriptor.h"
#include "tessera/rpc/codec.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace tessera::rpc {

namespace {

// Request slots kept waiting on each queue: calls that arrive together beyond these wait for
// a slot to be requested again, which happens as soon as a call is matched.
constexpr int kSlotsPerQueue = 8;

using google::protobuf::MessageLite;
using internal::Parse;
using internal::Serialize;

}  // namespace

std::string UnimplementedMessage(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (path.size() < 4 || path.front() != '/' || slash == 0 || slash + 1 >= path.size()) {
    return tessera::StrCat("method \"", path, "\" is not supported by Tessera");
  }
  const std::string_view service = path.substr(1, slash - 1);
  const std::string_view method = path.substr(slash + 1);
  // The Bigtable backup RPCs: Tessera's backups are its snapshots (docs/operations.md).
  const bool backup = service == "google.bigtable.admin.v2.BigtableTableAdmin" &&
                      (method.find("Backup") != std::string_view::npos || method == "RestoreTable");
  return tessera::StrCat(method, " (", service, ") is not supported by Tessera",
                         backup ? ": its backups are snapshots, taken with `tessera admin "
                                  "snapshot --table T --tag S` and restored with `tessera admin "
                                  "restore` (docs/operations.md)"
                                : "");
}

// ---------------------------------------------------------------------------------------------
// ServerCall: a request slot, then one call, until its OnDone.

class ServerCall final : public ServerContext {
 public:
  ServerCall(Server* server, int queue) : server_(server), queue_(queue), arena_(ArenaFor(this)) {}

  // Frees `call`, then tells its server: the server's Shutdown waits for that, and the call's
  // gRPC context must be gone before the server may be.
  static void Free(ServerCall* call) {
    Server* server = call->server_;
    delete call;
    server->CallGone();
  }

  void Request() {
    ctx_.AsyncNotifyWhenDone(&done_tag_);
    grpc::ServerCompletionQueue* q = server_->loop_->server_queue(queue_);
    server_->generic_.RequestCall(&ctx_, &stream_, q, q, &new_call_tag_);
  }

  // --- ServerContext ---
  grpc::GenericServerContext& grpc_context() { return ctx_; }
  UnaryReactor* DefaultReactor() {
    default_reactor_.emplace(this);
    return &*default_reactor_;
  }

  // --- reactors ---
  void Bind(ServerReactor* reactor) {
    absl::MutexLock l(&mu_);
    reactor_ = reactor;
  }
  void StartRead(MessageLite* into) {
    {
      absl::MutexLock l(&mu_);
      ++ops_;
      read_into_ = into;
    }
    stream_.Read(&read_buffer_, &read_tag_);
  }
  void StartWrite(const MessageLite& message, grpc::WriteOptions options) {
    Serialize(message, &write_buffer_);
    {
      absl::MutexLock l(&mu_);
      ++ops_;
      CountSent();
    }
    stream_.Write(write_buffer_, options, &write_tag_);
  }
  void StartWriteAndFinish(const MessageLite& message, grpc::WriteOptions options,
                           grpc::Status status) {
    Serialize(message, &write_buffer_);
    {
      absl::MutexLock l(&mu_);
      CountSent();
      code_ = status.error_code();
    }
    stream_.WriteAndFinish(write_buffer_, options, status, &finish_tag_);
  }
  void Finish(grpc::Status status) {
    if (status.ok() && response_ != nullptr) {
      StartWriteAndFinish(*response_, grpc::WriteOptions(), std::move(status));
      return;
    }
    {
      absl::MutexLock l(&mu_);
      code_ = status.error_code();
    }
    stream_.Finish(status, &finish_tag_);
  }

 private:
  friend class ServerContext;

  static google::protobuf::ArenaOptions ArenaFor(ServerCall* call) {
    google::protobuf::ArenaOptions o;
    o.initial_block = call->arena_block_;
    o.initial_block_size = sizeof(call->arena_block_);
    return o;
  }

  // A call has arrived (ok), or the server is shutting down (not ok).
  void OnNewCall(bool ok) {
    if (!ok) {
      Free(this);  // never matched: no other tag of it will complete
      return;
    }
    if (server_->observer_ != nullptr) arrived_ = std::chrono::steady_clock::now();
    server_->RequestCall(queue_);
    method_index_ = server_->services_->IndexOf(ctx_.method());
    if (method_index_ < 0) {
      return FinishUnserved(
          grpc::Status(grpc::StatusCode::UNIMPLEMENTED, UnimplementedMessage(ctx_.method())));
    }
    method_ = &server_->services_->method(method_index_);
    if (server_->gate_ != nullptr) {
      if (grpc::Status admitted = server_->gate_->Admit(*this); !admitted.ok()) {
        return FinishUnserved(admitted);
      }
    }
    if (method_->kind == Services::Method::Kind::kBidi) return StartHandler();
    stream_.Read(&read_buffer_, &request_tag_);
  }

  // The request of a unary or server-streaming call.
  void OnRequest(bool ok) {
    if (!ok) {
      return FinishUnserved(grpc::Status(grpc::StatusCode::CANCELLED,
                                         "the call ended before its request arrived"));
    }
    {
      absl::MutexLock l(&mu_);
      CountReceived();
    }
    request_ = method_->new_request(&arena_);
    if (!Parse(&read_buffer_, request_)) {
      return FinishUnserved(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          tessera::StrCat("the request of ", ctx_.method(), " does not parse")));
    }
    if (server_->gate_ != nullptr) {
      if (grpc::Status admitted = server_->gate_->AdmitRequest(*this, *request_); !admitted.ok()) {
        return FinishUnserved(admitted);
      }
    }
    if (method_->new_response != nullptr) response_ = method_->new_response(&arena_);
    RunOn(method_->executor, [this] { StartHandler(); });
  }

  void StartHandler() {
    ServerReactor* reactor = method_->start(this, request_, response_);
    ServerReactor* cancel = nullptr;
    {
      absl::MutexLock l(&mu_);
      if (reactor_ == nullptr) reactor_ = reactor;
      started_ = true;
      if (cancelled_ && !cancel_reported_) {
        cancel_reported_ = true;
        cancel = reactor_;
      }
    }
    if (cancel != nullptr) cancel->OnCancel();
    MaybeDone();
  }

  // Answers without a reactor (unknown method, bad request).
  void FinishUnserved(grpc::Status status) {
    {
      absl::MutexLock l(&mu_);
      started_ = true;
      code_ = status.error_code();
    }
    stream_.Finish(status, &finish_tag_);
  }

  void OnRead(bool ok) {
    MessageLite* into = nullptr;
    ServerReactor* reactor = nullptr;
    {
      absl::MutexLock l(&mu_);
      into = read_into_;
      reactor = reactor_;
      if (ok) CountReceived();
    }
    if (ok && !Parse(&read_buffer_, into)) {
      ctx_.TryCancel();  // a stream whose messages do not parse is not worth going on with
      ok = false;
    }
    reactor->OnReadDone(ok);
    OpDone();
  }

  void OnWrite(bool ok) {
    ServerReactor* reactor = nullptr;
    {
      absl::MutexLock l(&mu_);
      reactor = reactor_;
    }
    reactor->OnWriteDone(ok);
    OpDone();
  }

  void OnFinish(bool /*ok*/) {
    {
      absl::MutexLock l(&mu_);
      finished_ = true;
    }
    MaybeDone();
  }

  void OnCallDone(bool /*ok*/) {
    ServerReactor* cancel = nullptr;
    {
      absl::MutexLock l(&mu_);
      done_ = true;
      cancelled_ = ctx_.IsCancelled();
      if (cancelled_ && started_ && reactor_ != nullptr && !cancel_reported_) {
        cancel_reported_ = true;
        cancel = reactor_;
      }
    }
    if (cancel != nullptr) cancel->OnCancel();
    MaybeDone();
  }

  void OpDone() {
    {
      absl::MutexLock l(&mu_);
      --ops_;
    }
    MaybeDone();
  }

  // Runs OnDone and frees the call once nothing of it is outstanding.
  void MaybeDone() {
    ServerReactor* reactor = nullptr;
    CallRecord record;
    {
      absl::MutexLock l(&mu_);
      if (!finished_ || !done_ || !started_ || ops_ != 0 || over_) return;
      over_ = true;
      reactor = reactor_;
      if (server_->observer_ != nullptr) {
        record = record_;
        record.method = method_index_;
        record.code = cancelled_ ? grpc::StatusCode::CANCELLED : code_;
        record.micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - arrived_)
                            .count();
      }
    }
    if (reactor != nullptr) reactor->OnDone();
    if (server_->observer_ != nullptr) server_->observer_->OnCallEnd(record);
    Free(this);
  }

  // What the observer hears (counted whether or not there is one: a few additions).
  void CountReceived() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++record_.messages_received;
    record_.bytes_received += read_buffer_.Length();
  }
  void CountSent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++record_.messages_sent;
    record_.bytes_sent += write_buffer_.Length();
  }

  Server* const server_;
  const int queue_;
  grpc::GenericServerContext ctx_;
  grpc::GenericServerAsyncReaderWriter stream_{&ctx_};
  int method_index_ = -1;
  const Services::Method* method_ = nullptr;

  alignas(16) char arena_block_[2048];
  google::protobuf::Arena arena_;
  MessageLite* request_ = nullptr;   // on arena_
  MessageLite* response_ = nullptr;  // on arena_ (unary calls)
  grpc::ByteBuffer read_buffer_;     // one read at a time
  grpc::ByteBuffer write_buffer_;    // one write at a time
  std::optional<UnaryReactor> default_reactor_;

  MemberTag<ServerCall, &ServerCall::OnNewCall> new_call_tag_{this};
  MemberTag<ServerCall, &ServerCall::OnRequest> request_tag_{this};
  MemberTag<ServerCall, &ServerCall::OnRead> read_tag_{this};
  MemberTag<ServerCall, &ServerCall::OnWrite> write_tag_{this};
  MemberTag<ServerCall, &ServerCall::OnFinish> finish_tag_{this};
  MemberTag<ServerCall, &ServerCall::OnCallDone> done_tag_{this};

  absl::Mutex mu_;
  ServerReactor* reactor_ ABSL_GUARDED_BY(mu_) = nullptr;
  MessageLite* read_into_ ABSL_GUARDED_BY(mu_) = nullptr;
  int ops_ ABSL_GUARDED_BY(mu_) = 0;  // reads and writes outstanding
  bool started_ ABSL_GUARDED_BY(mu_) = false;   // the handler returned (or none will run)
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // the finish operation completed
  bool done_ ABSL_GUARDED_BY(mu_) = false;      // gRPC says the call is over
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_reported_ ABSL_GUARDED_BY(mu_) = false;
  bool over_ ABSL_GUARDED_BY(mu_) = false;  // OnDone is running or has run
  grpc::StatusCode code_ ABSL_GUARDED_BY(mu_) = grpc::StatusCode::OK;  // as finished
  CallRecord record_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point arrived_;  // set before any other thread sees the call
};

// --- ServerContext, reactors ----------------------------------------------------------------

namespace {
ServerCall* CallOf(ServerContext* c) { return static_cast<ServerCall*>(c); }
const ServerCall* CallOf(const ServerContext* c) { return static_cast<const ServerCall*>(c); }
}  // namespace

const std::multimap<grpc::string_ref, grpc::string_ref>& ServerContext::client_metadata() const {
  return const_cast<ServerCall*>(CallOf(this))->grpc_context().client_metadata();
}
std::chrono::system_clock::time_point ServerContext::deadline() const {
  return const_cast<ServerCall*>(CallOf(this))->grpc_context().deadline();
}
std::string ServerContext::peer() const {
  return const_cast<ServerCall*>(CallOf(this))->grpc_context().peer();
}
bool ServerContext::peer_certificate_verified() const {
  std::shared_ptr<const grpc::AuthContext> auth =
      const_cast<ServerCall*>(CallOf(this))->grpc_context().auth_context();
  return auth != nullptr && auth->IsPeerAuthenticated();
}

const std::string& ServerContext::method() const {
  return const_cast<ServerCall*>(CallOf(this))->grpc_context().method();
}
void ServerContext::AddTrailingMetadata(const std::string& key, const std::string& value) {
  CallOf(this)->grpc_context().AddTrailingMetadata(key, value);
}
UnaryReactor* ServerContext::DefaultReactor() { return CallOf(this)->DefaultReactor(); }

grpc::Status GateChain::Admit(ServerContext& context) {
  for (CallGate* gate : gates_) {
    if (gate == nullptr) continue;
    if (grpc::Status s = gate->Admit(context); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

grpc::Status GateChain::AdmitRequest(const ServerContext& context,
                                     const google::protobuf::MessageLite& request) {
  for (CallGate* gate : gates_) {
    if (gate == nullptr) continue;
    if (grpc::Status s = gate->AdmitRequest(context, request); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

ServerReactor::ServerReactor(ServerContext* context) : call_(CallOf(context)) {
  call_->Bind(this);
}

namespace internal {
void StartRead(ServerCall* call, MessageLite* into) { call->StartRead(into); }
void StartWrite(ServerCall* call, const MessageLite& message, grpc::WriteOptions options) {
  call->StartWrite(message, options);
}
void StartWriteAndFinish(ServerCall* call, const MessageLite& message, grpc::WriteOptions options,
                         grpc::Status status) {
  call->StartWriteAndFinish(message, options, std::move(status));
}
void Finish(ServerCall* call, grpc::Status status) { call->Finish(std::move(status)); }
}  // namespace internal

// --- Services ---------------------------------------------------------------------------------

void Services::Register(std::string_view service, std::string_view method,
                        const std::string& request, const std::string& response, Method m) {
  const std::string path = tessera::StrCat("/", service, "/", method);
  const google::protobuf::MethodDescriptor* d =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          tessera::StrCat(service, ".", method));
  const bool client_streaming = m.kind == Method::Kind::kBidi;
  const bool server_streaming = m.kind != Method::Kind::kUnary;
  if (d == nullptr) {
    errors_.push_back(tessera::StrCat(path, ": no such method is declared"));
  } else if (d->input_type()->full_name() != request || d->output_type()->full_name() != response) {
    errors_.push_back(tessera::StrCat(path, ": declared ", d->input_type()->full_name(), " -> ",
                                      d->output_type()->full_name(), ", registered ", request,
                                      " -> ", response));
  } else if (d->client_streaming() != client_streaming ||
             d->server_streaming() != server_streaming) {
    errors_.push_back(tessera::StrCat(path, ": registered with another streaming kind"));
  } else if (!index_.emplace(path, static_cast<int>(methods_.size())).second) {
    errors_.push_back(tessera::StrCat(path, ": registered twice"));
  } else {
    methods_.push_back(std::move(m));
    paths_.push_back(path);
  }
}

const Services::Method* Services::Find(std::string_view path) const {
  const int i = IndexOf(path);
  return i < 0 ? nullptr : &methods_[i];
}

int Services::IndexOf(std::string_view path) const {
  auto it = index_.find(absl::string_view(path.data(), path.size()));
  return it == index_.end() ? -1 : it->second;
}

std::vector<std::string> Services::Unregistered(std::string_view service) const {
  std::vector<std::string> missing;
  const google::protobuf::ServiceDescriptor* d =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(std::string(service));
  if (d == nullptr) return {tessera::StrCat(service, " (no such service)")};
  for (int i = 0; i < d->method_count(); ++i) {
    const std::string path = tessera::StrCat("/", service, "/", d->method(i)->name());
    if (Find(path) == nullptr) missing.push_back(path);
  }
  return missing;
}

// --- Server -----------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Server>> Server::Start(grpc::ServerBuilder* builder,
                                                const Services* services, Loop* loop,
                                                CallObserver* observer, CallGate* gate) {
  if (!services->errors().empty()) {
    std::string all;
    for (const std::string& e : services->errors()) all += (all.empty() ? "" : "; ") + e;
    return absl::InvalidArgumentError(tessera::StrCat("gRPC methods: ", all));
  }
  std::unique_ptr<Server> server(new Server(services, loop, observer, gate));
  builder->RegisterAsyncGenericService(&server->generic_);
  server->server_ = builder->BuildAndStart();
  if (server->server_ == nullptr) return absl::UnavailableError("gRPC could not start the server");
  for (int q = 0; q < loop->size(); ++q) {
    for (int k = 0; k < kSlotsPerQueue; ++k) server->RequestCall(q);
  }
  return server;
}

Server::~Server() { Shutdown(std::chrono::system_clock::now()); }

void Server::RequestCall(int q) {
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return;
    ++live_calls_;
  }
  (new ServerCall(this, q))->Request();
}

void Server::CallGone() {
  absl::MutexLock l(&mu_);
  --live_calls_;
}

void Server::Shutdown(std::chrono::system_clock::time_point deadline) {
  {
    absl::MutexLock l(&mu_);
    if (shut_down_ || server_ == nullptr) return;
    shut_down_ = true;
  }
  server_->Shutdown(deadline);
  server_->Wait();
  // The slots still waiting complete (not ok) on the loop.
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](int* live) { return *live == 0; }, &live_calls_));
}

}  // namespace tessera::rpc
