// GC rules on the wire: google.bigtable.admin.v2.GcRule <-> model::GcRule, for every side that
// speaks the table-admin API (the server's admin service, the shell). Validation that belongs
// to the wire format (nesting depth, size, a negative or zero max_age, max_num_versions < 1)
// happens here, with InvalidArgument messages naming the family.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "google/bigtable/admin/v2/table.pb.h"
#include "tessera/model/gc_rule.h"
#include "tessera/util/status.h"

namespace tessera::model {

// Bigtable's limit on a serialized GcRule.
inline constexpr size_t kMaxGcRuleBytes = 500;

// `family` names the family in error messages. An unset rule (or a union/intersection member
// with no rule) is "keep everything". The result has passed GcRule::Validate().
StatusOr<GcRule> GcRuleFromProto(const ::google::bigtable::admin::v2::GcRule& proto,
                                 std::string_view family);
// An empty union or intersection stays one (its oneof case is set).
::google::bigtable::admin::v2::GcRule GcRuleToProto(const GcRule& rule);

}  // namespace tessera::model
