// Paging of the admin APIs' List calls (ListTables, ListAppProfiles): page_size 0 means the
// default page, a negative one is refused; a page token is the name of the last item of the
// previous page, so one that does not look like such a name was not issued by this server.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/util/status.h"

namespace tessera::server {

inline constexpr int kDefaultListPageSize = 1000;

// The number of items a page holds; InvalidArgument for a negative page_size.
inline StatusOr<int> ListPageSize(int32_t page_size) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(
        tessera::StrCat("page_size must not be negative, got ", page_size));
  }
  return page_size == 0 ? kDefaultListPageSize : page_size;
}

// OK for an empty token or one `names_an_item`; InvalidArgument naming the token otherwise.
inline Status CheckListPageToken(const std::string& token, bool names_an_item) {
  if (token.empty() || names_an_item) return Status();
  return absl::InvalidArgumentError(
      tessera::StrCat("page_token \"", token, "\" was not issued by this server"));
}

}  // namespace tessera::server
