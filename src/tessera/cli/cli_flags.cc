#include "tessera/cli/cli_flags.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "tessera/rpc/bearer_token.h"
#include "tessera/rpc/tls.h"
#include "tessera/util/version.h"

namespace tessera::cli {

namespace {

// A boolean switch with a negated spelling ("--inline-reads,!--no-inline-reads").
bool IsSwitchPair(const CLI::Option* opt) {
  return opt->get_expected_min() == 0 && !opt->get_fnames().empty() && !opt->get_lnames().empty();
}

// CLI11's help shows such a switch as "--x,--no-x{false}": the value --no-x sets, which reads
// as the default. This formatter shows the names alone; AddSwitch puts the default in the
// description (CLI11 keeps no default string for flags).
class HelpFormatter final : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    if (is_positional || !IsSwitchPair(opt)) {
      return CLI::Formatter::make_option_name(opt, is_positional);
    }
    std::string out;
    for (const std::string& s : opt->get_snames()) out += (out.empty() ? "-" : ", -") + s;
    for (const std::string& l : opt->get_lnames()) out += (out.empty() ? "--" : ", --") + l;
    return out;
  }
};

}  // namespace

void SetUpCommandLine(CLI::App* app) {
  app->set_version_flag("--version", VersionLine(app->get_name()),
                        "print the version and the commit it was built from, then exit");
  app->formatter(std::make_shared<HelpFormatter>());
}

CLI::Option* AddSwitch(CLI::App* app, const std::string& name, bool* value,
                       const std::string& description) {
  return app->add_flag(StrCat("--", name, ",!--no-", name), *value,
                       StrCat(description, " (default: ", *value ? "on" : "off", ")"));
}

int ExitForParseError(const CLI::App& app, const CLI::ParseError& e, std::ostream& out,
                      std::ostream& err) {
  return app.exit(e, out, err) == static_cast<int>(CLI::ExitCodes::Success) ? 0 : 2;
}

CLI::Validator HostPortCheck(PortZero zero) {
  return CLI::Validator(
      [zero](std::string& value) -> std::string {
        StatusOr<HostPort> hp = ParseHostPort(value, zero);
        return hp.ok() ? std::string() : std::string(hp.status().message());
      },
      "HOST:PORT");
}

Status CheckHostPort(std::string_view where, std::string_view value, PortZero zero) {
  StatusOr<HostPort> hp = ParseHostPort(value, zero);
  if (hp.ok()) return Status();
  return absl::InvalidArgumentError(StrCat(where, ": ", hp.status().message()));
}

namespace {

struct Connection {
  std::string ca_file;  // --tls-ca, or $TESSERA_TLS_CA
  std::string ca_pem;   // its contents once loaded
  std::string token;    // --token, or $TESSERA_TOKEN
};

Connection& GlobalConnection() {
  static Connection* c = new Connection;
  return *c;
}

}  // namespace

void AddConnectionOptions(CLI::App* app) {
  app->add_option("--tls-ca", GlobalConnection().ca_file,
                  "connect with TLS, verifying the server against this CA certificate (PEM; "
                  "default: $TESSERA_TLS_CA; none: plaintext)");
  app->add_option("--token", GlobalConnection().token,
                  "the bearer token to send, for a node started with --auth (default: "
                  "$TESSERA_TOKEN)");
}

Status LoadConnectionOptions() {
  Connection& c = GlobalConnection();
  if (c.token.empty()) {
    if (const char* env = std::getenv("TESSERA_TOKEN"); env != nullptr) c.token = env;
  }
  std::string flag = "--tls-ca";
  if (c.ca_file.empty()) {
    const char* env = std::getenv("TESSERA_TLS_CA");
    if (env == nullptr || *env == '\0') return Status();
    c.ca_file = env;
    flag = "$TESSERA_TLS_CA";
  }
  ASSIGN_OR_RETURN(c.ca_pem, rpc::ReadPemFile(flag, c.ca_file, "CERTIFICATE"));
  return Status();
}

const std::string& TlsCaPem() { return GlobalConnection().ca_pem; }
const std::string& BearerToken() { return GlobalConnection().token; }

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() {
  return rpc::ClientCredentialsFor(TlsCaPem());
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                          const grpc::ChannelArguments& args) {
  return rpc::CreateChannelWithToken(target, ChannelCredentials(), args, BearerToken());
}

}  // namespace tessera::cli
