// Making gRPC calls on a Loop (loop.h; docs/rpc.md): unary calls with a callback, and
// bidirectional streams driven by a reactor of the callback API's shape.
//
// CallUnary(loop, stub, "/package.Service/Method", context, request, response, done): starts
// the call and returns; `done(status)` runs once on a loop thread when it ends, after
// `*response` was filled (OK) — a response that does not parse is INTERNAL. `context` and
// `response` must live until `done` runs; `request` is serialized before CallUnary returns.
//
// ClientBidiReactor<Req, Resp>: Start(stub, method, context, loop) binds the reactor to a new
// call; StartRead / StartWrite / StartWritesDone may be called before StartCall (they are
// issued when it is); OnReadDone(ok), OnWriteDone(ok), OnWritesDoneDone(ok) report them, and
// OnDone(status) comes last, once the call has ended, every operation has completed and every
// hold is released — the reactor may delete itself there, and the ClientContext (which must
// live until then) may go with it: gRPC's objects of the call are released before OnDone.
// One read and one write outstanding at a time. The call's end is learned from a read that fails, so a reactor keeps a read
// outstanding until one does (or cancels the call with context->TryCancel()). AddHold /
// RemoveHold keep OnDone from running while another thread may still start an operation.
// Reactions run on a loop thread, one at a time for one call; the Start* methods may be called
// from any thread. A message from the server that does not parse cancels the call (INTERNAL
// is not reported: the status is gRPC's, usually CANCELLED).
//
// Thread-safety: as above; a stub (grpc::GenericStub) is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/client_context.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"
#include "tessera/rpc/loop.h"

namespace tessera::rpc {

void CallUnary(Loop* loop, grpc::GenericStub* stub, const std::string& method,
               grpc::ClientContext* context, const google::protobuf::MessageLite& request,
               google::protobuf::MessageLite* response, std::function<void(grpc::Status)> done);

// The untyped call behind ClientBidiReactor.
class ClientStream {
 public:
  virtual ~ClientStream() = default;

  void Start(grpc::GenericStub* stub, const std::string& method, grpc::ClientContext* context,
             Loop* loop);
  void StartCall();
  void AddHold();
  void RemoveHold();

 protected:
  ClientStream() = default;
  void Read(google::protobuf::MessageLite* into);
  void Write(const google::protobuf::MessageLite& message);
  void WritesDone();

  virtual void ReadDone(bool ok) = 0;
  virtual void WriteDone(bool ok) = 0;
  virtual void WritesDoneDone(bool ok) = 0;
  virtual void Done(const grpc::Status& status) = 0;

 private:
  void OnStarted(bool ok);
  void OnRead(bool ok);
  void OnWrite(bool ok);
  void OnWritesDone(bool ok);
  void OnFinish(bool ok);
  // Issues what was asked before StartCall. REQUIRES: started.
  void IssueBacklog();
  // An operation completed, a hold was released, or Finish completed; runs Done if that was
  // the last thing outstanding.
  enum class Settled { kOp, kHold, kFinish };
  void Settle(Settled what);

  grpc::ClientContext* context_ = nullptr;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  grpc::ByteBuffer read_buffer_;
  grpc::ByteBuffer write_buffer_;
  grpc::Status status_;

  MemberTag<ClientStream, &ClientStream::OnStarted> start_tag_{this};
  MemberTag<ClientStream, &ClientStream::OnRead> read_tag_{this};
  MemberTag<ClientStream, &ClientStream::OnWrite> write_tag_{this};
  MemberTag<ClientStream, &ClientStream::OnWritesDone> writes_done_tag_{this};
  MemberTag<ClientStream, &ClientStream::OnFinish> finish_tag_{this};

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;        // StartCall was called
  bool start_pending_ ABSL_GUARDED_BY(mu_) = false;  // its operation is in flight
  google::protobuf::MessageLite* read_into_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool read_wanted_ ABSL_GUARDED_BY(mu_) = false;  // asked before StartCall
  bool write_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_wanted_ ABSL_GUARDED_BY(mu_) = false;
  int ops_ ABSL_GUARDED_BY(mu_) = 0;  // the start, reads, writes and writes-done outstanding
  int holds_ ABSL_GUARDED_BY(mu_) = 0;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // Finish issued (a read failed)
  bool finished_ ABSL_GUARDED_BY(mu_) = false;   // and completed
  bool over_ ABSL_GUARDED_BY(mu_) = false;
};

template <typename Request, typename Response>
class ClientBidiReactor : public ClientStream {
 public:
  void StartRead(Response* into) { Read(into); }
  // `*request` is serialized before this returns.
  void StartWrite(const Request* request) { Write(*request); }
  void StartWritesDone() { WritesDone(); }

  virtual void OnReadDone(bool /*ok*/) {}
  virtual void OnWriteDone(bool /*ok*/) {}
  virtual void OnWritesDoneDone(bool /*ok*/) {}
  virtual void OnDone(const grpc::Status& status) = 0;

 private:
  void ReadDone(bool ok) final { OnReadDone(ok); }
  void WriteDone(bool ok) final { OnWriteDone(ok); }
  void WritesDoneDone(bool ok) final { OnWritesDoneDone(ok); }
  void Done(const grpc::Status& status) final { OnDone(status); }
};

}  // namespace tessera::rpc
