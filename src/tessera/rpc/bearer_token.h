// Client channels that send a bearer token (docs/auth.md): every call made on the channel
// carries metadata `authorization: Bearer <token>`, what a node started with --auth asks for and
// what the official Bigtable clients send. Done with a client interceptor, so that it works on
// plaintext channels too (gRPC's call credentials refuse to travel without TLS; tokens should
// not either, but a node on 127.0.0.1 may use --auth without TLS).
//
// Thread-safety: the channels are gRPC's, safe for concurrent calls.
#pragma once

#include <memory>
#include <string>

#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace tessera::rpc {

// A channel to `target` with `credentials` and `args`; calls carry `token` as a bearer token
// unless it is empty.
std::shared_ptr<grpc::Channel> CreateChannelWithToken(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const grpc::ChannelArguments& args, const std::string& token);

}  // namespace tessera::rpc
