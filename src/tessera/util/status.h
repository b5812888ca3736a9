// Error handling: absl::Status / absl::StatusOr everywhere, with a few sharp codes.
//
//   NotFound            the thing asked for does not exist
//   DataLoss            stored bytes are corrupt; never retried; the message names file and offset
//   Unavailable         trouble in the environment (I/O error, no space, closed)
//   InvalidArgument     the caller's mistake
//   FailedPrecondition  a lost race or a call in the wrong state
//   ResourceExhausted   a bound was hit (out of disk space, memory)
//
// RETURN_IF_ERROR(expr) and ASSIGN_OR_RETURN(lhs, expr) propagate errors; the *_CTX variants
// prepend context that a log reader needs.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"

// fmt support for absl::string_view and absl::Status, which Debian's abseil keeps distinct from
// std::string_view.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(absl::string_view s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(s.data(), s.size()), ctx);
  }
};
template <>
struct fmt::formatter<absl::Status> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const absl::Status& s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(s.ToString(), ctx);
  }
};

namespace tessera {

// Note: Debian's abseil is built with its own absl::string_view (not std::string_view), so
// absl::StrCat does not take std::string_view. Use this StrCat (fmt-based) instead.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (fmt::format_to(std::back_inserter(out), "{}", args), ...);
  return out;
}

using absl::Status;
using absl::StatusOr;

// DataLoss error naming the file and the byte offset where corruption was found.
inline Status CorruptionError(std::string_view file, uint64_t offset, std::string_view what) {
  return absl::DataLossError(StrCat(file, " at offset ", offset, ": ", what));
}

// Prepends `context` to a non-OK status, keeping its code.
inline Status Annotate(const Status& s, std::string_view context) {
  if (s.ok()) return s;
  return Status(s.code(), StrCat(context, ": ", s.message()));
}

}  // namespace tessera

#define TESSERA_CONCAT_INNER_(a, b) a##b
#define TESSERA_CONCAT_(a, b) TESSERA_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status tessera_status_ = (expr);           \
    if (!tessera_status_.ok()) return tessera_status_; \
  } while (0)

#define RETURN_IF_ERROR_CTX(expr, context)                                        \
  do {                                                                            \
    ::absl::Status tessera_status_ = (expr);                                      \
    if (!tessera_status_.ok()) return ::tessera::Annotate(tessera_status_, context); \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(TESSERA_CONCAT_(tessera_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()
