// TabletDescriptor encoding (stored opaque in the manifest):
//   descriptor := format(1 byte = 0x01) lp(table) lp(start_row) lp(end_row) lp(schema)
// where lp(x) is a varint32 length followed by the bytes and `schema` is
// model::TableSchema::Encode() (a descriptor written before drop marks moved to the tablet holds
// a schema of format 0x02, with the marks).
#include "tessera/tablet/engine.h"
#include "tessera/util/coding.h"

namespace tessera::tablet {

namespace {
constexpr char kDescriptorFormat = 0x01;
}

std::optional<CompactionStyle> ParseCompactionStyle(std::string_view name) {
  if (name == "leveled") return CompactionStyle::kLeveled;
  if (name == "size_tiered") return CompactionStyle::kSizeTiered;
  return std::nullopt;
}

std::string_view CompactionStyleName(CompactionStyle style) {
  return style == CompactionStyle::kLeveled ? "leveled" : "size_tiered";
}

std::string TabletDescriptor::Encode() const {
  std::string out;
  out.push_back(kDescriptorFormat);
  PutLengthPrefixed(&out, table);
  PutLengthPrefixed(&out, start_row);
  PutLengthPrefixed(&out, end_row);
  PutLengthPrefixed(&out, schema.Encode());
  return out;
}

StatusOr<TabletDescriptor> TabletDescriptor::Decode(std::string_view encoded,
                                                    DropMarks* legacy_drop_marks) {
  std::string_view in = encoded;
  if (in.empty() || in[0] != kDescriptorFormat) {
    return absl::DataLossError("tablet descriptor: unknown format");
  }
  in.remove_prefix(1);
  std::string_view table, start, end, schema;
  if (!GetLengthPrefixed(&in, &table) || !GetLengthPrefixed(&in, &start) ||
      !GetLengthPrefixed(&in, &end) || !GetLengthPrefixed(&in, &schema) || !in.empty()) {
    return absl::DataLossError("tablet descriptor: truncated or trailing bytes");
  }
  TabletDescriptor d;
  d.table = std::string(table);
  d.start_row = std::string(start);
  d.end_row = std::string(end);
  ASSIGN_OR_RETURN(d.schema, model::TableSchema::Decode(schema, legacy_drop_marks));
  return d;
}

}  // namespace tessera::tablet
