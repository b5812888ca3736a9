#include "tessera/cluster/gossip_messages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/util/coding.h"
#include "tessera/util/random.h"

namespace tessera::cluster {
namespace {

using ::testing::HasSubstr;

GossipMessage Ack() {
  GossipMessage m;
  m.type = GossipMessageType::kAck;
  m.cluster_name = "prod";
  m.sender = "10.0.0.7:7946";
  m.digests = {{"n1", 1'700'000'000, 0}, {"n2", 1'700'000'123, 456}};
  EndpointDelta d;
  d.endpoint = "n3";
  d.generation = 1'700'000'001;
  d.from_version = 10;
  d.heartbeat_version = 99;
  d.app_states = {{"status", {"normal", 11}}, {"load", {"12345", 12}},
                  {"dc", {"eu", 13}},         {"rack", {"r7", 14}},
                  {"master", {"term-4", 15}}, {"tablets", {std::string("\0\x01\xff", 3), 16}}};
  m.deltas.push_back(d);
  d.endpoint = "n4";
  d.from_version = 0;
  d.app_states.clear();
  m.deltas.push_back(d);
  return m;
}

TEST(GossipMessagesTest, RoundTripsEveryType) {
  GossipMessage ack = Ack();
  GossipMessage syn = ack;
  syn.type = GossipMessageType::kSyn;
  syn.deltas.clear();
  GossipMessage ack2 = ack;
  ack2.type = GossipMessageType::kAck2;
  ack2.digests.clear();
  GossipMessage empty;
  empty.sender = "x";
  for (const GossipMessage& m : {syn, ack, ack2, empty}) {
    StatusOr<GossipMessage> back = DecodeGossipMessage(EncodeGossipMessage(m));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, m) << GossipMessageTypeName(m.type);
  }
}

TEST(GossipMessagesTest, EncodingIsCompact) {
  // A heartbeat-only delta is a handful of bytes: shared-prefix length, name, generation,
  // versions; well-known keys are one byte each.
  EndpointDelta d;
  d.endpoint = "n17";
  d.generation = 1'700'000'000;
  d.from_version = 1200;
  d.heartbeat_version = 1201;
  EXPECT_EQ(EncodedDeltaSize(d), 1u + 4 + 5 + 2 + 2 + 1);
  d.app_states = {{"status", {"normal", 1202}}};
  EXPECT_EQ(EncodedDeltaSize(d), 15u + 1 + 7 + 2);
  EXPECT_EQ(EncodedDigestSize(GossipDigest{"n17", 1'700'000'000, 1201}), 12u);

  // A SYN from a node of a 100-node cluster: sorted addresses share prefixes and start times
  // are close, so the list costs far less than its entries one by one.
  GossipMessage syn;
  syn.cluster_name = "prod";
  syn.sender = "10.0.0.1:7000";
  size_t unshared = 0;
  for (int i = 0; i < 100; ++i) {
    GossipDigest g{"10.0.0." + std::to_string(i + 100) + ":7000", 1'700'000'000 + i * 37, 5000 + i};
    unshared += EncodedDigestSize(g);
    syn.digests.push_back(g);
  }
  const std::string bytes = EncodeGossipMessage(syn);
  EXPECT_LT(bytes.size(), unshared * 6 / 10);
  StatusOr<GossipMessage> back = DecodeGossipMessage(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, syn);
}

Status DecodeError(std::string_view bytes) { return DecodeGossipMessage(bytes).status(); }

TEST(GossipMessagesTest, RejectsEveryTruncation) {
  const std::string bytes = EncodeGossipMessage(Ack());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Status s = DecodeError(std::string_view(bytes).substr(0, n));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << "prefix of " << n << " bytes";
  }
}

TEST(GossipMessagesTest, RejectsTrailingBytes) {
  Status s = DecodeError(EncodeGossipMessage(Ack()) + "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("1 trailing bytes"));
}

TEST(GossipMessagesTest, RejectsBadHeader) {
  std::string bytes = EncodeGossipMessage(Ack());
  std::string b = bytes;
  b[0] = 'x';
  EXPECT_THAT(std::string(DecodeError(b).message()), HasSubstr("not a gossip message"));
  b = bytes;
  b[1] = 2;
  EXPECT_THAT(std::string(DecodeError(b).message()),
              HasSubstr("unsupported gossip format version 2"));
  b = bytes;
  b[2] = 4;
  EXPECT_THAT(std::string(DecodeError(b).message()), HasSubstr("unknown message type 4"));
  EXPECT_THAT(std::string(DecodeError("").message()), HasSubstr("truncated before magic"));
}

// Builds an ACK2 of one delta by hand so each field can be made wrong on purpose. `generation`
// is written as is: a zigzag varint, 2 * g for a generation g.
std::string Ack2With(std::string_view endpoint, uint64_t generation, uint64_t from,
                     const std::string& app_states_bytes, uint32_t app_count, uint32_t shared = 0) {
  std::string b;
  b.push_back(static_cast<char>(kGossipMagic));
  b.push_back(static_cast<char>(kGossipFormatVersion));
  b.push_back(3);
  PutLengthPrefixed(&b, "c");
  PutLengthPrefixed(&b, "s");
  PutVarint32(&b, 1);
  PutVarint32(&b, shared);
  PutLengthPrefixed(&b, endpoint);
  PutVarint64(&b, generation);
  PutVarint64(&b, from);
  PutVarint64(&b, 5);
  PutVarint32(&b, app_count);
  b += app_states_bytes;
  return b;
}

std::string AppState(uint32_t tag, std::string_view name, std::string_view value,
                     uint64_t version) {
  std::string b;
  PutVarint32(&b, tag);
  if (tag == 0) PutLengthPrefixed(&b, name);
  PutLengthPrefixed(&b, value);
  PutVarint64(&b, version);
  return b;
}

TEST(GossipMessagesTest, HandBuiltMessageDecodes) {
  // The negative cases below differ from this one in a single field.
  StatusOr<GossipMessage> m = DecodeGossipMessage(
      Ack2With("n1", 14, 2, AppState(1, "", "normal", 3) + AppState(0, "tablets", "t1", 4), 2));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->deltas.size(), 1u);
  EXPECT_EQ(m->deltas[0].generation, 7);
  EXPECT_EQ(m->deltas[0].app_states.at("status").value, "normal");
  EXPECT_EQ(m->deltas[0].app_states.at("tablets").version, 4);
}

TEST(GossipMessagesTest, RejectsMalformedFields) {
  struct Case {
    const char* name;
    std::string bytes;
    const char* error;
  } cases[] = {
      {"empty endpoint", Ack2With("", 14, 2, AppState(2, "", "a", 3), 1), "empty delta endpoint"},
      {"endpoint too long", Ack2With(std::string(kMaxGossipNameBytes + 1, 'n'), 14, 2, "", 0),
       "exceeds 1024"},
      {"negative generation", Ack2With("n1", 1, 2, AppState(2, "", "a", 3), 1),
       "delta generation out of range"},
      {"prefix longer than the previous endpoint",
       Ack2With("n1", 14, 2, AppState(2, "", "a", 3), 1, /*shared=*/3),
       "shares 3 bytes with the previous one, which has 0"},
      {"version above INT64_MAX", Ack2With("n1", 14, uint64_t{1} << 63, AppState(2, "", "a", 3), 1),
       "delta from_version 9223372036854775808 exceeds INT64_MAX"},
      {"unknown tag", Ack2With("n1", 14, 2, AppState(6, "", "v", 3), 1),
       "unknown application state tag 6"},
      {"well-known key by name", Ack2With("n1", 14, 2, AppState(0, "load", "v", 3), 1),
       "well-known key 'load' sent by name"},
      {"empty key name", Ack2With("n1", 14, 2, AppState(0, "", "v", 3), 1),
       "empty application state name"},
      {"repeated key", Ack2With("n1", 14, 2, AppState(2, "", "a", 3) + AppState(2, "", "b", 4), 2),
       "repeated in one delta"},
      {"version not above from_version", Ack2With("n1", 14, 5, AppState(2, "", "a", 5), 1),
       "version 5 is not above the delta's from_version 5"},
      {"count larger than the bytes", Ack2With("n1", 14, 2, AppState(2, "", "a", 3), 1000),
       "application state count 1000 exceeds"},
  };
  for (const auto& c : cases) {
    Status s = DecodeError(c.bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.error))
        << c.name << ": " << std::string(s.message());
    EXPECT_THAT(std::string(s.message()), HasSubstr("offset"))
        << c.name << ": " << std::string(s.message());
  }
}

TEST(GossipMessagesTest, HugeDigestCountDoesNotAllocate) {
  std::string b;
  b.push_back(static_cast<char>(kGossipMagic));
  b.push_back(static_cast<char>(kGossipFormatVersion));
  b.push_back(1);
  PutLengthPrefixed(&b, "c");
  PutLengthPrefixed(&b, "s");
  PutVarint32(&b, 0xffffffffu);
  EXPECT_THAT(std::string(DecodeError(b).message()), HasSubstr("digest count 4294967295 exceeds"));
}

TEST(GossipMessagesTest, RandomCorruptionNeverCrashesAndRoundTrips) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "replay with TESSERA_SEED=" << seed);
  Random rnd(seed);
  const std::string good = EncodeGossipMessage(Ack());
  int decoded = 0;
  for (int i = 0; i < 20'000; ++i) {
    std::string b = good;
    const int flips = 1 + static_cast<int>(rnd.Uniform(4));
    for (int f = 0; f < flips; ++f) b[rnd.Uniform(b.size())] = static_cast<char>(rnd.Next32());
    if (rnd.OneIn(4)) b.resize(rnd.Uniform(b.size() + 1));
    StatusOr<GossipMessage> m = DecodeGossipMessage(b);
    if (!m.ok()) continue;
    ++decoded;
    // Whatever decodes survives a round trip unchanged.
    StatusOr<GossipMessage> again = DecodeGossipMessage(EncodeGossipMessage(*m));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *m);
  }
  EXPECT_GT(decoded, 0);  // some flips land in values and still decode
}

}  // namespace
}  // namespace tessera::cluster
