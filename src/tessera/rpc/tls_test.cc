// rpc/tls.h with real TLS: a CA, a node certificate and a stranger's certificate (another
// CA) made with the openssl command; a server on 127.0.0.1 with the node's credentials and the
// gate on tessera.v1.Replica.
#include "tessera/rpc/tls.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tessera/rpc/loop.h"
#include "tessera/v1/replica.grpc.pb.h"

namespace tessera::rpc {
namespace {

namespace v2 = ::google::bigtable::v2;
namespace v1 = ::tessera::v1;

// A folder of test certificates: ca (the cluster's), node (signed by ca, for 127.0.0.1),
// other (another CA) and stranger (signed by other).
class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/tessera-tls-test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::ofstream(path("ext")) << "subjectAltName=IP:127.0.0.1\n"
                                  "extendedKeyUsage=serverAuth,clientAuth\n";
    ok_ = Ca("ca") && Ca("other") && Cert("ca", "node") && Cert("other", "stranger");
  }
  ~Certs() { std::filesystem::remove_all(dir_); }
  bool ok() const { return ok_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  TlsFiles files(const std::string& name, const std::string& ca) const {
    return TlsFiles{path(name + ".pem"), path(name + ".key"), path(ca + ".pem")};
  }

 private:
  bool Run(const std::string& command) const {
    return std::system(("cd " + dir_ + " && " + command + " >/dev/null 2>&1").c_str()) == 0;
  }
  bool Ca(const std::string& name) const {
    return Run(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-days 2 -subj /CN=" +
        name + " -keyout " + name + ".key -out " + name + ".pem");
  }
  bool Cert(const std::string& ca, const std::string& name) const {
    return Run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" +
               name + " -keyout " + name + ".key -out " + name + ".csr") &&
           Run("openssl x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
               ".key -CAcreateserial -days 2 -extfile ext -out " + name + ".pem");
  }
  std::string dir_;
  bool ok_ = false;
};

class Service {
 public:
  void Register(Services* s) {
    s->Add("google.bigtable.v2.Bigtable", "PingAndWarm", this, &Service::Ping);
    s->Add("tessera.v1.Replica", "Call", this, &Service::Call);
  }
  UnaryReactor* Ping(ServerContext* c, const v2::PingAndWarmRequest*, v2::PingAndWarmResponse*) {
    UnaryReactor* r = c->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
  UnaryReactor* Call(ServerContext* c, const v1::ReplicaCall*, v1::ReplicaReply*) {
    UnaryReactor* r = c->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!certs_.ok()) GTEST_SKIP() << "openssl could not make the test certificates";
    StatusOr<TlsMaterial> tls = LoadTls(certs_.files("node", "ca"));
    ASSERT_TRUE(tls.ok()) << tls.status();
    tls_ = *tls;
    service_.Register(&services_);
    builder_ = std::make_unique<grpc::ServerBuilder>();
    loop_ = Loop::ForServer(builder_.get(), 1);
    builder_->AddListeningPort("127.0.0.1:0", ServerCredentialsFor(&tls_), &port_);
    StatusOr<std::unique_ptr<Server>> server =
        Server::Start(builder_.get(), &services_, loop_.get(), nullptr, &gate_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    if (loop_ != nullptr) loop_->Shutdown();
  }

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  grpc::Status Ping(std::shared_ptr<grpc::ChannelCredentials> creds) {
    auto stub = v2::Bigtable::NewStub(grpc::CreateChannel(target(), creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v2::PingAndWarmResponse resp;
    return stub->PingAndWarm(&ctx, v2::PingAndWarmRequest(), &resp);
  }
  grpc::Status Replicate(std::shared_ptr<grpc::ChannelCredentials> creds) {
    auto stub = v1::Replica::NewStub(grpc::CreateChannel(target(), creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ReplicaReply resp;
    return stub->Call(&ctx, v1::ReplicaCall(), &resp);
  }

  Certs certs_;
  TlsMaterial tls_;
  Service service_;
  Services services_;
  PeerCertificateGate gate_{{"tessera.v1.Replica"}};
  std::unique_ptr<grpc::ServerBuilder> builder_;
  std::unique_ptr<Loop> loop_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

TEST_F(TlsTest, ClientsNeedTheCaAndOnlyNodesReachNodeServices) {
  // A client with the CA: the Bigtable API works, the node-to-node service is refused.
  EXPECT_TRUE(Ping(ClientCredentialsFor(tls_.ca_pem)).ok());
  grpc::Status s = Replicate(ClientCredentialsFor(tls_.ca_pem));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_NE(s.error_message().find("tessera.v1.Replica is for the cluster's nodes"),
            std::string::npos)
      << s.error_message();
  // A node (its certificate signed by the CA) reaches both.
  EXPECT_TRUE(Replicate(PeerCredentialsFor(&tls_)).ok());
  EXPECT_TRUE(Ping(PeerCredentialsFor(&tls_)).ok());
  // Plaintext, or trusting another CA, or presenting another CA's certificate: no handshake.
  EXPECT_EQ(Ping(ClientCredentialsFor("")).error_code(), grpc::StatusCode::UNAVAILABLE);
  StatusOr<std::string> other = ReadPemFile("--tls-ca", certs_.path("other.pem"), "CERTIFICATE");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(Ping(ClientCredentialsFor(*other)).error_code(), grpc::StatusCode::UNAVAILABLE);
  StatusOr<TlsMaterial> stranger = LoadTls(certs_.files("stranger", "ca"));
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_FALSE(Replicate(PeerCredentialsFor(&*stranger)).ok());
}

TEST(TlsFilesTest, MistakesNameTheFlagAndTheFile) {
  EXPECT_EQ(LoadTls(TlsFiles{"", "k.key", "ca.pem"}).status().message(),
            "--tls-key needs --tls-cert (the key's certificate)");
  EXPECT_EQ(LoadTls(TlsFiles{"c.pem", "", "ca.pem"}).status().message(),
            "--tls-cert needs --tls-key (its private key)");
  EXPECT_NE(LoadTls(TlsFiles{"c.pem", "k.key", ""}).status().message().find("needs --tls-ca"),
            std::string::npos);
  EXPECT_NE(LoadTls(TlsFiles{"", "", "ca.pem"}).status().message().find("--tls-ca needs"),
            std::string::npos);
  EXPECT_EQ(LoadTls(TlsFiles{"/no/such.pem", "k.key", "ca.pem"}).status().message(),
            "--tls-cert: cannot read /no/such.pem");
  const std::string text = ::testing::TempDir() + "/tessera-not-a-cert.txt";
  std::ofstream(text) << "hello\n";
  StatusOr<std::string> pem = ReadPemFile("--tls-ca", text, "CERTIFICATE");
  EXPECT_EQ(pem.status().message(),
            "--tls-ca: " + text + " holds no PEM CERTIFICATE (\"-----BEGIN CERTIFICATE\")");
  EXPECT_FALSE(EtcdCredentials("", "c.pem", "k.key").ok());
  EXPECT_EQ(EtcdCredentials(text, "c.pem", "").status().message(),
            "--etcd-tls-cert needs --etcd-tls-key");
}

}  // namespace
}  // namespace tessera::rpc
