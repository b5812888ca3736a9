// What a data call needs of a principal with `tessera serve --auth` (docs/auth.md, "What each
// call needs"), and the check. The unit of access control is the column family (Bigtable §6):
// a call needs its permission on each family it can read or write. A call that needs more than
// the principal holds is refused whole (one MutateRows entry alone), never trimmed to what the
// principal may see.
//
// Thread-safety: pure functions; AccessControl is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "google/bigtable/v2/data.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/model/row_filter.h"
#include "tessera/rpc/server.h"
#include "tessera/server/access_control.h"

namespace tessera::server {

struct FamilyNeeds {
  enum class Scope {
    kFamilies,     // the families listed
    kEveryFamily,  // every family the table has (a read whose filter does not narrow them)
    kTable,        // the table itself (a grant on one family is not enough: DeleteFromRow,
                   // SampleRowKeys)
  };
  Scope scope = Scope::kFamilies;
  std::vector<std::string> families;  // kFamilies: sorted, distinct
};

// The families some mutations write; kTable when one deletes the whole row.
FamilyNeeds MutationFamilies(
    const google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>& mutations);
// The families a read can return through `filter` (null: no filter), from its pushdown.
FamilyNeeds FilterFamilies(const model::RowFilter* filter);
// The two together (CheckAndMutateRow's mutation lists).
FamilyNeeds Union(FamilyNeeds a, const FamilyNeeds& b);

// OK when the call's principal holds `permission` on what `needs` names of `table`;
// PermissionDenied naming the principal, the permission and the first resource it lacks
// (audited). OK at once when `access` is null (no --auth).
Status AuthorizeData(const AccessControl* access, const rpc::ServerContext& context,
                     const catalog::TableInfo& table, Permission permission,
                     const FamilyNeeds& needs);

}  // namespace tessera::server
