#include "tessera/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "prometheus/exposer.h"
#include "tessera/util/host_port.h"

namespace tessera::metrics {

StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(
    const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
    int threads) {
  StatusOr<HostPort> at = ParseHostPort(listen, PortZero::kPicksFreePort);
  if (!at.ok()) {
    return absl::InvalidArgumentError(
        StrCat("HTTP listen address \"", listen, "\": ", at.status().message()));
  }
  std::unique_ptr<HttpExporter> exporter(new HttpExporter);
  try {
    // civetweb: "HOST:PORT", an IPv6 host in brackets (as HostPort writes it).
    exporter->exposer_ = std::make_unique<prometheus::Exposer>(at->ToString(),
                                                               static_cast<size_t>(threads));
  } catch (const std::exception& e) {
    return absl::UnavailableError(StrCat("cannot serve HTTP on ", at->ToString(), ": ", e.what()));
  }
  for (auto& c : collectables) exporter->exposer_->RegisterCollectable(c);
  const std::vector<int> ports = exporter->exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(StrCat("cannot serve HTTP on ", at->ToString()));
  }
  exporter->port_ = ports.front();
  HostPort bound = *at;
  bound.port = exporter->port_;
  exporter->address_ = bound.ToString();
  return exporter;
}

// civetweb's listener polls with a 2 s timeout and looks at its stop flag only between polls,
// so stopping it waits up to 2 s — per server, in every test that starts one. Connections to
// the port wake the poll: they are made until the stop is done, then closed unanswered.
HttpExporter::~HttpExporter() {
  if (exposer_ == nullptr) return;
  std::atomic<bool> stopped{false};
  StatusOr<HostPort> at = ParseHostPort(address_);
  std::thread waker([&] {
    if (!at.ok()) return;
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (at->is_ipv6()) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons(static_cast<uint16_t>(port_));
      if (inet_pton(AF_INET6, at->host.c_str(), &a6->sin6_addr) != 1) a6->sin6_addr = in6addr_loopback;
      len = sizeof(sockaddr_in6);
    } else {
      auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
      a4->sin_family = AF_INET;
      a4->sin_port = htons(static_cast<uint16_t>(port_));
      if (inet_pton(AF_INET, at->host.c_str(), &a4->sin_addr) != 1 ||
          a4->sin_addr.s_addr == htonl(INADDR_ANY)) {
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      }
      len = sizeof(sockaddr_in);
    }
    // Bounded: the stop ends within civetweb's 2 s poll whether or not a connection helps.
    for (int i = 0; i < 200 && !stopped.load(); ++i) {
      const int fd = ::socket(addr.ss_family, SOCK_STREAM, 0);
      if (fd >= 0) {
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

}  // namespace tessera::metrics
