// Serving gRPC calls on a Loop (loop.h; docs/rpc.md): Services, a registry of methods by name,
// the reactors a method's handler returns, and Server, which serves the registry through gRPC's
// asynchronous generic service.
//
// A handler gets the call's ServerContext and returns the reactor that drives the call — the
// shape of gRPC's callback API, without its threads:
//
//   unary             UnaryReactor* (ServerContext*, const Req*, Resp*)
//                     Finish(status) sends *Resp when status is OK. context->DefaultReactor()
//                     is one that does nothing else.
//   server streaming  WriteReactor<Resp>* (ServerContext*, const Req*)
//                     StartWrite / StartWriteAndFinish / Finish; OnWriteDone(ok).
//   bidirectional     BidiReactor<Req, Resp>* (ServerContext*)
//                     also StartRead(Req*) / OnReadDone(ok) (false: the client half-closed,
//                     the call ended, or a message did not parse).
//
// The reactor rules are the callback API's: at most one read and one write outstanding;
// Finish exactly once, also after OnCancel; OnCancel at most once, when the call is cancelled
// (by the client, its deadline, or the server's shutdown), possibly before Finish; OnDone
// last, once Finish and every operation have completed — the reactor may delete itself there,
// and nothing of the call (context, request, response) may be used afterwards. StartRead,
// StartWrite and Finish may be called from any thread, the request and response of a unary
// call belong to the call until OnDone. Reactions (OnReadDone, OnWriteDone, OnCancel, OnDone)
// run on the loop thread of the call's queue, one at a time, except that OnDone may run on
// the thread whose Finish or handler completes the call; they must not block.
//
// Requests and unary responses live in an arena of the call.
//
// A method nobody registered (and any method of a service nobody registered) is answered
// UNIMPLEMENTED naming it, e.g. `CreateBackup (google.bigtable.admin.v2.BigtableTableAdmin) is
// not supported by Tessera`. A request that does not parse is answered INVALID_ARGUMENT.
//
// A CallObserver given to Server::Start hears of every call once it is over (metrics).
//
// Thread-safety: Services is built by one thread, then read-only; Server's methods are
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/byte_buffer.h"
#include "tessera/rpc/loop.h"
#include "tessera/util/executor.h"
#include "tessera/util/status.h"

namespace tessera::rpc {

class ServerReactor;
class UnaryReactor;
class ServerCall;

// The answer to a method nobody serves: "Method (package.Service) is not supported by Tessera".
std::string UnimplementedMessage(std::string_view path);

// One incoming call as its handler and reactor see it.
class ServerContext {
 public:
  // The client's metadata (keys lower case), its deadline (time_point::max() for none), its
  // address, and the method's path ("/package.Service/Method").
  const std::multimap<grpc::string_ref, grpc::string_ref>& client_metadata() const;
  std::chrono::system_clock::time_point deadline() const;
  std::string peer() const;
  const std::string& method() const;
  // True when the caller presented a TLS certificate that the handshake verified against the
  // server's CA (rpc/tls.h); false on a plaintext port.
  bool peer_certificate_verified() const;
  // Who makes the call, as a CallGate authenticated it (a bearer token's principal,
  // docs/auth.md); empty when no gate names one. Set before the handler runs, constant after.
  const std::string& principal() const { return principal_; }
  void set_principal(std::string principal) { principal_ = std::move(principal); }
  // REQUIRES: before Finish, on the thread that calls it.
  void AddTrailingMetadata(const std::string& key, const std::string& value);
  // A unary call's reactor that only finishes it (owned by the call).
  UnaryReactor* DefaultReactor();

 protected:
  ServerContext() = default;
  ~ServerContext() = default;

 private:
  std::string principal_;
};

// What a server tells its observer of each call, once the call is over.
struct CallRecord {
  // The method's index in its Services (Services::path), or -1 for a method nobody serves.
  int method = -1;
  grpc::StatusCode code = grpc::StatusCode::OK;  // CANCELLED if the call was cancelled
  int64_t micros = 0;  // from the call's arrival to its end (steady clock)
  uint64_t messages_received = 0;
  uint64_t messages_sent = 0;
  uint64_t bytes_received = 0;  // serialized messages, without gRPC's framing
  uint64_t bytes_sent = 0;
};

class CallObserver {
 public:
  virtual ~CallObserver() = default;
  // Called on the thread that ends the call, concurrently for different calls; must not block.
  virtual void OnCallEnd(const CallRecord& record) = 0;
};

// What every reactor is. Construct with the handler's context (that binds it to the call).
class ServerReactor {
 public:
  virtual ~ServerReactor() = default;
  virtual void OnCancel() {}
  virtual void OnDone() = 0;
  // Bidirectional calls: the read StartRead asked for.
  virtual void OnReadDone(bool /*ok*/) {}
  // Streaming calls: the write StartWrite asked for.
  virtual void OnWriteDone(bool /*ok*/) {}

 protected:
  explicit ServerReactor(ServerContext* context);
  ServerCall* call() const { return call_; }

 private:
  ServerCall* const call_;
};

// Internal: the operations behind the reactors' Start* methods.
namespace internal {
void StartRead(ServerCall* call, google::protobuf::MessageLite* into);
void StartWrite(ServerCall* call, const google::protobuf::MessageLite& message,
                grpc::WriteOptions options);
void StartWriteAndFinish(ServerCall* call, const google::protobuf::MessageLite& message,
                         grpc::WriteOptions options, grpc::Status status);
void Finish(ServerCall* call, grpc::Status status);
}  // namespace internal

class UnaryReactor : public ServerReactor {
 public:
  explicit UnaryReactor(ServerContext* context) : ServerReactor(context) {}
  // Sends the handler's response when `status` is OK, then the status.
  void Finish(grpc::Status status) { internal::Finish(call(), std::move(status)); }
  void OnDone() override {}
};

template <typename Response>
class WriteReactor : public ServerReactor {
 public:
  explicit WriteReactor(ServerContext* context) : ServerReactor(context) {}
  // `*response` is serialized before this returns.
  void StartWrite(const Response* response, grpc::WriteOptions options = grpc::WriteOptions()) {
    internal::StartWrite(call(), *response, options);
  }
  void StartWriteAndFinish(const Response* response, grpc::WriteOptions options,
                           grpc::Status status) {
    internal::StartWriteAndFinish(call(), *response, options, std::move(status));
  }
  void Finish(grpc::Status status) { internal::Finish(call(), std::move(status)); }
};

template <typename Request, typename Response>
class BidiReactor : public WriteReactor<Response> {
 public:
  explicit BidiReactor(ServerContext* context) : WriteReactor<Response>(context) {}
  // `*into` must stay valid until OnReadDone.
  void StartRead(Request* into) { internal::StartRead(this->call(), into); }
};

// The methods a server serves, by path.
class Services {
 public:
  struct Method {
    enum class Kind { kUnary, kServerStreaming, kBidi };
    Kind kind = Kind::kUnary;
    Executor* executor = nullptr;  // the handler starts here (null: on the loop thread)
    // Unary and server streaming: the request (and unary response) on the call's arena.
    google::protobuf::MessageLite* (*new_request)(google::protobuf::Arena*) = nullptr;
    google::protobuf::MessageLite* (*new_response)(google::protobuf::Arena*) = nullptr;
    std::function<ServerReactor*(ServerContext*, const google::protobuf::MessageLite*,
                                 google::protobuf::MessageLite*)>
        start;
  };

  // Registers `service`.`method` (e.g. "google.bigtable.v2.Bigtable", "MutateRow"), served by
  // `object`'s member function. The method must be declared with these types and this kind in
  // a linked .proto; a mismatch is an error Server::Start reports. `executor`: see Method.
  template <typename T, typename Req, typename Resp>
  void Add(std::string_view service, std::string_view method, T* object,
           UnaryReactor* (T::*fn)(ServerContext*, const Req*, Resp*),
           Executor* executor = nullptr) {
    Method m{.kind = Method::Kind::kUnary,
             .executor = executor,
             .new_request = &New<Req>,
             .new_response = &New<Resp>,
             .start = [object, fn](ServerContext* c, const google::protobuf::MessageLite* req,
                                   google::protobuf::MessageLite* resp) -> ServerReactor* {
               return (object->*fn)(c, static_cast<const Req*>(req), static_cast<Resp*>(resp));
             }};
    Register(service, method, Req::descriptor()->full_name(), Resp::descriptor()->full_name(),
             std::move(m));
  }
  template <typename T, typename Req, typename Resp>
  void Add(std::string_view service, std::string_view method, T* object,
           WriteReactor<Resp>* (T::*fn)(ServerContext*, const Req*),
           Executor* executor = nullptr) {
    Method m{.kind = Method::Kind::kServerStreaming,
             .executor = executor,
             .new_request = &New<Req>,
             .new_response = nullptr,
             .start = [object, fn](ServerContext* c, const google::protobuf::MessageLite* req,
                                   google::protobuf::MessageLite*) -> ServerReactor* {
               return (object->*fn)(c, static_cast<const Req*>(req));
             }};
    Register(service, method, Req::descriptor()->full_name(), Resp::descriptor()->full_name(),
             std::move(m));
  }
  template <typename T, typename Req, typename Resp>
  void Add(std::string_view service, std::string_view method, T* object,
           BidiReactor<Req, Resp>* (T::*fn)(ServerContext*), Executor* executor = nullptr) {
    Method m{.kind = Method::Kind::kBidi,
             .executor = executor,
             .new_request = nullptr,
             .new_response = nullptr,
             .start = [object, fn](ServerContext* c, const google::protobuf::MessageLite*,
                                   google::protobuf::MessageLite*) -> ServerReactor* {
               return (object->*fn)(c);
             }};
    Register(service, method, Req::descriptor()->full_name(), Resp::descriptor()->full_name(),
             std::move(m));
  }

  // The method at `path` ("/package.Service/Method"), or null.
  const Method* Find(std::string_view path) const;
  // The registered methods, numbered 0..size()-1 in registration order (CallRecord::method):
  // the index of the method at `path` (-1: none) and the path of index `i`.
  int IndexOf(std::string_view path) const;
  const std::string& path(int i) const { return paths_[i]; }
  const Method& method(int i) const { return methods_[i]; }
  int size() const { return static_cast<int>(paths_.size()); }
  // The methods `service` declares (in the linked descriptors) that nobody registered.
  std::vector<std::string> Unregistered(std::string_view service) const;
  // What went wrong in registration (empty: nothing).
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  template <typename M>
  static google::protobuf::MessageLite* New(google::protobuf::Arena* arena) {
    return google::protobuf::Arena::CreateMessage<M>(arena);
  }
  void Register(std::string_view service, std::string_view method, const std::string& request,
                const std::string& response, Method m);

  absl::flat_hash_map<std::string, int> index_;  // path -> index in methods_ and paths_
  std::vector<Method> methods_;
  std::vector<std::string> paths_;
  std::vector<std::string> errors_;
};

// Decides, before a call's handler runs, whether its caller may make it (a node's TLS
// certificate, a bearer token: docs/security.md, docs/auth.md). OK lets the call go on; any
// other status ends it with that status and its handler never runs. Both are called on the
// loop thread for every call of a registered method, concurrently: they must not block.
class CallGate {
 public:
  virtual ~CallGate() = default;
  // When the call arrives, before its request is read. May name the caller
  // (ServerContext::set_principal).
  virtual grpc::Status Admit(ServerContext& context) = 0;
  // Once the request of a unary or server-streaming call has parsed (bidirectional calls have
  // no single request): what the request names may decide (a table, an instance).
  virtual grpc::Status AdmitRequest(const ServerContext& /*context*/,
                                    const google::protobuf::MessageLite& /*request*/) {
    return grpc::Status::OK;
  }
};

// Gates asked in order; the first refusal ends the call. Null gates are skipped.
class GateChain final : public CallGate {
 public:
  explicit GateChain(std::vector<CallGate*> gates) : gates_(std::move(gates)) {}
  grpc::Status Admit(ServerContext& context) override;
  grpc::Status AdmitRequest(const ServerContext& context,
                            const google::protobuf::MessageLite& request) override;

 private:
  const std::vector<CallGate*> gates_;
};

// A gRPC server whose calls run on a Loop.
class Server {
 public:
  // Registers the generic service on `builder` (ports and settings already added; the loop
  // made with Loop::ForServer(builder, ...)), builds and starts it, and requests calls on
  // every queue of `loop`. `services`, `loop` and `observer` (may be null) must outlive the
  // server, as must `gate` (may be null: every call is admitted). Fails with the registration
  // errors, or Unavailable when gRPC could not start (a port in use, say).
  static StatusOr<std::unique_ptr<Server>> Start(grpc::ServerBuilder* builder,
                                                 const Services* services, Loop* loop,
                                                 CallObserver* observer = nullptr,
                                                 CallGate* gate = nullptr);
  ~Server();  // Shutdown(now)

  // Stops taking calls; calls still running at `deadline` are cancelled; returns once every
  // call has ended (their reactors finished). The loop must still run. Idempotent.
  void Shutdown(std::chrono::system_clock::time_point deadline);

  grpc::Server* grpc_server() const { return server_.get(); }

 private:
  friend class ServerCall;
  Server(const Services* services, Loop* loop, CallObserver* observer, CallGate* gate)
      : services_(services), loop_(loop), observer_(observer), gate_(gate) {}
  // A request slot on queue `q`: waits for the next call of any method.
  void RequestCall(int q);
  // A slot or call was freed.
  void CallGone();

  const Services* const services_;
  Loop* const loop_;
  CallObserver* const observer_;
  CallGate* const gate_;
  grpc::AsyncGenericService generic_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // Request slots and calls not yet freed: gRPC completes the slots of a server shut down on
  // the loop, and the grpc::Server must live until it has (Shutdown waits for them).
  int live_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::rpc
