#include "tessera/rpc/tls.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "grpcpp/security/server_credentials.h"

namespace tessera::rpc {

StatusOr<std::string> ReadPemFile(const std::string& flag, const std::string& path,
                                  const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(StrCat(flag, ": cannot read ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string pem = text.str();
  const bool found = what == "PRIVATE KEY"
                         ? pem.find("-----BEGIN") != std::string::npos &&
                               pem.find("PRIVATE KEY-----") != std::string::npos
                         : pem.find("-----BEGIN " + what + "-----") != std::string::npos;
  if (!found) {
    return absl::InvalidArgumentError(
        StrCat(flag, ": ", path, " holds no PEM ", what, " (\"-----BEGIN ", what, "\")"));
  }
  return pem;
}

StatusOr<TlsMaterial> LoadTls(const TlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(files.cert_file.empty()
                                          ? "--tls-key needs --tls-cert (the key's certificate)"
                                          : "--tls-cert needs --tls-key (its private key)");
  }
  if (files.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-ca needs --tls-cert and --tls-key: a node serves TLS with its own certificate");
  }
  if (files.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert needs --tls-ca: the cluster CA that node and client certificates are "
        "verified against");
  }
  TlsMaterial tls;
  ASSIGN_OR_RETURN(tls.cert_pem, ReadPemFile("--tls-cert", files.cert_file, "CERTIFICATE"));
  ASSIGN_OR_RETURN(tls.key_pem, ReadPemFile("--tls-key", files.key_file, "PRIVATE KEY"));
  ASSIGN_OR_RETURN(tls.ca_pem, ReadPemFile("--tls-ca", files.ca_file, "CERTIFICATE"));
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const TlsMaterial* tls) {
  if (tls == nullptr) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls->ca_pem;
  options.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  return grpc::SslServerCredentials(options);
}

namespace {

// TLS towards a server verified against `ca_pem`, presenting `cert_pem` with its key when given.
std::shared_ptr<grpc::ChannelCredentials> Ssl(std::string ca_pem, std::string key_pem = "",
                                              std::string cert_pem = "") {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = std::move(ca_pem);
  options.pem_private_key = std::move(key_pem);
  options.pem_cert_chain = std::move(cert_pem);
  return grpc::SslCredentials(options);
}

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> PeerCredentialsFor(const TlsMaterial* tls) {
  if (tls == nullptr) return grpc::InsecureChannelCredentials();
  return Ssl(tls->ca_pem, tls->key_pem, tls->cert_pem);
}

std::shared_ptr<grpc::ChannelCredentials> ClientCredentialsFor(const std::string& ca_pem) {
  if (ca_pem.empty()) return grpc::InsecureChannelCredentials();
  return Ssl(ca_pem);
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> EtcdCredentials(const std::string& ca_file,
                                                                    const std::string& cert_file,
                                                                    const std::string& key_file) {
  if (ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--etcd-tls-cert and --etcd-tls-key need --etcd-tls-ca (the CA etcd is verified against)");
  }
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError(cert_file.empty() ? "--etcd-tls-key needs --etcd-tls-cert"
                                                        : "--etcd-tls-cert needs --etcd-tls-key");
  }
  ASSIGN_OR_RETURN(std::string ca, ReadPemFile("--etcd-tls-ca", ca_file, "CERTIFICATE"));
  std::string cert, key;
  if (!cert_file.empty()) {
    ASSIGN_OR_RETURN(cert, ReadPemFile("--etcd-tls-cert", cert_file, "CERTIFICATE"));
    ASSIGN_OR_RETURN(key, ReadPemFile("--etcd-tls-key", key_file, "PRIVATE KEY"));
  }
  return Ssl(std::move(ca), std::move(key), std::move(cert));
}

grpc::Status PeerCertificateGate::Admit(ServerContext& context) {
  const std::string& method = context.method();
  const size_t slash = method.rfind('/');
  if (slash == std::string::npos || slash == 0) return grpc::Status::OK;
  const std::string_view service = std::string_view(method).substr(1, slash - 1);
  if (services_.find(service) == services_.end()) return grpc::Status::OK;
  if (context.peer_certificate_verified()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      StrCat(service, " is for the cluster's nodes: the caller ", context.peer(),
                             " presented no certificate signed by the cluster CA"));
}

}  // namespace tessera::rpc
