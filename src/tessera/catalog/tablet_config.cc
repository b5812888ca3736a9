#include "tessera/catalog/tablet_config.h"

#include <algorithm>

#include <set>

#include "tessera/util/coding.h"

namespace tessera::catalog {
namespace {

constexpr std::string_view kPrefix = "tablets/";
constexpr uint8_t kMaxState = static_cast<uint8_t>(TabletConfigState::kTombstoned);

Status Malformed(std::string_view what) {
  return absl::DataLossError(tessera::StrCat("malformed tablet configuration: ", what));
}

}  // namespace

std::string_view TabletConfigStateName(TabletConfigState state) {
  switch (state) {
    case TabletConfigState::kCreating:
      return "creating";
    case TabletConfigState::kServing:
      return "serving";
    case TabletConfigState::kMoving:
      return "moving";
    case TabletConfigState::kTombstoned:
      return "tombstoned";
  }
  return "unknown";
}

Status TabletConfig::Validate() const {
  auto bad = [&](auto&&... what) {
    return absl::InvalidArgumentError(tessera::StrCat(TabletName(tablet_id), ": ", what...));
  };
  if (tablet_id == 0) return bad("tablet id 0");
  if (epoch == 0) return bad("epoch 0");
  const auto s = static_cast<uint8_t>(state);
  if (s == 0 || s > kMaxState) return bad("unknown state ", static_cast<int>(s));
  if (replicas.empty()) return bad("no replicas");
  std::set<std::string_view> seen;
  for (const std::string& r : replicas) {
    if (r.empty()) return bad("an empty replica endpoint");
    if (!seen.insert(r).second) return bad("replica ", r, " is listed twice");
  }
  if (primary >= replicas.size()) {
    return bad("primary index ", primary, " of ", replicas.size(), " replicas");
  }
  for (size_t i = 0; i < needs_rebuild.size(); ++i) {
    const size_t r = needs_rebuild[i];
    if (r >= replicas.size()) return bad("rebuild index ", r, " of ", replicas.size(), " replicas");
    if (i > 0 && r <= needs_rebuild[i - 1]) return bad("rebuild indexes out of order");
    if (r == primary) return bad("the primary ", replicas[r], " cannot need a rebuild");
  }
  if (history.empty() || history.size() > kMaxHistory) {
    return bad("a history of ", history.size(), " epochs (1 to ", kMaxHistory, ")");
  }
  for (size_t i = 1; i < history.size(); ++i) {
    if (history[i].epoch <= history[i - 1].epoch) return bad("history epochs out of order");
  }
  if (history.back() != EpochStart{epoch, epoch_start_sequence}) {
    return bad("the history does not end with epoch ", epoch);
  }
  return Status();
}

bool TabletConfig::NeedsRebuild(size_t replica) const {
  for (size_t r : needs_rebuild) {
    if (r == replica) return true;
  }
  return false;
}

int TabletConfig::IndexOf(std::string_view endpoint) const {
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i] == endpoint) return static_cast<int>(i);
  }
  return -1;
}

TabletConfig TabletConfig::NextEpoch(size_t new_primary, uint64_t start) const {
  TabletConfig next = *this;
  next.epoch = epoch + 1;
  next.epoch_start_sequence = start;
  next.primary = new_primary;
  next.history.push_back({next.epoch, start});
  if (next.history.size() > kMaxHistory) next.history.erase(next.history.begin());
  return next;
}

bool TabletConfig::LineageAllows(uint64_t joined, uint64_t last) const {
  return LineagePrefix(joined, last) == last;
}

std::optional<uint64_t> TabletConfig::LineagePrefix(uint64_t joined, uint64_t last) const {
  if (last == 0) return 0;  // holds nothing
  if (joined >= epoch) return joined == epoch ? std::optional<uint64_t>(last) : std::nullopt;
  // Every epoch in (joined, epoch] must be in the history.
  if (history.empty() || history.front().epoch > joined + 1) return std::nullopt;
  uint64_t prefix = last;
  for (const EpochStart& e : history) {
    if (e.epoch > joined) prefix = std::min(prefix, e.start_sequence);
  }
  return prefix;
}

std::string TabletConfig::Encode() const {
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  PutVarint64(&out, tablet_id);
  PutVarint64(&out, epoch);
  PutVarint64(&out, epoch_start_sequence);
  out.push_back(static_cast<char>(state));
  PutVarint32(&out, static_cast<uint32_t>(replicas.size()));
  for (const std::string& r : replicas) PutLengthPrefixed(&out, r);
  PutVarint32(&out, static_cast<uint32_t>(primary));
  PutVarint32(&out, static_cast<uint32_t>(needs_rebuild.size()));
  for (size_t r : needs_rebuild) PutVarint32(&out, static_cast<uint32_t>(r));
  PutVarint32(&out, static_cast<uint32_t>(history.size()));
  for (const EpochStart& e : history) {
    PutVarint64(&out, e.epoch);
    PutVarint64(&out, e.start_sequence);
  }
  return out;
}

StatusOr<TabletConfig> TabletConfig::Decode(std::string_view in) {
  if (in.empty()) return Malformed("empty");
  const auto format = static_cast<uint8_t>(in.front());
  if (format != kFormat) {
    return Malformed(tessera::StrCat("unknown format byte ", static_cast<int>(format)));
  }
  in.remove_prefix(1);
  TabletConfig c;
  if (!GetVarint64(&in, &c.tablet_id) || !GetVarint64(&in, &c.epoch) ||
      !GetVarint64(&in, &c.epoch_start_sequence) || in.empty()) {
    return Malformed("truncated header");
  }
  c.state = static_cast<TabletConfigState>(in.front());
  in.remove_prefix(1);
  uint32_t count = 0;
  if (!GetVarint32(&in, &count)) return Malformed("truncated replica count");
  if (count > in.size()) return Malformed("replica count exceeds the record");
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view endpoint;
    if (!GetLengthPrefixed(&in, &endpoint)) return Malformed("truncated replica endpoint");
    c.replicas.emplace_back(endpoint);
  }
  uint32_t primary = 0;
  if (!GetVarint32(&in, &primary)) return Malformed("truncated primary index");
  c.primary = primary;
  if (!GetVarint32(&in, &count)) return Malformed("truncated rebuild count");
  if (count > in.size()) return Malformed("rebuild count exceeds the record");
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t r = 0;
    if (!GetVarint32(&in, &r)) return Malformed("truncated rebuild index");
    c.needs_rebuild.push_back(r);
  }
  if (!GetVarint32(&in, &count)) return Malformed("truncated history count");
  if (count > in.size()) return Malformed("history count exceeds the record");
  for (uint32_t i = 0; i < count; ++i) {
    EpochStart e;
    if (!GetVarint64(&in, &e.epoch) || !GetVarint64(&in, &e.start_sequence)) {
      return Malformed("truncated history");
    }
    c.history.push_back(e);
  }
  if (!in.empty()) return Malformed(tessera::StrCat(in.size(), " trailing bytes"));
  if (Status s = c.Validate(); !s.ok()) return Malformed(std::string(s.message()));
  return c;
}

std::string TabletIdHex(uint64_t tablet_id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (int shift = 60; shift >= 0; shift -= 4) hex.push_back(kHex[(tablet_id >> shift) & 0xf]);
  return hex;
}

std::optional<uint64_t> ParseTabletIdHex(std::string_view hex) {
  if (hex.size() != 16) return std::nullopt;
  uint64_t id = 0;
  for (char ch : hex) {
    int digit = -1;
    if (ch >= '0' && ch <= '9') digit = ch - '0';
    if (ch >= 'a' && ch <= 'f') digit = ch - 'a' + 10;
    if (digit < 0) return std::nullopt;
    id = id << 4 | static_cast<uint64_t>(digit);
  }
  return id;
}

std::string TabletConfigName(uint64_t tablet_id) {
  return StrCat(kPrefix, TabletIdHex(tablet_id));
}

std::string TabletName(uint64_t tablet_id) { return StrCat("tablet ", TabletIdHex(tablet_id)); }

StatusOr<uint64_t> ParseTabletConfigName(std::string_view name) {
  std::optional<uint64_t> id;
  if (name.substr(0, kPrefix.size()) == kPrefix) id = ParseTabletIdHex(name.substr(kPrefix.size()));
  if (!id.has_value()) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "\"", name, "\" is not a tablet configuration name (tablets/ and 16 hex digits)"));
  }
  return *id;
}

}  // namespace tessera::catalog
