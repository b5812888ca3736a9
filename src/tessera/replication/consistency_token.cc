#include "tessera/replication/consistency_token.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "tessera/v1/consistency_token.pb.h"

namespace tessera::replication {

namespace {

constexpr std::string_view kSingleNodePrefix = "tessera-consistency-";
constexpr std::string_view kVersion2Prefix = "2:";

Status Malformed(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      StrCat("consistency token \"", text, "\" was not issued by this cluster: ", why));
}

}  // namespace

std::string SingleNodeToken(uint64_t last_sequence) {
  return StrCat(kSingleNodePrefix, last_sequence);
}

bool IsSingleNodeToken(std::string_view text) {
  if (!text.starts_with(kSingleNodePrefix)) return false;
  const std::string_view digits = text.substr(kSingleNodePrefix.size());
  return !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string ConsistencyToken::Encode() const {
  v1::ConsistencyToken proto;
  proto.set_table_name(table_name);
  for (const TokenTablet& t : tablets) {
    v1::TokenTablet* out = proto.add_tablets();
    out->set_tablet_id(t.tablet_id);
    out->set_epoch(t.epoch);
    out->set_sequence(t.sequence);
  }
  return StrCat(kVersion2Prefix, absl::Base64Escape(proto.SerializeAsString()));
}

StatusOr<ConsistencyToken> ConsistencyToken::Decode(std::string_view text) {
  if (!text.starts_with(kVersion2Prefix)) return Malformed(text, "unknown version");
  std::string bytes;
  const std::string_view base64 = text.substr(kVersion2Prefix.size());
  if (!absl::Base64Unescape(absl::string_view(base64.data(), base64.size()), &bytes)) {
    return Malformed(text, "not base64");
  }
  v1::ConsistencyToken proto;
  if (!proto.ParseFromString(bytes)) return Malformed(text, "does not parse");
  if (proto.table_name().empty() || proto.tablets().empty()) {
    return Malformed(text, "names no table or no tablet");
  }
  ConsistencyToken token;
  token.table_name = proto.table_name();
  for (const v1::TokenTablet& t : proto.tablets()) {
    token.tablets.push_back({t.tablet_id(), t.epoch(), t.sequence()});
  }
  return token;
}

uint64_t RequiredSequence(const TokenTablet& tablet, const catalog::TabletConfig& current) {
  if (current.history.empty() || current.history.front().epoch > tablet.epoch + 1) {
    return tablet.sequence;
  }
  uint64_t required = tablet.sequence;
  for (const catalog::EpochStart& e : current.history) {
    if (e.epoch > tablet.epoch) required = std::min(required, e.start_sequence);
  }
  return required;
}

bool ReplicaReached(const catalog::TabletConfig& current, uint64_t joined, uint64_t last,
                    uint64_t required) {
  return last >= required && current.LineageAllows(joined, last);
}

}  // namespace tessera::replication
