#include "tessera/model/schema.h"

#include "tessera/model/cell_key.h"
#include "tessera/util/coding.h"

namespace tessera::model {

namespace {

constexpr char kFormatV1 = 0x01;
constexpr char kFormatV2 = 0x02;  // kFormatVersion followed by drop marks
constexpr char kFormatVersion = 0x03;
constexpr char kFormatWithOptions = 0x04;  // kFormatVersion followed by the table options
constexpr char kFormatWithCompaction = 0x05;  // kFormatWithOptions followed by the compaction
constexpr uint8_t kFlagInMemory = 0x01;
constexpr uint8_t kFlagSuperColumns = 0x02;
constexpr uint8_t kFlagTimeSorted = 0x04;
constexpr uint8_t kKnownFamilyFlags = kFlagInMemory | kFlagSuperColumns | kFlagTimeSorted;
constexpr uint8_t kTableFlagDeletionProtection = 0x01;
constexpr uint8_t kTableFlagMicros = 0x02;
constexpr uint8_t kKnownTableFlags = kTableFlagDeletionProtection | kTableFlagMicros;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

}  // namespace

Status ValidateFamilyName(std::string_view family) {
  if (family.empty()) return absl::InvalidArgumentError("column family name is empty");
  if (family.size() > kMaxFamilyNameSize) {
    return absl::InvalidArgumentError(tessera::StrCat("column family name \"",
                                                      DisplayBytes(family.substr(0, 80)),
                                                      "\" is longer than ", kMaxFamilyNameSize));
  }
  for (char c : family) {
    if (!IsNameChar(c)) {
      return absl::InvalidArgumentError(
          tessera::StrCat("column family name \"", DisplayBytes(family),
                          "\" has a character outside [-_.a-zA-Z0-9]"));
    }
  }
  return Status();
}

Status ValidateTableName(std::string_view table) {
  if (table.empty()) return absl::InvalidArgumentError("table name is empty");
  if (table.size() > kMaxTableNameSize) {
    return absl::InvalidArgumentError(tessera::StrCat("table name \"",
                                                      DisplayBytes(table.substr(0, 80)),
                                                      "\" is longer than ", kMaxTableNameSize));
  }
  for (char c : table) {
    if (!IsNameChar(c)) {
      return absl::InvalidArgumentError(tessera::StrCat(
          "table name \"", DisplayBytes(table), "\" has a character outside [-_.a-zA-Z0-9]"));
    }
  }
  if (table[0] == '-' || table[0] == '.') {
    return absl::InvalidArgumentError(
        tessera::StrCat("table name \"", table, "\" must start with [_a-zA-Z0-9]"));
  }
  return Status();
}

const FamilySchema* TableSchema::Find(std::string_view family) const {
  auto it = families.find(family);
  return it == families.end() ? nullptr : &it->second;
}

const GcRule* TableSchema::FindGcRule(std::string_view family) const {
  const FamilySchema* f = Find(family);
  return f == nullptr ? nullptr : &f->gc_rule;
}

Status TableSchema::Validate() const {
  RETURN_IF_ERROR(ValidateTableName(name));
  for (const auto& [family, schema] : families) {
    RETURN_IF_ERROR(ValidateFamilyName(family));
    RETURN_IF_ERROR_CTX(schema.gc_rule.Validate(), tessera::StrCat("column family ", family));
  }
  return Status();
}

void TableSchema::EncodeTo(std::string* dst) const {
  dst->push_back(options.empty()              ? kFormatVersion
                 : options.compaction.empty() ? kFormatWithOptions
                                              : kFormatWithCompaction);
  PutLengthPrefixed(dst, name);
  PutVarint64(dst, version);
  uint8_t table_flags = 0;
  if (deletion_protection) table_flags |= kTableFlagDeletionProtection;
  if (granularity == TimestampGranularity::kMicros) table_flags |= kTableFlagMicros;
  dst->push_back(static_cast<char>(table_flags));
  PutVarint32(dst, static_cast<uint32_t>(families.size()));
  std::string rule;
  for (const auto& [family, schema] : families) {
    PutLengthPrefixed(dst, family);
    uint8_t flags = 0;
    if (schema.in_memory) flags |= kFlagInMemory;
    if (schema.super_columns) flags |= kFlagSuperColumns;
    if (schema.time_sorted) flags |= kFlagTimeSorted;
    dst->push_back(static_cast<char>(flags));
    rule.clear();
    schema.gc_rule.EncodeTo(&rule);
    PutLengthPrefixed(dst, rule);
  }
  if (!options.empty()) {
    PutLengthPrefixed(dst, options.placement);
    PutLengthPrefixed(dst, options.read_consistency);
    PutLengthPrefixed(dst, options.write_consistency);
    if (!options.compaction.empty()) PutLengthPrefixed(dst, options.compaction);
  }
}

std::string TableSchema::Encode() const {
  std::string out;
  EncodeTo(&out);
  return out;
}

StatusOr<TableSchema> TableSchema::Decode(
    std::string_view encoded, std::map<std::string, uint64_t, std::less<>>* legacy_drop_marks) {
  if (legacy_drop_marks != nullptr) legacy_drop_marks->clear();
  std::string_view rest = encoded;
  auto error = [&](std::string_view what) {
    return CorruptionError("table schema", encoded.size() - rest.size(), what);
  };
  if (rest.empty()) return error("empty");
  const char format = rest[0];
  if (format != kFormatWithCompaction && format != kFormatWithOptions && format != kFormatVersion &&
      format != kFormatV2 && format != kFormatV1) {
    return error(tessera::StrCat("unknown format ", static_cast<uint8_t>(rest[0])));
  }
  rest.remove_prefix(1);
  TableSchema schema;
  std::string_view name;
  uint32_t count;
  if (!GetLengthPrefixed(&rest, &name)) return error("truncated table name");
  schema.name.assign(name);
  if (format != kFormatV1) {
    if (!GetVarint64(&rest, &schema.version)) return error("truncated version");
    if (rest.empty()) return error("truncated table flags");
    const uint8_t table_flags = static_cast<uint8_t>(rest[0]);
    if ((table_flags & ~kKnownTableFlags) != 0) {
      return error(tessera::StrCat("unknown table flags ", table_flags));
    }
    rest.remove_prefix(1);
    schema.deletion_protection = (table_flags & kTableFlagDeletionProtection) != 0;
    schema.granularity = (table_flags & kTableFlagMicros) != 0 ? TimestampGranularity::kMicros
                                                               : TimestampGranularity::kMillis;
  }
  if (!GetVarint32(&rest, &count)) return error("truncated family count");
  if (count > rest.size()) return error(tessera::StrCat("family count ", count, " too large"));
  std::string_view previous;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view family, rule_bytes;
    if (!GetLengthPrefixed(&rest, &family)) return error("truncated family name");
    if (Status s = ValidateFamilyName(family); !s.ok()) return error(std::string(s.message()));
    if (i > 0 && family <= previous) {
      return error(tessera::StrCat("family \"", family, "\" out of order or duplicated"));
    }
    previous = family;
    if (rest.empty()) return error("truncated family flags");
    const uint8_t flags = static_cast<uint8_t>(rest[0]);
    const uint8_t known = format == kFormatV1 ? kFlagInMemory : kKnownFamilyFlags;
    if ((flags & ~known) != 0) return error(tessera::StrCat("unknown family flags ", flags));
    rest.remove_prefix(1);
    const size_t rule_offset = encoded.size() - rest.size();
    if (!GetLengthPrefixed(&rest, &rule_bytes)) return error("truncated gc rule");
    StatusOr<GcRule> rule = GcRule::Decode(rule_bytes);
    if (!rule.ok()) {
      return CorruptionError("table schema", rule_offset,
                             tessera::StrCat("family ", family, ": ", rule.status().message()));
    }
    FamilySchema& f = schema.families[std::string(family)];
    f.in_memory = (flags & kFlagInMemory) != 0;
    f.super_columns = (flags & kFlagSuperColumns) != 0;
    f.time_sorted = (flags & kFlagTimeSorted) != 0;
    f.gc_rule = *std::move(rule);
  }
  if (format == kFormatWithOptions || format == kFormatWithCompaction) {
    std::string_view placement, read, write, compaction;
    if (!GetLengthPrefixed(&rest, &placement) || !GetLengthPrefixed(&rest, &read) ||
        !GetLengthPrefixed(&rest, &write) ||
        (format == kFormatWithCompaction && !GetLengthPrefixed(&rest, &compaction))) {
      return error("truncated table options");
    }
    schema.options = TableOptions{std::string(placement), std::string(read), std::string(write),
                                  std::string(compaction)};
  }
  if (format == kFormatV2) {
    uint32_t dropped;
    if (!GetVarint32(&rest, &dropped)) return error("truncated dropped-family count");
    if (dropped > rest.size()) {
      return error(tessera::StrCat("dropped-family count ", dropped, " too large"));
    }
    previous = {};
    for (uint32_t i = 0; i < dropped; ++i) {
      std::string_view family;
      uint64_t sequence;
      if (!GetLengthPrefixed(&rest, &family)) return error("truncated dropped family name");
      if (Status s = ValidateFamilyName(family); !s.ok()) return error(std::string(s.message()));
      if (i > 0 && family <= previous) {
        return error(tessera::StrCat("dropped family \"", family, "\" out of order or duplicated"));
      }
      previous = family;
      if (!GetVarint64(&rest, &sequence)) return error("truncated dropped family sequence");
      if (legacy_drop_marks != nullptr) legacy_drop_marks->emplace(std::string(family), sequence);
    }
  }
  if (!rest.empty()) return error("trailing bytes");
  return schema;
}

std::string TableSchema::DebugString() const {
  std::string out = tessera::StrCat("table ", name, " {");
  bool first = true;
  for (const auto& [family, schema] : families) {
    out += tessera::StrCat(first ? " " : ", ", family, ": ", schema.gc_rule.ToString(),
                           schema.in_memory ? " in_memory" : "",
                           schema.super_columns ? " super_columns" : "",
                           schema.time_sorted ? " time_sorted" : "");
    first = false;
  }
  out += first ? "}" : " }";
  return out;
}

}  // namespace tessera::model
