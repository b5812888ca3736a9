// What every `tessera` subcommand's command line shares (commands.h): `--version`, help text
// that shows the real default of `--x,!--no-x` switches, exit status 2 for usage errors, and
// the HOST:PORT check of address flags (one parser: util/host_port.h).
//
// Thread-safety: call from the thread that parses the command line.
#pragma once

#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "tessera/util/host_port.h"
#include "tessera/util/status.h"

namespace tessera::cli {

// Adds --version (prints VersionLine(app->get_name()), exits 0) and the help formatter that
// shows a `--x,!--no-x` switch as "--x, --no-x" (CLI11 shows "--x,--no-x{false}", which reads
// as "off by default").
// REQUIRES: called before subcommands are added (they inherit the formatter).
void SetUpCommandLine(CLI::App* app);

// Adds the switch "--<name>,!--no-<name>" bound to *value, its description ending in
// "(default: on)" or "(default: off)" after *value as it is now. `value` must outlive `app`.
CLI::Option* AddSwitch(CLI::App* app, const std::string& name, bool* value,
                       const std::string& description);

// The exit status after app.parse() threw `e`, once CLI11 has printed the help, the version
// or the error (with its "Run with --help" hint): 0 for --help and --version, 2 for every
// usage error (commands.h's convention; CLI11's own codes are 105, 106, 109, ...).
int ExitForParseError(const CLI::App& app, const CLI::ParseError& e,
                      std::ostream& out = std::cout, std::ostream& err = std::cerr);

// A validator for address flags: the value must be HOST:PORT (ParseHostPort, `zero` as
// there). CLI11 puts the flag's name in front of the message:
//   --listen: "127.0.0.1:99999" is not HOST:PORT: port 99999 is out of range (0..65535)
CLI::Validator HostPortCheck(PortZero zero = PortZero::kRefused);

// The same check for an address that did not come from a flag: `where` names its source
// ("$BIGTABLE_EMULATOR_HOST") in front of the parser's message.
Status CheckHostPort(std::string_view where, std::string_view value,
                     PortZero zero = PortZero::kRefused);

// How the commands that call a server (shell, admin, bench) connect:
//   --tls-ca FILE (default $TESSERA_TLS_CA): TLS, verifying the server against this CA; none
//     means plaintext;
//   --token TOKEN (default $TESSERA_TOKEN): a bearer token sent with every call, for a node
//     started with --auth (docs/auth.md).
// AddConnectionOptions adds the flags to `app`; LoadConnectionOptions, after parsing, reads the
// CA file (InvalidArgument naming it when it cannot be read or holds no certificate); then
// every channel of the command is made with NewChannel. Process-wide state: a command line is
// parsed once.
void AddConnectionOptions(CLI::App* app);
Status LoadConnectionOptions();
const std::string& TlsCaPem();
const std::string& BearerToken();
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials();
std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                          const grpc::ChannelArguments& args = {});

}  // namespace tessera::cli
