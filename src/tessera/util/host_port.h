// HOST:PORT endpoints as flags, config files and peers give them. One parser for every place
// that accepts one: serve's --listen, --advertise, --seeds and --lock-service, the --endpoint /
// --addr of shell, bench and admin, and the lock-service opener (coord/open_lock_service.h).
//
//   HOST  a host name or IPv4 address (letters, digits, '.', '-', '_'), or an IPv6 address in
//         brackets ("[::1]"); never empty
//   PORT  decimal digits, 1..65535; 0 as well where it means "pick a free port" (PortZero)
//
// Errors are InvalidArgument and quote the text, e.g.
//   port 99999 in "127.0.0.1:99999" is out of range (0..65535)
// so that a caller only prepends where the text came from ("--listen: ...").
//
// Thread-safety: values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera {

// Whether port 0 is accepted: it is for addresses to listen on, where it picks a free port.
enum class PortZero { kRefused, kPicksFreePort };

struct HostPort {
  std::string host;  // without brackets for IPv6
  int port = 0;      // 0 only if parsed with PortZero::kPicksFreePort

  bool is_ipv6() const { return host.find(':') != std::string::npos; }
  // "host:port", IPv6 hosts in brackets: text ParseHostPort reads back to the same value.
  std::string ToString() const;
};

StatusOr<HostPort> ParseHostPort(std::string_view text, PortZero zero = PortZero::kRefused);

// A comma-separated list of HOST:PORT ("h1:1,h2:2"); blanks around entries are ignored, empty
// entries and an empty list are errors.
StatusOr<std::vector<HostPort>> ParseHostPortList(std::string_view text,
                                                  PortZero zero = PortZero::kRefused);

}  // namespace tessera
