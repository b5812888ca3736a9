// TLS for Tessera's gRPC port (docs/security.md): the files a node is started with
// (--tls-cert, --tls-key, --tls-ca), read and checked once, and the gRPC credentials made from
// them for the server, for the node's calls to other nodes, and for clients.
//
// The model:
//   * One cluster CA signs every node's certificate. A node serves TLS with its certificate and
//     asks each client for a certificate, verified against the CA when one is presented
//     (GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY): Bigtable clients connect with the CA
//     only, while nodes present their own certificate to each other (mutual TLS).
//   * Node-to-node services (gossip, replication) are admitted only for a caller whose
//     certificate the handshake verified (PeerCertificateGate): a process without a
//     certificate signed by the cluster CA cannot join, gossip or replicate, whatever cluster
//     name it claims.
//   * Without TLS files the port is plaintext, as the emulator's; server.cc warns loudly when
//     such a node listens on an address other than loopback.
//
// Thread-safety: the functions are pure; the gate is immutable after construction.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "tessera/rpc/server.h"
#include "tessera/util/status.h"

namespace tessera::rpc {

// The files as the flags name them; all empty: no TLS.
struct TlsFiles {
  std::string cert_file;  // the node's certificate chain (PEM)
  std::string key_file;   // its private key (PEM)
  std::string ca_file;    // the cluster CA's certificate(s) (PEM)

  bool empty() const { return cert_file.empty() && key_file.empty() && ca_file.empty(); }
};

// The files' contents.
struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string ca_pem;
};

// Reads and checks the three files: all three are needed together (InvalidArgument naming
// what is missing: a certificate without its key, no CA to verify peers with); each must exist
// and hold the PEM block it should (InvalidArgument naming the flag and the file).
StatusOr<TlsMaterial> LoadTls(const TlsFiles& files);

// Reads one PEM file for `flag` ("--tls-ca"), checking that it holds a "-----BEGIN <what>"
// block (`what` "CERTIFICATE", or "PRIVATE KEY" which also matches "RSA PRIVATE KEY" and
// "EC PRIVATE KEY").
StatusOr<std::string> ReadPemFile(const std::string& flag, const std::string& path,
                                  const std::string& what);

// The server's credentials: plaintext for null, else TLS with the node's certificate, asking
// clients for a certificate and verifying any one presented against the CA.
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const TlsMaterial* tls);
// A node's credentials towards other nodes: plaintext for null, else TLS verifying the peer
// against the CA and presenting the node's own certificate.
std::shared_ptr<grpc::ChannelCredentials> PeerCredentialsFor(const TlsMaterial* tls);
// A client's credentials: plaintext for an empty `ca_pem`, else TLS verifying the server
// against it (no client certificate).
std::shared_ptr<grpc::ChannelCredentials> ClientCredentialsFor(const std::string& ca_pem);

// Credentials towards etcd's client port (`tessera serve --etcd-tls-ca/-cert/-key`): TLS
// verifying etcd against `ca_file`, presenting `cert_file`/`key_file` when given (both or
// neither). InvalidArgument naming the flag and file for a missing or malformed file, or a
// certificate without its key.
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> EtcdCredentials(const std::string& ca_file,
                                                                    const std::string& cert_file,
                                                                    const std::string& key_file);

// Admits calls of `services` (full service names) only from callers whose certificate the
// TLS handshake verified against the CA; UNAUTHENTICATED naming the service otherwise. Calls
// of other services pass.
class PeerCertificateGate final : public CallGate {
 public:
  explicit PeerCertificateGate(std::set<std::string, std::less<>> services)
      : services_(std::move(services)) {}
  grpc::Status Admit(ServerContext& context) override;

 private:
  const std::set<std::string, std::less<>> services_;
};

}  // namespace tessera::rpc
