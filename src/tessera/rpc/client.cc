#include "tessera/rpc/client.h"

#include <utility>

#include "tessera/rpc/codec.h"

namespace tessera::rpc {

namespace {

using google::protobuf::MessageLite;
using internal::Parse;
using internal::Serialize;

// One unary call: deletes itself once `done` has run.
class UnaryCall final : public Tag {
 public:
  UnaryCall(MessageLite* response, std::function<void(grpc::Status)> done)
      : response_(response), done_(std::move(done)) {}

  void Start(Loop* loop, grpc::GenericStub* stub, const std::string& method,
             grpc::ClientContext* context, const MessageLite& request) {
    Serialize(request, &request_buffer_);
    call_ = stub->PrepareUnaryCall(context, method, request_buffer_, loop->NextQueue());
    call_->StartCall();
    call_->Finish(&response_buffer_, &status_, this);
  }

  void Complete(bool /*ok*/) override {
    if (status_.ok() && !Parse(&response_buffer_, response_)) {
      status_ = grpc::Status(grpc::StatusCode::INTERNAL, "the response does not parse");
    }
    // The reader lives in the call's arena, which the ClientContext frees: it goes before
    // `done_` may destroy the context.
    call_.reset();
    done_(status_);
    delete this;
  }

 private:
  MessageLite* const response_;
  const std::function<void(grpc::Status)> done_;
  grpc::ByteBuffer request_buffer_;
  grpc::ByteBuffer response_buffer_;
  grpc::Status status_;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call_;
};

}  // namespace

void CallUnary(Loop* loop, grpc::GenericStub* stub, const std::string& method,
               grpc::ClientContext* context, const MessageLite& request, MessageLite* response,
               std::function<void(grpc::Status)> done) {
  (new UnaryCall(response, std::move(done)))->Start(loop, stub, method, context, request);
}

// --- ClientStream -----------------------------------------------------------------------------

void ClientStream::Start(grpc::GenericStub* stub, const std::string& method,
                         grpc::ClientContext* context, Loop* loop) {
  context_ = context;
  call_ = stub->PrepareCall(context, method, loop->NextQueue());
}

// gRPC's async stream sends the initial metadata with the same operation set as a write, so no
// write may be issued while the start is in flight. A write asked for before StartCall goes
// with the metadata (corked: no start operation of its own); one asked for while the start is
// in flight waits for it.
void ClientStream::StartCall() {
  bool cork = false;
  {
    absl::MutexLock l(&mu_);
    started_ = true;
    cork = write_wanted_;
    if (!cork) {
      ++ops_;
      start_pending_ = true;
    }
  }
  if (cork) context_->set_initial_metadata_corked(true);
  call_->StartCall(&start_tag_);  // corked: the tag is never used
  IssueBacklog();
}

void ClientStream::IssueBacklog() {
  bool read = false, write = false, writes_done = false;
  {
    absl::MutexLock l(&mu_);
    std::swap(read, read_wanted_);
    if (!start_pending_) {
      std::swap(write, write_wanted_);
      std::swap(writes_done, writes_done_wanted_);
    }
  }
  if (read) call_->Read(&read_buffer_, &read_tag_);
  if (write) call_->Write(write_buffer_, &write_tag_);
  if (writes_done) call_->WritesDone(&writes_done_tag_);
}

void ClientStream::AddHold() {
  absl::MutexLock l(&mu_);
  ++holds_;
}

void ClientStream::RemoveHold() { Settle(Settled::kHold); }

void ClientStream::Read(MessageLite* into) {
  {
    absl::MutexLock l(&mu_);
    ++ops_;
    read_into_ = into;
    if (!started_) {
      read_wanted_ = true;
      return;
    }
  }
  call_->Read(&read_buffer_, &read_tag_);
}

void ClientStream::Write(const MessageLite& message) {
  Serialize(message, &write_buffer_);
  {
    absl::MutexLock l(&mu_);
    ++ops_;
    if (!started_ || start_pending_) {
      write_wanted_ = true;
      return;
    }
  }
  call_->Write(write_buffer_, &write_tag_);
}

void ClientStream::WritesDone() {
  {
    absl::MutexLock l(&mu_);
    ++ops_;
    if (!started_ || start_pending_) {
      writes_done_wanted_ = true;
      return;
    }
  }
  call_->WritesDone(&writes_done_tag_);
}

void ClientStream::OnStarted(bool /*ok*/) {
  {
    absl::MutexLock l(&mu_);
    start_pending_ = false;
  }
  IssueBacklog();  // the writes asked for meanwhile
  Settle(Settled::kOp);
}

void ClientStream::OnRead(bool ok) {
  MessageLite* into = nullptr;
  {
    absl::MutexLock l(&mu_);
    into = read_into_;
  }
  if (ok && !Parse(&read_buffer_, into)) ok = false;
  if (!ok) {
    bool finish = false;
    {
      absl::MutexLock l(&mu_);
      finish = !finishing_;
      finishing_ = true;
    }
    // The server is done (or the call broke): learn its status.
    if (finish) call_->Finish(&status_, &finish_tag_);
  }
  ReadDone(ok);
  Settle(Settled::kOp);
}

void ClientStream::OnWrite(bool ok) {
  WriteDone(ok);
  Settle(Settled::kOp);
}

void ClientStream::OnWritesDone(bool ok) {
  WritesDoneDone(ok);
  Settle(Settled::kOp);
}

void ClientStream::OnFinish(bool /*ok*/) { Settle(Settled::kFinish); }

// The change and the decision to end are one critical section: between two, another thread
// could end the stream and its reactor could free it.
void ClientStream::Settle(Settled what) {
  {
    absl::MutexLock l(&mu_);
    switch (what) {
      case Settled::kOp:
        --ops_;
        break;
      case Settled::kHold:
        --holds_;
        break;
      case Settled::kFinish:
        finished_ = true;
        break;
    }
    if (!finished_ || ops_ != 0 || holds_ != 0 || over_) return;
    over_ = true;
  }
  // The stream object lives in the call's arena, which the ClientContext frees: it goes before
  // Done lets the reactor (or whoever owns the context) destroy the context.
  call_.reset();
  Done(status_);
}

}  // namespace tessera::rpc
