#include "tessera/cluster/gossip_messages.h"

#include <algorithm>
#include <array>
#include <limits>

#include "tessera/util/coding.h"

namespace tessera::cluster {
namespace {

// Tag 0 is "named key"; tag i (1..5) is kWellKnownKeys[i - 1].
constexpr std::array<std::string_view, 5> kWellKnownKeys = {kStatusKey, kLoadKey, kDcKey, kRackKey,
                                                            kMasterKey};

uint32_t TagOf(std::string_view key) {
  for (size_t i = 0; i < kWellKnownKeys.size(); ++i) {
    if (kWellKnownKeys[i] == key) return static_cast<uint32_t>(i + 1);
  }
  return 0;
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Lists are sent sorted by endpoint, so each entry's endpoint shares a prefix with the one
// before it ("10.0.0.17:7000" after "10.0.0.16:7000" costs 7 bytes, not 15), and generations
// (start times) are close to each other: both are coded against the previous entry.
struct EncodeContext {
  std::string_view name;
  int64_t generation = 0;
};

void PutEndpoint(std::string* out, std::string_view name, EncodeContext* prev) {
  size_t shared = 0;
  const size_t limit = std::min(name.size(), prev->name.size());
  while (shared < limit && name[shared] == prev->name[shared]) ++shared;
  PutVarint32(out, static_cast<uint32_t>(shared));
  PutLengthPrefixed(out, name.substr(shared));
  prev->name = name;
}

void PutGeneration(std::string* out, int64_t generation, EncodeContext* prev) {
  // Both are in [0, INT64_MAX], so the difference cannot overflow.
  PutVarint64(out, ZigZag(generation - prev->generation));
  prev->generation = generation;
}

void PutDigest(std::string* out, const GossipDigest& d, EncodeContext* prev) {
  PutEndpoint(out, d.endpoint, prev);
  PutGeneration(out, d.generation, prev);
  PutVarint64(out, static_cast<uint64_t>(d.version));
}

void PutDelta(std::string* out, const EndpointDelta& d, EncodeContext* prev) {
  PutEndpoint(out, d.endpoint, prev);
  PutGeneration(out, d.generation, prev);
  PutVarint64(out, static_cast<uint64_t>(d.from_version));
  PutVarint64(out, static_cast<uint64_t>(d.heartbeat_version));
  PutVarint32(out, static_cast<uint32_t>(d.app_states.size()));
  for (const auto& [key, v] : d.app_states) {
    uint32_t tag = TagOf(key);
    PutVarint32(out, tag);
    if (tag == 0) PutLengthPrefixed(out, key);
    PutLengthPrefixed(out, v.value);
    PutVarint64(out, static_cast<uint64_t>(v.version));
  }
}

size_t LengthPrefixedSize(std::string_view s) { return VarintLength(s.size()) + s.size(); }

// Reads fields from the message, remembering where it is so errors can name the offset.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : begin_(bytes.data()), in_(bytes) {}

  size_t offset() const { return static_cast<size_t>(in_.data() - begin_); }
  size_t remaining() const { return in_.size(); }

  Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        StrCat("malformed gossip message at offset ", offset(), ": ", what));
  }

  Status Byte(std::string_view field, uint8_t* out) {
    if (in_.empty()) return Error(StrCat("truncated before ", field));
    *out = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return absl::OkStatus();
  }

  Status Int64(std::string_view field, int64_t* out) {
    size_t at = offset();
    uint64_t v;
    if (!GetVarint64(&in_, &v)) return Error(StrCat("truncated or bad varint in ", field));
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(StrCat("malformed gossip message at offset ", at, ": ",
                                               field, " ", v, " exceeds INT64_MAX"));
    }
    *out = static_cast<int64_t>(v);
    return absl::OkStatus();
  }

  // A count of items each at least `min_item_bytes` long: more than the remaining bytes could
  // hold is an error (so a forged count cannot make us allocate).
  Status Count(std::string_view field, size_t min_item_bytes, size_t* out) {
    uint32_t n;
    if (!GetVarint32(&in_, &n)) return Error(StrCat("truncated or bad varint in ", field));
    if (static_cast<uint64_t>(n) * min_item_bytes > in_.size()) {
      return Error(
          StrCat(field, " ", n, " exceeds what the remaining ", in_.size(), " bytes can hold"));
    }
    *out = n;
    return absl::OkStatus();
  }

  Status Bytes(std::string_view field, std::string_view* out) {
    if (!GetLengthPrefixed(&in_, out)) return Error(StrCat("truncated ", field));
    return absl::OkStatus();
  }

  // An endpoint coded against the previous one in its list (see PutEndpoint).
  Status Endpoint(std::string_view field, std::string* previous, std::string* out) {
    const size_t at = offset();
    uint32_t shared;
    if (!GetVarint32(&in_, &shared)) return Error(StrCat("truncated or bad varint in ", field));
    std::string_view suffix;
    RETURN_IF_ERROR(Bytes(field, &suffix));
    if (shared > previous->size()) {
      return absl::InvalidArgumentError(
          StrCat("malformed gossip message at offset ", at, ": ", field, " shares ", shared,
                 " bytes with the previous one, which has ", previous->size()));
    }
    const size_t size = shared + suffix.size();
    if (size == 0) return Error(StrCat("empty ", field));
    if (size > kMaxGossipNameBytes) {
      return Error(StrCat(field, " of ", size, " bytes exceeds ", kMaxGossipNameBytes));
    }
    out->reserve(size);
    out->assign(previous->data(), shared);
    out->append(suffix.data(), suffix.size());
    *previous = *out;
    return absl::OkStatus();
  }

  // A generation coded as the zigzag difference from the previous one in its list.
  Status Generation(std::string_view field, int64_t* previous, int64_t* out) {
    const size_t at = offset();
    uint64_t v;
    if (!GetVarint64(&in_, &v)) return Error(StrCat("truncated or bad varint in ", field));
    int64_t result;
    if (__builtin_add_overflow(*previous, UnZigZag(v), &result) || result < 0) {
      return absl::InvalidArgumentError(
          StrCat("malformed gossip message at offset ", at, ": ", field, " out of range"));
    }
    *out = *previous = result;
    return absl::OkStatus();
  }

  Status Name(std::string_view field, std::string* out) {
    std::string_view s;
    RETURN_IF_ERROR(Bytes(field, &s));
    if (s.empty()) return Error(StrCat("empty ", field));
    if (s.size() > kMaxGossipNameBytes) {
      return Error(StrCat(field, " of ", s.size(), " bytes exceeds ", kMaxGossipNameBytes));
    }
    out->assign(s.data(), s.size());
    return absl::OkStatus();
  }

 private:
  const char* begin_;
  std::string_view in_;
};

// Smallest encodings: digest = shared length + suffix length + 2 varints; delta = name (2) +
// 3 varints + count; app state = tag + empty value + version.
constexpr size_t kMinDigestBytes = 4;
constexpr size_t kMinDeltaBytes = 6;
constexpr size_t kMinAppStateBytes = 3;

struct DecodeContext {
  std::string name;
  int64_t generation = 0;
};

Status ReadDigest(Reader* r, DecodeContext* prev, GossipDigest* d) {
  RETURN_IF_ERROR(r->Endpoint("digest endpoint", &prev->name, &d->endpoint));
  RETURN_IF_ERROR(r->Generation("digest generation", &prev->generation, &d->generation));
  return r->Int64("digest version", &d->version);
}

Status ReadDelta(Reader* r, DecodeContext* prev, EndpointDelta* d) {
  RETURN_IF_ERROR(r->Endpoint("delta endpoint", &prev->name, &d->endpoint));
  RETURN_IF_ERROR(r->Generation("delta generation", &prev->generation, &d->generation));
  RETURN_IF_ERROR(r->Int64("delta from_version", &d->from_version));
  RETURN_IF_ERROR(r->Int64("delta heartbeat_version", &d->heartbeat_version));
  size_t n;
  RETURN_IF_ERROR(r->Count("application state count", kMinAppStateBytes, &n));
  for (size_t i = 0; i < n; ++i) {
    size_t at = r->offset();
    int64_t tag;
    RETURN_IF_ERROR(r->Int64("application state tag", &tag));
    std::string key;
    if (tag == 0) {
      RETURN_IF_ERROR(r->Name("application state name", &key));
      if (TagOf(key) != 0) {
        return absl::InvalidArgumentError(StrCat("malformed gossip message at offset ", at,
                                                 ": well-known key '", key,
                                                 "' sent by name instead of by tag"));
      }
    } else if (tag <= static_cast<int64_t>(kWellKnownKeys.size())) {
      key = std::string(kWellKnownKeys[tag - 1]);
    } else {
      return absl::InvalidArgumentError(StrCat("malformed gossip message at offset ", at,
                                               ": unknown application state tag ", tag));
    }
    std::string_view value;
    RETURN_IF_ERROR(r->Bytes("application state value", &value));
    VersionedValue v;
    v.value.assign(value.data(), value.size());
    RETURN_IF_ERROR(r->Int64("application state version", &v.version));
    if (v.version <= d->from_version) {
      return r->Error(StrCat("application state '", key, "' version ", v.version,
                             " is not above the delta's from_version ", d->from_version));
    }
    if (!d->app_states.emplace(std::move(key), std::move(v)).second) {
      return absl::InvalidArgumentError(StrCat("malformed gossip message at offset ", at,
                                               ": application state repeated in one delta"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* GossipMessageTypeName(GossipMessageType type) {
  switch (type) {
    case GossipMessageType::kSyn:
      return "SYN";
    case GossipMessageType::kAck:
      return "ACK";
    case GossipMessageType::kAck2:
      return "ACK2";
  }
  return "unknown";
}

size_t EncodedDigestSize(const GossipDigest& d) {
  return 1 + LengthPrefixedSize(d.endpoint) + VarintLength(ZigZag(d.generation)) +
         VarintLength(static_cast<uint64_t>(d.version));
}

size_t EncodedDeltaSize(const EndpointDelta& d) {
  size_t n = 1 + LengthPrefixedSize(d.endpoint) + VarintLength(ZigZag(d.generation)) +
             VarintLength(static_cast<uint64_t>(d.from_version)) +
             VarintLength(static_cast<uint64_t>(d.heartbeat_version)) +
             VarintLength(d.app_states.size());
  for (const auto& [key, v] : d.app_states) {
    uint32_t tag = TagOf(key);
    n += VarintLength(tag) + (tag == 0 ? LengthPrefixedSize(key) : 0) +
         LengthPrefixedSize(v.value) + VarintLength(static_cast<uint64_t>(v.version));
  }
  return n;
}

std::string EncodeGossipMessage(const GossipMessage& m) {
  std::string out;
  out.push_back(static_cast<char>(kGossipMagic));
  out.push_back(static_cast<char>(kGossipFormatVersion));
  out.push_back(static_cast<char>(m.type));
  PutLengthPrefixed(&out, m.cluster_name);
  PutLengthPrefixed(&out, m.sender);
  if (m.type == GossipMessageType::kSyn || m.type == GossipMessageType::kAck) {
    PutVarint32(&out, static_cast<uint32_t>(m.digests.size()));
    EncodeContext prev;
    for (const auto& d : m.digests) PutDigest(&out, d, &prev);
  }
  if (m.type == GossipMessageType::kAck || m.type == GossipMessageType::kAck2) {
    PutVarint32(&out, static_cast<uint32_t>(m.deltas.size()));
    EncodeContext prev;
    for (const auto& d : m.deltas) PutDelta(&out, d, &prev);
  }
  return out;
}

StatusOr<GossipMessage> DecodeGossipMessage(std::string_view bytes) {
  Reader r(bytes);
  GossipMessage m;
  uint8_t magic = 0, version = 0, type = 0;
  RETURN_IF_ERROR(r.Byte("magic", &magic));
  if (magic != kGossipMagic) {
    return absl::InvalidArgumentError(StrCat("not a gossip message: magic byte ",
                                             static_cast<int>(magic), " is not ",
                                             static_cast<int>(kGossipMagic)));
  }
  RETURN_IF_ERROR(r.Byte("format version", &version));
  if (version != kGossipFormatVersion) {
    return absl::InvalidArgumentError(StrCat("unsupported gossip format version ",
                                             static_cast<int>(version), " (this node speaks ",
                                             static_cast<int>(kGossipFormatVersion), ")"));
  }
  RETURN_IF_ERROR(r.Byte("message type", &type));
  if (type < 1 || type > 3) {
    return r.Error(StrCat("unknown message type ", static_cast<int>(type)));
  }
  m.type = static_cast<GossipMessageType>(type);
  std::string_view cluster;
  RETURN_IF_ERROR(r.Bytes("cluster name", &cluster));
  if (cluster.size() > kMaxGossipNameBytes) return r.Error("cluster name too long");
  m.cluster_name.assign(cluster.data(), cluster.size());
  RETURN_IF_ERROR(r.Name("sender", &m.sender));
  size_t n;
  if (m.type == GossipMessageType::kSyn || m.type == GossipMessageType::kAck) {
    RETURN_IF_ERROR(r.Count("digest count", kMinDigestBytes, &n));
    m.digests.resize(n);
    DecodeContext prev;
    for (auto& d : m.digests) RETURN_IF_ERROR(ReadDigest(&r, &prev, &d));
  }
  if (m.type == GossipMessageType::kAck || m.type == GossipMessageType::kAck2) {
    RETURN_IF_ERROR(r.Count("delta count", kMinDeltaBytes, &n));
    m.deltas.resize(n);
    DecodeContext prev;
    for (auto& d : m.deltas) RETURN_IF_ERROR(ReadDelta(&r, &prev, &d));
  }
  if (r.remaining() != 0) {
    return r.Error(StrCat(r.remaining(), " trailing bytes after the message"));
  }
  return m;
}

}  // namespace tessera::cluster
