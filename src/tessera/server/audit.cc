#include "tessera/server/audit.h"

#include <algorithm>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace tessera::server {
namespace {

// Audit lines are written whatever --log-level says (except off): they are the operators'
// record of who did what. A copy of the process's logger (its sinks and format) at info.
template <typename... Args>
void Write(fmt::format_string<Args...> format, Args&&... args) {
  static absl::Mutex mu;
  static std::shared_ptr<spdlog::logger>* cached_default = new std::shared_ptr<spdlog::logger>;
  static std::shared_ptr<spdlog::logger>* audit = new std::shared_ptr<spdlog::logger>;
  std::shared_ptr<spdlog::logger> logger;
  {
    absl::MutexLock l(&mu);
    std::shared_ptr<spdlog::logger> current = spdlog::default_logger();
    if (current->level() == spdlog::level::off) return;
    if (current != *cached_default) {
      *cached_default = current;
      *audit = current->clone("audit");
      (*audit)->set_level(std::min(current->level(), spdlog::level::info));
    }
    logger = *audit;
  }
  logger->info(format, std::forward<Args>(args)...);
}

}  // namespace

void AuditAdmin(std::string_view principal, std::string_view peer, std::string_view action,
                std::string_view target, const Status& result) {
  Write("audit: admin action={} target=\"{}\" principal={} peer={} result={}", action, target,
        principal.empty() ? "-" : principal, peer, result.ok() ? "OK" : result.ToString());
}

void AuditAdmin(const rpc::ServerContext& context, std::string_view action, std::string_view target,
                const Status& result) {
  AuditAdmin(context.principal(), context.peer(), action, target, result);
}

void AuditRefusal(const rpc::ServerContext& context, std::string_view resource,
                  const Status& result) {
  Write("audit: auth action={} principal={} resource={} peer={} result={}", context.method(),
        context.principal().empty() ? "?" : context.principal(), resource.empty() ? "-" : resource,
        context.peer(), absl::StatusCodeToString(result.code()));
}

}  // namespace tessera::server
