// Fuzzes the cell-key codec and CellVisibility. The input is split at 0xFE 0xFE into keys; each
// is decoded (a decodable key must re-encode to the same bytes and agree with RowPrefix and the
// layout parser), then the keys, sorted, are fed to CellVisibility. Nothing may crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/model/gc_rule.h"

using tessera::model::CellKey;
using tessera::model::CellKeyLayout;
using tessera::model::CellVisibility;
using tessera::model::GcRule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> keys;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find("\xfe\xfe", start);
    if (end == std::string_view::npos) end = input.size();
    keys.emplace_back(input.substr(start, end - start));
    start = end + 2;
  }
  for (const std::string& key : keys) {
    CellKey decoded;
    CellKeyLayout layout;
    const bool ok = CellKey::Decode(key, &decoded);
    if (ok != tessera::model::ParseCellKeyLayout(key, &layout)) std::abort();
    if (!ok) continue;
    if (decoded.Encode() != key) std::abort();
    if (tessera::model::RowPrefix(key) != tessera::model::EncodeRowPrefix(decoded.row)) {
      std::abort();
    }
  }
  std::sort(keys.begin(), keys.end());
  const GcRule rule = GcRule::MaxNumVersions(1);
  CellVisibility::Options options;
  options.apply_gc = true;
  options.gc_rule_for = [&rule](std::string_view) { return &rule; };
  CellVisibility visibility(options);
  uint64_t seq = keys.size();
  for (const std::string& key : keys) {
    (void)visibility.Add(key, seq--, std::string_view(key).substr(0, 16));
  }
  return 0;
}
