#include "tessera/catalog/schema_record.h"

#include <map>
#include <string>
#include <utility>

#include "tessera/util/coding.h"

namespace tessera::catalog {

Status MalformedRecord(std::string_view what) {
  return absl::DataLossError(tessera::StrCat("malformed schema record: ", what));
}

// --- SchemaRecord ---------------------------------------------------------------------------

std::string SchemaRecord::Encode() const {
  std::string out;
  out.push_back(static_cast<char>(tablet_prefix == 0 ? kFormat : kFormatWithTabletPrefix));
  PutLengthPrefixed(&out, schema.Encode());
  PutVarint32(&out, static_cast<uint32_t>(split_keys.size()));
  for (const std::string& key : split_keys) PutLengthPrefixed(&out, key);
  PutVarint32(&out, static_cast<uint32_t>(family_since.size()));
  for (const auto& [family, since] : family_since) {
    PutLengthPrefixed(&out, family);
    PutVarint64(&out, since);
  }
  if (tablet_prefix != 0) PutVarint64(&out, tablet_prefix);
  return out;
}

StatusOr<SchemaRecord> SchemaRecord::Decode(std::string_view in) {
  if (in.empty()) return MalformedRecord("empty");
  const auto format = static_cast<uint8_t>(in.front());
  if (format != kFormat && format != kFormatWithTabletPrefix) {
    return MalformedRecord(tessera::StrCat("unknown format byte ", static_cast<int>(format)));
  }
  in.remove_prefix(1);
  SchemaRecord record;
  std::string_view encoded_schema;
  if (!GetLengthPrefixed(&in, &encoded_schema)) return MalformedRecord("truncated schema");
  // Drop marks are per tablet: a schema of the format that carried them must carry none.
  std::map<std::string, uint64_t, std::less<>> drop_marks;
  StatusOr<model::TableSchema> schema = model::TableSchema::Decode(encoded_schema, &drop_marks);
  if (!schema.ok()) return MalformedRecord(tessera::StrCat("schema: ", schema.status().message()));
  record.schema = *std::move(schema);
  if (!drop_marks.empty()) return MalformedRecord("schema lists dropped families");
  if (record.schema.version == 0) return MalformedRecord("schema version 0");
  if (Status s = record.schema.Validate(); !s.ok())
    return MalformedRecord(std::string(s.message()));

  uint32_t count = 0;
  if (!GetVarint32(&in, &count)) return MalformedRecord("truncated split count");
  if (count > in.size()) return MalformedRecord("split count exceeds the record");
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view key;
    if (!GetLengthPrefixed(&in, &key)) return MalformedRecord("truncated split key");
    if (key.empty()) return MalformedRecord(tessera::StrCat("split key #", i, " is empty"));
    if (!record.split_keys.empty() && key <= record.split_keys.back()) {
      return MalformedRecord(tessera::StrCat("split key #", i, " is out of order"));
    }
    record.split_keys.emplace_back(key);
  }

  if (!GetVarint32(&in, &count)) return MalformedRecord("truncated family count");
  if (count != record.schema.families.size()) {
    return MalformedRecord(tessera::StrCat(count, " family versions for ",
                                           record.schema.families.size(), " families"));
  }
  auto family = record.schema.families.begin();
  for (uint32_t i = 0; i < count; ++i, ++family) {
    std::string_view name;
    uint64_t since = 0;
    if (!GetLengthPrefixed(&in, &name) || !GetVarint64(&in, &since)) {
      return MalformedRecord("truncated family version");
    }
    if (name != family->first) {
      return MalformedRecord(tessera::StrCat("family version #", i, " names \"", name,
                                             "\" where \"", family->first, "\" was expected"));
    }
    if (since == 0 || since > record.schema.version) {
      return MalformedRecord(tessera::StrCat("family \"", name, "\" created at version ", since,
                                             " of schema version ", record.schema.version));
    }
    record.family_since.emplace(std::string(name), since);
  }
  if (format == kFormatWithTabletPrefix) {
    if (!GetVarint64(&in, &record.tablet_prefix)) return MalformedRecord("truncated tablet prefix");
    if (record.tablet_prefix == 0 || record.tablet_prefix >= (uint64_t{1} << 48)) {
      return MalformedRecord(
          tessera::StrCat("tablet prefix ", record.tablet_prefix, " is not in [1, 2^48)"));
    }
  }
  if (!in.empty()) return MalformedRecord(tessera::StrCat(in.size(), " trailing bytes"));
  return record;
}

}  // namespace tessera::catalog
