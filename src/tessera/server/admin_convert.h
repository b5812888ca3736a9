// Conversions between the table-admin protos (google.bigtable.admin.v2) and Tessera's schema
// (model::TableSchema; GC rules through model/gc_rule_proto.h). Validation that belongs to the
// wire format happens here, with InvalidArgument messages naming the family.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "google/bigtable/admin/v2/table.pb.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/model/gc_rule.h"
#include "tessera/model/gc_rule_proto.h"
#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::server {

namespace admin = ::google::bigtable::admin::v2;

// GC rules convert in model/gc_rule_proto.h (the shell uses the same functions).
using model::GcRuleFromProto;
using model::GcRuleToProto;
using model::kMaxGcRuleBytes;

// A new family from a create modification or from CreateTable's table.column_families.
// value_type (aggregate families) is not supported: Unimplemented naming the family.
StatusOr<model::FamilySchema> FamilyFromProto(const admin::ColumnFamily& proto,
                                              std::string_view family);
admin::ColumnFamily FamilyToProto(const model::FamilySchema& family);

// The Table message of `info` as `view` shows it (VIEW_UNSPECIFIED = SCHEMA_VIEW); the FULL
// view adds the table's tessera_options (none for a table made before they existed).
admin::Table TableToProto(const catalog::TableInfo& info, admin::Table::View view);

}  // namespace tessera::server
