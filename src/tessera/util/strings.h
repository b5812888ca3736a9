// Small string helpers over std::string_view (Debian's abseil has its own string_view, which
// absl::StrSplit and absl::StrJoin want).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// `s` cut at every `sep`, empty pieces kept: Split("a//b", '/') = {"a", "", "b"}; Split("", ',')
// = {""}. The pieces view `s`.
inline std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t from = 0;;) {
    const size_t at = s.find(sep, from);
    if (at == std::string_view::npos) {
      out.push_back(s.substr(from));
      return out;
    }
    out.push_back(s.substr(from, at - from));
    from = at + 1;
  }
}

// The pieces with `sep` between them.
inline std::string Join(const std::vector<std::string_view>& pieces, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out += sep;
    out += pieces[i];
  }
  return out;
}

}  // namespace tessera
