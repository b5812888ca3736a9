#include "tessera/util/host_port.h"

#include <arpa/inet.h>

#include <algorithm>

namespace tessera {

namespace {

constexpr int kMaxPort = 65535;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '-' || c == '_';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("\"", text, "\" is not HOST:PORT: ", why));
}

}  // namespace

std::string HostPort::ToString() const {
  return is_ipv6() ? StrCat("[", host, "]:", port) : StrCat(host, ":", port);
}

StatusOr<HostPort> ParseHostPort(std::string_view text, PortZero zero) {
  if (text.empty()) return Bad(text, "it is empty");
  HostPort out;
  std::string_view port;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Bad(text, "the IPv6 address has no closing ']'");
    const std::string inside(text.substr(1, close - 1));
    in6_addr addr{};
    if (inside.empty() || inet_pton(AF_INET6, inside.c_str(), &addr) != 1) {
      return Bad(text, StrCat("\"", inside, "\" is not an IPv6 address"));
    }
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return Bad(text, "there is no :PORT after the address");
    }
    out.host = inside;
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Bad(text, "there is no :PORT");
    const std::string_view host = text.substr(0, colon);
    in6_addr addr{};
    if (host.find(':') != std::string_view::npos &&
        inet_pton(AF_INET6, std::string(host).c_str(), &addr) == 1) {
      return Bad(text, StrCat("an IPv6 address needs brackets, as in [", host, "]:",
                              text.substr(colon + 1)));
    }
    if (host.empty()) return Bad(text, "the host is empty");
    if (!std::all_of(host.begin(), host.end(), IsNameChar)) {
      return Bad(text, StrCat("\"", host, "\" is not a host name or address"));
    }
    out.host = std::string(host);
    port = text.substr(colon + 1);
  }
  if (port.empty()) return Bad(text, "the port is empty");
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(),
                                      [](char c) { return c >= '0' && c <= '9'; })) {
    return Bad(text, StrCat("port \"", port, "\" is not a number in 0..", kMaxPort));
  }
  int value = 0;
  for (char c : port) value = value * 10 + (c - '0');
  if (value > kMaxPort) {
    return Bad(text, StrCat("port ", value, " is out of range (",
                            zero == PortZero::kPicksFreePort ? 0 : 1, "..", kMaxPort, ")"));
  }
  if (value == 0 && zero == PortZero::kRefused) {
    return Bad(text, StrCat("port 0 names no port here (1..", kMaxPort,
                            "; only a listen address may pick a free port)"));
  }
  out.port = value;
  return out;
}

StatusOr<std::vector<HostPort>> ParseHostPortList(std::string_view text, PortZero zero) {
  std::vector<HostPort> out;
  if (Trim(text).empty()) return Bad(text, "the list is empty");
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view entry = Trim(text.substr(start, comma - start));
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          StrCat("\"", text, "\" is not a list of HOST:PORT: an entry is empty"));
    }
    ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(entry, zero));
    out.push_back(std::move(hp));
    start = comma + 1;
  }
  return out;
}

}  // namespace tessera
